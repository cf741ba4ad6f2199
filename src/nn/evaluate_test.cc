// Held-out evaluation: hand-checked figures, the test split of the job file (IDX, CSV,
// fashion-mnist), input scaling, save-and-reload, and a CI-sized Fashion-MNIST run.
#include "nn/evaluate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "nn/dataset.h"
#include "nn/idx.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "nn/trainer.h"

namespace acan::nn {
namespace {

std::string Temp(const std::string& name) { return testing::TempDir() + "/" + name; }

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

std::string Be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// n images of 1 x `pixels`, pixel p of image i = (first + 10 i + p) mod 256; labels i mod 2.
void WriteIdx(const std::string& stem, uint32_t n, uint32_t pixels, int first) {
  std::string img = Be32(0x803) + Be32(n) + Be32(1) + Be32(pixels);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t p = 0; p < pixels; ++p)
      img.push_back(static_cast<char>((first + 10 * i + p) % 256));
  std::string lab = Be32(0x801) + Be32(n);
  for (uint32_t i = 0; i < n; ++i) lab.push_back(static_cast<char>(i % 2));
  Write(stem + "-images.idx", img);
  Write(stem + "-labels.idx", lab);
}

JobConfig ClassifierJob(std::vector<int64_t> layers) {
  JobConfig job;
  job.model.layers = std::move(layers);
  job.model.activation = Activation::kRelu;
  job.model.loss = LossKind::kSoftmaxCrossEntropy;
  return job;
}

// A 2-2 linear model with identity weights: logits = inputs.
TEST(EvaluateTest, HandCheckedLossAccuracyAndPerClass) {
  JobConfig job = ClassifierJob({2, 2});
  Model m;
  m.widths = {2, 2};
  m.weights = {{1, 0, 0, 1}};
  m.biases = {{0, 0}};
  Dataset d;
  d.rows = 4;
  d.features = 2;
  d.target_width = 1;
  d.classification = true;
  d.classes = 2;
  d.x = {1, 0,   // label 0, logits (1, 0): right, loss log(1 + e^-1)
         0, 1,   // label 1, logits (0, 1): right, loss log(1 + e^-1)
         2, 0,   // label 1, logits (2, 0): wrong, loss log(e^2 + 1)
         0, 0};  // label 0, a tie: argmax takes the first class, right, loss log 2
  d.y = {0, 1, 1, 0};
  Result<EvalReport> r = Evaluate(m, d, job);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const double expected =
      (2 * std::log(1 + std::exp(-1.0)) + std::log(std::exp(2.0) + 1) + std::log(2.0)) / 4;
  EXPECT_NEAR(r->loss, expected, 1e-6);
  EXPECT_EQ(r->rows, 4);
  EXPECT_DOUBLE_EQ(r->accuracy, 0.75);
  EXPECT_EQ(r->per_class_accuracy, (std::vector<double>{1.0, 0.5}));
  EXPECT_EQ(r->class_rows, (std::vector<int64_t>{2, 2}));
  const std::string text = FormatEvalReport(*r, "test", {"zero", "one"});
  EXPECT_NE(text.find("test_accuracy 0.7500"), std::string::npos) << text;
  EXPECT_NE(text.find("class  1 one  0.5000  (2 rows)"), std::string::npos) << text;
}

TEST(EvaluateTest, ClassWithoutRowsAndRegression) {
  JobConfig job = ClassifierJob({2, 3});
  Model m = *InitModel({2, 3}, "zeros", 1);
  Dataset d;
  d.rows = 2;
  d.features = 2;
  d.target_width = 1;
  d.classification = true;
  d.classes = 2;
  d.x = {1, 2, 3, 4};
  d.y = {0, 1};
  Result<EvalReport> r = Evaluate(m, d, job);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->loss, std::log(3.0), 1e-6);  // uniform over three classes
  EXPECT_EQ(r->class_rows, (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(r->per_class_accuracy, (std::vector<double>{1.0, 0.0, 0.0}));  // all-zero logits: 0

  JobConfig reg;
  reg.model.layers = {1, 1};
  reg.model.loss = LossKind::kMse;
  Model lin = *InitModel({1, 1}, "zeros", 1);
  lin.weights[0][0] = 2;
  Dataset rd;
  rd.rows = 2;
  rd.features = 1;
  rd.target_width = 1;
  rd.x = {1, 2};
  rd.y = {2, 3};  // predictions 2, 4: losses 0 and 1/2
  Result<EvalReport> rr = Evaluate(lin, rd, reg);
  ASSERT_TRUE(rr.ok());
  EXPECT_NEAR(rr->loss, 0.25, 1e-9);
  EXPECT_TRUE(rr->per_class_accuracy.empty());
}

TEST(TestSplitTest, IdxTestSplitLoadsScaledAndLimited) {
  WriteIdx(Temp("tr"), 6, 4, 0);
  WriteIdx(Temp("te"), 5, 4, 3);
  Result<JobConfig> job = ParseJobString(R"(
[model]
layers = [4, 2]
loss = "softmax_cross_entropy"
[data]
source = "idx"
images = "tr-images.idx"
labels = "tr-labels.idx"
test_images = "te-images.idx"
test_labels = "te-labels.idx"
test_limit = 3
)");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  job->base_dir = testing::TempDir();
  EXPECT_EQ(job->data.EffectiveScale(), InputScale::kUnit);
  Result<std::optional<Dataset>> test = LoadTestDataset(*job);
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  ASSERT_TRUE(test->has_value());
  const Dataset& t = **test;
  EXPECT_EQ(t.rows, 3);
  EXPECT_EQ(t.features, 4);
  EXPECT_TRUE(t.classification);
  EXPECT_FLOAT_EQ(t.x[0], 3 / 255.0f);
  EXPECT_FLOAT_EQ(t.x[4 + 1], 14 / 255.0f);
  EXPECT_EQ(t.y, (std::vector<float>{0, 1, 0}));

  job->data.scale = InputScale::kNone;
  EXPECT_FLOAT_EQ((*LoadTestDataset(*job))->x[4 + 1], 14);

  // Standardisation uses the training rows' statistics, for both splits.
  job->data.scale = InputScale::kUnit;
  job->data.standardize = true;
  Result<Dataset> train = LoadDataset(*job);
  ASSERT_TRUE(train.ok());
  ASSERT_EQ(train->feature_mean.size(), 4u);
  // Training pixel 0 is 0, 10, ..., 50 over 255: mean 25/255, population std sqrt(1750 / 6)/255.
  EXPECT_NEAR(train->feature_mean[0], 25 / 255.0, 1e-6);
  EXPECT_NEAR(train->feature_std[0], std::sqrt(1750.0 / 6) / 255, 1e-6);
  double sum = 0;
  for (int64_t r = 0; r < train->rows; ++r) sum += train->x[r * 4];
  EXPECT_NEAR(sum, 0, 1e-5);
  Result<std::optional<Dataset>> st = LoadTestDataset(*job, *train);
  ASSERT_TRUE(st.ok());
  EXPECT_NEAR((**st).x[0], (3 / 255.0 - 25 / 255.0) / (std::sqrt(1750.0 / 6) / 255), 1e-5);
  Result<std::optional<Dataset>> st2 = LoadTestDataset(*job);  // loads the training set itself
  ASSERT_TRUE(st2.ok());
  EXPECT_EQ((**st2).x, (**st).x);
}

TEST(TestSplitTest, NoSplitIsNulloptAndCsvSplitLoads) {
  JobConfig job = ClassifierJob({2, 2});
  job.data.source = DataSource::kSynthetic;
  Result<std::optional<Dataset>> none = LoadTestDataset(job);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  Write(Temp("train.csv"), "0,1,0\n1,0,1\n");
  Write(Temp("test.csv"), "1,1,1\n0,0,0\n2,2,1\n");
  job.data.source = DataSource::kCsv;
  job.data.path = Temp("train.csv");
  EXPECT_FALSE(LoadTestDataset(job)->has_value());
  job.data.test_path = Temp("test.csv");
  job.data.test_limit = 2;
  Result<std::optional<Dataset>> csv = LoadTestDataset(job);
  ASSERT_TRUE(csv.ok()) << csv.status().ToString();
  EXPECT_EQ((**csv).rows, 2);
  EXPECT_EQ((**csv).x, (std::vector<float>{1, 1, 0, 0}));  // csv: scale auto = none

  job.data.test_path = Temp("missing.csv");
  Result<std::optional<Dataset>> missing = LoadTestDataset(job);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing.csv"), std::string::npos);
  // A test split whose labels exceed the model's classes names the split.
  Write(Temp("test3.csv"), "1,1,4\n");
  job.data.test_path = Temp("test3.csv");
  Result<std::optional<Dataset>> wide = LoadTestDataset(job);
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("test split"), std::string::npos)
      << wide.status().message();
}

TEST(TestSplitTest, JobFileErrorsNameKeyAndLine) {
  auto error = [](const char* text) {
    Result<JobConfig> j = ParseJobString(text, "job.toml");
    return j.ok() ? std::string("ok") : j.status().message();
  };
  std::string e = error(
      "[model]\nlayers = [4, 2]\nloss = \"softmax_cross_entropy\"\n[data]\nsource = \"idx\"\n"
      "images = \"a\"\nlabels = \"b\"\ntest_images = \"c\"\n");
  EXPECT_NE(e.find("job.toml:8: key \"data.test_images\""), std::string::npos) << e;
  EXPECT_NE(e.find("data.test_labels"), std::string::npos) << e;
  e = error("[data]\nsource = \"synthetic\"\ntest_path = \"t.csv\"\n");
  EXPECT_NE(e.find("job.toml:3: key \"data.test_path\": is not used"), std::string::npos) << e;
  e = error("[data]\nsource = \"fashion-mnist\"\ntest_images = \"t\"\n");
  EXPECT_NE(e.find("t10k"), std::string::npos) << e;
  e = error("[data]\nscale = \"bytes\"\n");
  EXPECT_NE(e.find("job.toml:2: key \"data.scale\""), std::string::npos) << e;
  EXPECT_NE(e.find("auto | none | unit"), std::string::npos) << e;
  e = error("[data]\nstandardize = 1\n");
  EXPECT_NE(e.find("must be true or false"), std::string::npos) << e;
  e = error("[data]\ntest_limit = -1\n");
  EXPECT_NE(e.find("job.toml:2: key \"data.test_limit\""), std::string::npos) << e;
  e = error("[train]\nlr_decay = 1.5\n");
  EXPECT_NE(e.find("job.toml:2: key \"train.lr_decay\""), std::string::npos) << e;
  e = error("[train]\nlr_decay_steps = -3\n");
  EXPECT_NE(e.find("train.lr_decay_steps"), std::string::npos) << e;
}

TEST(LearningRateTest, StepDecayReachesTheUpdateTasks) {
  JobConfig job = ClassifierJob({4, 3, 2});
  job.train.lr = 0.1;
  job.train.momentum = 0.9;
  EXPECT_FLOAT_EQ(job.train.LearningRate(1000), 0.1f);
  job.train.lr_decay = 0.5;
  job.train.lr_decay_steps = 10;
  EXPECT_FLOAT_EQ(job.train.LearningRate(9), 0.1f);
  EXPECT_FLOAT_EQ(job.train.LearningRate(10), 0.05f);
  EXPECT_FLOAT_EQ(job.train.LearningRate(25), 0.025f);
  for (Strategy s : {Strategy::kTiles, Strategy::kData, Strategy::kPipeline}) {
    job.partition.strategy = s;
    Plan plan = *Plan::Create(job);
    int updates = 0;
    for (const TaskSpec& t : plan.StepTasks(20, 4)) {
      if (t.type != TaskType::kUpdate) continue;
      ++updates;
      EXPECT_FLOAT_EQ(t.lr, 0.025f);
    }
    EXPECT_GT(updates, 0);
  }
}

// The accuracy of a model saved and loaded again equals the figure computed before saving.
TEST(EvaluateTest, SavedAndReloadedModelScoresTheSame) {
  JobConfig job = ClassifierJob({6, 8, 3});
  job.data.source = DataSource::kSynthetic;
  job.data.samples = 200;
  job.train.batch = 10;
  job.train.lr = 0.1;
  job.train.epochs = 3;
  Dataset data = *LoadDataset(job);
  auto trainer = *ReferenceTrainer::Create(job, *InitialModel(job), data);
  ASSERT_TRUE(trainer->Train().ok());
  const Model model = trainer->CurrentModel();
  const EvalReport before = *Evaluate(model, data, job);
  EXPECT_GT(before.accuracy, 0.5);
  ASSERT_TRUE(SaveModel(Temp("eval_model.safetensors"), model).ok());
  Result<Model> loaded = LoadModel(Temp("eval_model.safetensors"), job.model.layers);
  ASSERT_TRUE(loaded.ok());
  const EvalReport after = *Evaluate(*loaded, data, job);
  EXPECT_EQ(after.accuracy, before.accuracy);
  EXPECT_EQ(after.loss, before.loss);
  EXPECT_EQ(after.per_class_accuracy, before.per_class_accuracy);
  EXPECT_EQ(trainer->Evaluate()->accuracy, before.accuracy);
}

// CI-sized Fashion-MNIST: the example job on 3000 training and 1000 test images, one epoch.
TEST(FashionMnistEvalTest, OneEpochOnASubsetBeatsChanceByFar) {
  if (!std::filesystem::exists(std::string(kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  Result<JobConfig> job = ParseJobFile(std::string(ACAN_EXAMPLES_DIR) + "/fashion-mnist.toml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->model.layers, (std::vector<int64_t>{784, 256, 128, 64, 10}));
  job->data.limit = 3000;
  job->data.test_limit = 1000;
  job->train.epochs = 1;
  job->train.batch = 32;
  job->partition.task_size = 0;
  Result<Dataset> train = LoadDataset(*job);
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_EQ(train->rows, 3000);
  EXPECT_LE(*std::max_element(train->x.begin(), train->x.end()), 1.0f);  // scaled to [0, 1]
  Result<std::optional<Dataset>> test = LoadTestDataset(*job, *train);
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  ASSERT_TRUE(test->has_value());
  EXPECT_EQ((**test).rows, 1000);
  auto trainer = *ReferenceTrainer::Create(*job, *InitialModel(*job), *train);
  ASSERT_TRUE(trainer->Train().ok());
  Result<EvalReport> r = Evaluate(trainer->CurrentModel(), **test, *job);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->accuracy, 0.6) << "chance is 0.1";
  EXPECT_EQ(r->per_class_accuracy.size(), 10u);
  int64_t rows = 0;
  for (int64_t n : r->class_rows) rows += n;
  EXPECT_EQ(rows, 1000);
}

}  // namespace
}  // namespace acan::nn
