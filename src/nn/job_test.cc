#include "acan/job.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace acan::nn {
namespace {

constexpr const char* kDesignJob = R"(
[model]
layers = [44, 44, 1]
activation = "tanh"
loss = "mse"
init = "xavier_uniform"

[data]
source = "synthetic"
samples = 100
shuffle = true

[train]
epochs = 2
batch = 1
lr = 0.05
momentum = 0.0
seed = 42

[partition]
strategy = "tiles"
task_size = 0

[runtime]
handlers = 4
window = 1
space = "mem:"

[chaos]
speeds = [1, 5, 10]
speed_change_s = 5
crash_interval_s = 5
crash_probability = 1.0
crash_manager = true
)";

TEST(JobTest, ParsesTheDesignExample) {
  Result<JobConfig> job = ParseJobString(kDesignJob);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->model.layers, (std::vector<int64_t>{44, 44, 1}));
  EXPECT_EQ(job->model.activation, Activation::kTanh);
  EXPECT_EQ(job->model.loss, LossKind::kMse);
  EXPECT_EQ(job->data.source, DataSource::kSynthetic);
  EXPECT_EQ(job->data.samples, 100);
  EXPECT_EQ(job->train.epochs, 2);
  EXPECT_DOUBLE_EQ(job->train.lr, 0.05);
  EXPECT_EQ(job->train.seed, 42u);
  EXPECT_EQ(job->partition.strategy, Strategy::kTiles);
  EXPECT_EQ(job->runtime.handlers, 4);
  EXPECT_EQ(job->runtime.space, "mem:");
  EXPECT_TRUE(job->chaos.enabled);
  EXPECT_EQ(job->chaos.speeds, (std::vector<double>{1, 5, 10}));
  EXPECT_DOUBLE_EQ(job->chaos.crash_probability, 1.0);
  EXPECT_TRUE(job->chaos.crash_manager);
}

TEST(JobTest, DefaultsWhenSectionsAreMissing) {
  Result<JobConfig> job = ParseJobString("[model]\nlayers = [2, 3]\n");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_FALSE(job->chaos.enabled);
  EXPECT_EQ(job->partition.strategy, Strategy::kData);
  EXPECT_TRUE(job->data.shuffle);
}

TEST(JobTest, UnknownKeyNamesKeyAndLine) {
  Result<JobConfig> job =
      ParseJobString("[model]\nlayers = [2, 3]\n\n[train]\nepochz = 3\n", "j.toml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("j.toml:5"), std::string::npos) << job.status().message();
  EXPECT_NE(job.status().message().find("train.epochz"), std::string::npos);
}

TEST(JobTest, UnknownSectionIsAnError) {
  Result<JobConfig> job = ParseJobString("[modle]\nlayers = [2, 3]\n", "j.toml");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("modle"), std::string::npos);
  EXPECT_NE(job.status().message().find("j.toml:1"), std::string::npos);
}

TEST(JobTest, WrongTypeNamesKeyAndLine) {
  Result<JobConfig> job = ParseJobString("[train]\nepochs = 2\nlr = \"fast\"\n", "j.toml");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("j.toml:3"), std::string::npos) << job.status().message();
  EXPECT_NE(job.status().message().find("train.lr"), std::string::npos);
  EXPECT_NE(job.status().message().find("number"), std::string::npos);

  job = ParseJobString("[model]\nlayers = [2, \"x\"]\n", "j.toml");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("model.layers"), std::string::npos);
  EXPECT_NE(job.status().message().find("j.toml:2"), std::string::npos);
}

TEST(JobTest, BadEnumAndRangeNameTheKey) {
  Result<JobConfig> job = ParseJobString("[model]\nactivation = \"gelu\"\n", "j.toml");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("model.activation"), std::string::npos);
  EXPECT_NE(job.status().message().find("relu"), std::string::npos);
  job = ParseJobString("[train]\nbatch = 0\n", "j.toml");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("j.toml:2"), std::string::npos);
  EXPECT_NE(job.status().message().find("train.batch"), std::string::npos);
  job = ParseJobString("[data]\nsource = \"csv\"\n", "j.toml");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("data.path"), std::string::npos);
}

TEST(JobTest, UnknownInitNamesKeyAndLine) {
  Result<JobConfig> job = ParseJobString("[model]\ninit = \"xavier_unifrom\"\n", "j.toml");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("j.toml:2: key \"model.init\""), std::string::npos)
      << job.status().message();
  EXPECT_TRUE(ParseJobString("[model]\ninit = \"zeros\"\n", "j.toml").ok());
  EXPECT_TRUE(ParseJobString("[model]\ninit = \"start.safetensors\"\n", "j.toml").ok());
}

TEST(JobTest, ChaosIntervalsInSteps) {
  Result<JobConfig> job =
      ParseJobString("[chaos]\ncrash_interval_steps = 8\nspeed_change_steps = 4.5\n", "j.toml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_TRUE(job->chaos.enabled);
  EXPECT_DOUBLE_EQ(job->chaos.crash_interval_steps, 8);
  EXPECT_DOUBLE_EQ(job->chaos.speed_change_steps, 4.5);
  job = ParseJobString("[chaos]\ncrash_interval_steps = -1\n", "j.toml");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("j.toml:2"), std::string::npos);
  EXPECT_NE(job.status().message().find("chaos.crash_interval_steps"), std::string::npos);
}

TEST(JobTest, SyntaxErrorHasLineAndColumn) {
  Result<JobConfig> job = ParseJobString("[model]\nlayers = [2, 3\n", "j.toml");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("j.toml:"), std::string::npos);
  EXPECT_NE(job.status().message().find("syntax"), std::string::npos);
}

TEST(JobTest, ParsesFileAndResolvesRelativePaths) {
  const std::string path = testing::TempDir() + "/acan_job_test.toml";
  {
    std::ofstream f(path);
    f << "[model]\nlayers = [3, 2]\nloss = \"softmax_cross_entropy\"\n[data]\nsource = \"csv\"\n"
         "path = \"train.csv\"\n";
  }
  Result<JobConfig> job = ParseJobFile(path);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->Resolve(job->data.path), testing::TempDir() + "/train.csv");
  EXPECT_EQ(job->Resolve("/abs.csv"), "/abs.csv");
  std::remove(path.c_str());
  EXPECT_TRUE(ParseJobFile(path).status().IsNotFound());
}

TEST(JobTest, AFolderIsNotAnEmptyJob) {
  Result<JobConfig> job = ParseJobFile(testing::TempDir());
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("is a directory"), std::string::npos)
      << job.status().message();
}

TEST(JobTest, ExampleJobFilesParse) {
  for (const char* name :
       {"feasibility.toml", "robustness.toml", "fashion-mnist.toml", "toy-chain.toml"}) {
    Result<JobConfig> job = ParseJobFile(std::string(ACAN_EXAMPLES_DIR) + "/" + name);
    EXPECT_TRUE(job.ok()) << name << ": " << job.status().ToString();
  }
}

}  // namespace
}  // namespace acan::nn
