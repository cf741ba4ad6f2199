// The streamed model functions against their in-memory counterparts (ModelSha256, SaveModel,
// Evaluate), through a reader that checks that no call asks for more than a band of rows.
#include "nn/model_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

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

}  // namespace
}  // namespace acan::nn
