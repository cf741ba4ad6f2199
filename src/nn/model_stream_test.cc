// The streamed model functions against their in-memory counterparts (ModelSha256, SaveModel,
// Evaluate), through a reader that checks that no call asks for more than a band of rows.
#include "nn/model_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "nn/model.h"
#include "nn/rng.h"

namespace acan::nn {
namespace {

constexpr int64_t kBandRows[] = {1, 7, 64, 100000};  // the last is larger than any tensor

std::string Temp(const std::string& name) { return testing::TempDir() + "/" + name; }

std::string FileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// InitModel's weights with random biases (InitModel's are zero), so that a bias read from the
// wrong rows shows.
Model RandomModel(const std::vector<int64_t>& widths) {
  Model m = *InitModel(widths, "xavier_uniform", 3);
  Rng rng(17);
  for (std::vector<float>& b : m.biases)
    for (float& v : b) v = rng.Uniform(-0.5f, 0.5f);
  return m;
}

// The main model, and one of twelve layers, where name order ("layers.10" before "layers.2")
// differs from layer order.
std::vector<Model> TestModels() {
  return {RandomModel({37, 300, 129, 10}), RandomModel({3, 5, 4, 6, 3, 5, 4, 6, 3, 5, 4, 6, 2})};
}

// A BandReader over a model in memory that checks every request against the band size and
// counts what it hands out.
class CheckingReader {
 public:
  CheckingReader(const Model& model, int64_t band_rows) : model_(model), band_rows_(band_rows) {}

  BandReader Reader() {
    return [this](int layer, bool bias, int64_t r0, int64_t r1) -> Result<std::vector<float>> {
      EXPECT_GE(layer, 0);
      EXPECT_LT(layer, model_.NumLayers());
      const int64_t rows = model_.widths[layer + 1];
      const int64_t cols = bias ? 1 : model_.widths[layer];
      EXPECT_TRUE(0 <= r0 && r0 < r1 && r1 <= rows)
          << "layer " << layer << " bias " << bias << " rows [" << r0 << ", " << r1 << ")";
      EXPECT_LE(r1 - r0, band_rows_) << "a read of more than band_rows rows";
      const std::vector<float>& t = bias ? model_.biases[layer] : model_.weights[layer];
      ++calls_;
      values_ += (r1 - r0) * cols;
      return std::vector<float>(t.begin() + r0 * cols, t.begin() + r1 * cols);
    };
  }
  int64_t calls() const { return calls_; }
  int64_t values() const { return values_; }

 private:
  const Model& model_;
  int64_t band_rows_;
  int64_t calls_ = 0;
  int64_t values_ = 0;
};

TEST(ModelStreamTest, Sha256EqualsModelSha256) {
  for (const Model& m : TestModels()) {
    for (int64_t band : kBandRows) {
      CheckingReader reader(m, band);
      Result<std::string> sha = StreamedModelSha256(m.widths, reader.Reader(), band);
      ASSERT_TRUE(sha.ok()) << sha.status().ToString();
      EXPECT_EQ(*sha, ModelSha256(m)) << "band_rows " << band;
      EXPECT_EQ(reader.values(), m.NumParameters()) << "each value read once";
    }
  }
}

TEST(ModelStreamTest, SavedFileHasSaveModelsBytes) {
  int n = 0;
  for (const Model& m : TestModels()) {
    const std::string want = Temp("stream_ref" + std::to_string(n) + ".safetensors");
    ASSERT_TRUE(SaveModel(want, m).ok());
    for (int64_t band : kBandRows) {
      const std::string path =
          Temp("stream" + std::to_string(n) + "_" + std::to_string(band) + ".safetensors");
      CheckingReader reader(m, band);
      Status s = SaveModelStreamed(path, m.widths, reader.Reader(), band);
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(reader.values(), m.NumParameters());
      EXPECT_EQ(FileBytes(path), FileBytes(want)) << "band_rows " << band;
      EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
      Result<Model> back = LoadModel(path, m.widths);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_EQ(back->weights, m.weights);
      EXPECT_EQ(back->biases, m.biases);
    }
    ++n;
  }
}

JobConfig Job(const Model& m, LossKind loss, Activation act) {
  JobConfig job;
  job.model.layers = m.widths;
  job.model.loss = loss;
  job.model.activation = act;
  return job;
}

// Equal to Evaluate's report bitwise only when the products have Evaluate's shapes: a band that
// holds a whole layer and groups of kEvalChunkRows rows. Otherwise the loss differs in its last
// bits (about 1e-9 relative here): with OpenBLAS the order in which an output's K products are
// added depends on the product's M x N shape and the output's place in its tiling, so cutting N
// into bands or M into other groups rounds some outputs differently (K is unchanged; checked for
// every band and group of 1 to 600 rows). Rows, accuracy and class counts stay exact.
void ExpectSameReport(const EvalReport& got, const EvalReport& want, bool same_shapes) {
  EXPECT_EQ(got.rows, want.rows);
  if (same_shapes) {
    EXPECT_EQ(got.loss, want.loss);
  } else {
    EXPECT_NEAR(got.loss, want.loss, 1e-6 * std::abs(want.loss));
  }
  EXPECT_EQ(got.accuracy, want.accuracy);
  EXPECT_EQ(got.per_class_accuracy, want.per_class_accuracy);
  EXPECT_EQ(got.class_rows, want.class_rows);
}

void CheckEvaluation(const Model& m, const Dataset& data, const JobConfig& job) {
  const EvalReport want = *Evaluate(m, data, job);
  const int64_t widest = *std::max_element(m.widths.begin(), m.widths.end());
  for (int64_t band : kBandRows) {
    for (int64_t group : {kEvalChunkRows, int64_t{97}}) {  // both leave a short last group
      SCOPED_TRACE("band_rows " + std::to_string(band) + ", group_rows " + std::to_string(group));
      CheckingReader reader(m, band);
      Result<EvalReport> got = EvaluateStreamed(m.widths, data, job, reader.Reader(), band, group);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ExpectSameReport(*got, want, band >= widest && group == kEvalChunkRows);
      const int64_t groups = (data.rows + group - 1) / group;
      EXPECT_EQ(reader.values(), groups * m.NumParameters()) << "the model once per group";
    }
  }
}

TEST(ModelStreamTest, ClassificationEqualsEvaluate) {
  const Model m = TestModels()[0];
  const Dataset data = MakeSynthetic(600, 37, 10, /*classification=*/true, 11);
  const JobConfig job = Job(m, LossKind::kSoftmaxCrossEntropy, Activation::kRelu);
  ASSERT_GT(Evaluate(m, data, job)->accuracy, 0.0);
  CheckEvaluation(m, data, job);
}

TEST(ModelStreamTest, RegressionEqualsEvaluate) {
  const Model m = TestModels()[0];
  const Dataset data = MakeSynthetic(600, 37, 10, /*classification=*/false, 11);
  CheckEvaluation(m, data, Job(m, LossKind::kMse, Activation::kTanh));
}

// A reader that fails on its `fail_at`-th call (from 1) with Unavailable.
BandReader FailingReader(const Model& m, int fail_at) {
  auto calls = std::make_shared<int>(0);
  return [&m, fail_at, calls](int layer, bool bias, int64_t r0,
                              int64_t r1) -> Result<std::vector<float>> {
    if (++*calls == fail_at) return Status::Unavailable("the weight store is down");
    const std::vector<float>& t = bias ? m.biases[layer] : m.weights[layer];
    const int64_t cols = bias ? 1 : m.widths[layer];
    return std::vector<float>(t.begin() + r0 * cols, t.begin() + r1 * cols);
  };
}

TEST(ModelStreamTest, AReadersErrorIsReturned) {
  const Model m = TestModels()[0];
  const Dataset data = MakeSynthetic(50, 37, 10, true, 11);
  const JobConfig job = Job(m, LossKind::kSoftmaxCrossEntropy, Activation::kRelu);
  auto expect_reader_error = [](const Status& s) {
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_NE(s.message().find("the weight store is down"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("reading layers."), std::string::npos) << s.ToString();
  };
  for (int fail_at : {1, 5}) {
    expect_reader_error(StreamedModelSha256(m.widths, FailingReader(m, fail_at), 64).status());
    expect_reader_error(
        EvaluateStreamed(m.widths, data, job, FailingReader(m, fail_at), 64, 16).status());
    const std::string path = Temp("stream_failed.safetensors");
    Status s = SaveModelStreamed(path, m.widths, FailingReader(m, fail_at), 64);
    expect_reader_error(s);
    EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  }
}

TEST(ModelStreamTest, AShortBandIsDataLoss) {
  const Model m = TestModels()[0];
  BandReader short_band = [&m](int layer, bool bias, int64_t r0,
                               int64_t r1) -> Result<std::vector<float>> {
    return std::vector<float>(bias ? r1 - r0 : (r1 - r0) * m.widths[layer] - 1, 0.0f);
  };
  Result<std::string> sha = StreamedModelSha256(m.widths, short_band, 7);
  ASSERT_FALSE(sha.ok());
  EXPECT_EQ(sha.status().code(), StatusCode::kDataLoss);
  // Name order reads layers.0.bias, whole, before layers.0.weight.
  EXPECT_NE(sha.status().message().find("layers.0.weight rows [0, 7)"), std::string::npos)
      << sha.status().ToString();
  const std::string path = Temp("stream_short.safetensors");
  EXPECT_FALSE(SaveModelStreamed(path, m.widths, short_band, 7).ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(StreamedModelSha256(m.widths, short_band, 0).status().code(),
            StatusCode::kInvalidArgument);
}

// The model cut into tiles of edge x edge (the last ones shorter) and row blocks of its biases,
// as a tiles plan shards it, in an order that is not the file's (layers last to first, columns
// before rows), with a reader that counts each block's reads.
struct Tiles {
  std::vector<ModelBlock> blocks;
  std::map<std::tuple<int, bool, int64_t, int64_t>, int> reads;

  Tiles(const Model& m, int64_t edge) {
    for (int l = m.NumLayers() - 1; l >= 0; --l) {
      const int64_t rows = m.widths[l + 1], cols = m.widths[l];
      for (int64_t c0 = 0; c0 < cols; c0 += edge) {
        for (int64_t r0 = 0; r0 < rows; r0 += edge) {
          blocks.push_back(
              {l, false, r0, std::min(rows, r0 + edge), c0, std::min(cols, c0 + edge)});
        }
      }
      for (int64_t r0 = 0; r0 < rows; r0 += edge) {
        blocks.push_back({l, true, r0, std::min(rows, r0 + edge), 0, 1});
      }
    }
  }
  BlockReader Reader(const Model& m) {
    return [this, &m](const ModelBlock& b) -> Result<std::vector<float>> {
      ++reads[{b.layer, b.bias, b.r0, b.c0}];
      const std::vector<float>& t = b.bias ? m.biases[b.layer] : m.weights[b.layer];
      const int64_t cols = b.bias ? 1 : m.widths[b.layer];
      std::vector<float> out;
      for (int64_t r = b.r0; r < b.r1; ++r) {
        out.insert(out.end(), t.begin() + r * cols + b.c0, t.begin() + r * cols + b.c1);
      }
      return out;
    };
  }
};

TEST(ModelStreamTest, SavedByBlocksHasSaveModelsBytesReadingEachBlockOnce) {
  int n = 0;
  for (const Model& m : TestModels()) {
    const std::string want = Temp("blocks_ref" + std::to_string(n) + ".safetensors");
    ASSERT_TRUE(SaveModel(want, m).ok());
    for (int64_t edge : {1, 4, 5, 64, 1000}) {
      SCOPED_TRACE("model " + std::to_string(n) + ", tiles of " + std::to_string(edge));
      const std::string path = Temp("blocks.safetensors");
      Tiles tiles(m, edge);
      Status s = SaveModelBlocks(path, m.widths, tiles.blocks, tiles.Reader(m));
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(FileBytes(path), FileBytes(want));
      EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
      EXPECT_EQ(tiles.reads.size(), tiles.blocks.size());
      for (const auto& [block, reads] : tiles.reads) EXPECT_EQ(reads, 1);
      // Read back by rows: the hash and the evaluation of the model in memory.
      for (int64_t band : kBandRows) {
        Result<BandReader> rows = ModelFileRows(path, m.widths);
        ASSERT_TRUE(rows.ok()) << rows.status().ToString();
        Result<std::string> sha = StreamedModelSha256(m.widths, *rows, band);
        ASSERT_TRUE(sha.ok()) << sha.status().ToString();
        EXPECT_EQ(*sha, ModelSha256(m));
      }
    }
    ++n;
  }
  const Model m = TestModels()[0];
  const std::string path = Temp("blocks_eval.safetensors");
  ASSERT_TRUE(SaveModel(path, m).ok());
  const Dataset data = MakeSynthetic(300, 37, 10, /*classification=*/true, 11);
  const JobConfig job = Job(m, LossKind::kSoftmaxCrossEntropy, Activation::kRelu);
  Result<BandReader> rows = ModelFileRows(path, m.widths);
  ASSERT_TRUE(rows.ok());
  Result<EvalReport> got = EvaluateStreamed(m.widths, data, job, *rows, 100000, kEvalChunkRows);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectSameReport(*got, *Evaluate(m, data, job), /*same_shapes=*/true);
}

TEST(ModelStreamTest, BlocksThatDoNotCoverTheModelAreRefusedLeavingNoFile) {
  const Model m = TestModels()[0];
  const std::string path = Temp("blocks_bad.safetensors");
  std::filesystem::remove(path);  // left by an earlier run
  auto expect_refused = [&](std::vector<ModelBlock> blocks, const std::string& text) {
    Tiles tiles(m, 64);
    Status s = SaveModelBlocks(path, m.widths, blocks, tiles.Reader(m));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(text), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
    EXPECT_TRUE(tiles.reads.empty()) << "checked before anything is read";
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  };
  std::vector<ModelBlock> blocks = Tiles(m, 64).blocks;
  std::vector<ModelBlock> missing(blocks.begin() + 1, blocks.end());
  expect_refused(missing, "the blocks of layers.2.weight hold");
  std::vector<ModelBlock> outside = blocks;
  outside[0].r1 = 11;  // the first block is of layer 2's weight, which has 10 rows
  expect_refused(outside, "not inside");
  // A reader that returns too little: DataLoss naming the block, and no file.
  Tiles tiles(m, 64);
  BlockReader short_reader = [&](const ModelBlock& b) -> Result<std::vector<float>> {
    auto v = tiles.Reader(m)(b);
    if (b.layer == 0 && !b.bias) v->pop_back();
    return v;
  };
  Status s = SaveModelBlocks(path, m.widths, blocks, short_reader);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("layers.0.weight"), std::string::npos) << s.ToString();
  EXPECT_FALSE(std::filesystem::exists(path));
  // A file that is not the model's: refused by ModelFileRows, naming it.
  ASSERT_TRUE(SaveModel(path, m).ok());
  Result<BandReader> wrong = ModelFileRows(path, {37, 300, 128, 10});
  EXPECT_EQ(wrong.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(wrong.status().message().find(path), std::string::npos);
  EXPECT_EQ(ModelFileRows(Temp("no_such.safetensors"), m.widths).status().code(),
            StatusCode::kNotFound);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace acan::nn
