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

TEST(JobTest, MemoryBudgetsAreSizesAndReadBack) {
  Result<JobConfig> job = ParseJobString(
      "[model]\nlayers = [2, 3]\n[runtime]\nhandler_memory = [\"8MiB\", 16777216, \"32M\"]\n"
      "manager_memory = \"1.5GiB\"\n");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->runtime.handler_memory, (std::vector<int64_t>{8 << 20, 16 << 20, 32 << 20}));
  EXPECT_EQ(job->runtime.manager_memory, int64_t{3} << 29);
  Result<JobConfig> again = ParseJobString(ToToml(*job));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->runtime.handler_memory, job->runtime.handler_memory);
  EXPECT_EQ(again->runtime.manager_memory, job->runtime.manager_memory);
  job = ParseJobString("[model]\nlayers = [2, 3]\n[runtime]\nhandler_memory = \"16MiB\"\n");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->runtime.handler_memory, (std::vector<int64_t>{16 << 20}));

  Result<JobConfig> bad = ParseJobString(
      "[model]\nlayers = [2, 3]\n[runtime]\nhandler_memory = \"16 parsecs\"\n", "j.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("j.toml:4"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("runtime.handler_memory"), std::string::npos);
  EXPECT_NE(bad.status().message().find("unknown unit 'parsecs'"), std::string::npos);
  bad = ParseJobString("[model]\nlayers = [2, 3]\n[runtime]\nmanager_memory = -5\n", "j.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("runtime.manager_memory"), std::string::npos);
}

TEST(JobTest, TileBandsAreReadCheckedAndWrittenBack) {
  Result<JobConfig> job = ParseJobString(
      "[model]\nlayers = [2, 3]\n[partition]\nstrategy = \"tiles\"\n"
      "tile_bands = [{edge = 888, share = 1, budget = \"32MiB\"}, {edge = 444, share = 3, "
      "budget = 8388608}]\n");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_EQ(job->partition.tile_bands.size(), 2u);
  EXPECT_EQ(job->partition.tile_bands[0].edge, 888);
  EXPECT_EQ(job->partition.tile_bands[0].budget, int64_t{32} << 20);
  EXPECT_EQ(job->partition.tile_bands[1].share, 3);
  EXPECT_EQ(job->partition.tile_bands[1].budget, int64_t{8} << 20);
  Result<JobConfig> again = ParseJobString(ToToml(*job));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->partition.tile_bands.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(again->partition.tile_bands[i].edge, job->partition.tile_bands[i].edge);
    EXPECT_EQ(again->partition.tile_bands[i].share, job->partition.tile_bands[i].share);
    EXPECT_EQ(again->partition.tile_bands[i].budget, job->partition.tile_bands[i].budget);
  }
  // Each mistake named with its line, its band and what is wrong.
  const std::pair<const char*, const char*> bad[] = {
      {"strategy = \"data\"\ntile_bands = [{edge = 4}]", "strategy = \"tiles\""},
      {"strategy = \"tiles\"\ntile_bands = [{edge = 0}]", "band 0: edge must be >= 1"},
      {"strategy = \"tiles\"\ntile_bands = [{edge = 4}, {edge = 2, share = -1}]",
       "band 1: share must be >= 1"},
      {"strategy = \"tiles\"\ntile_bands = [{edge = 4, size = 2}]", "band 0: unknown key \"size\""},
      {"strategy = \"tiles\"\ntile_bands = [{edge = \"4\"}]", "\"edge\" must be an integer"},
      {"strategy = \"tiles\"\ntile_bands = [{edge = 4, budget = \"8 parsecs\"}]",
       "unknown unit 'parsecs'"},
      {"strategy = \"tiles\"\ntile_bands = [{edge = 4, budget = \"8MiB\"}, {edge = 2}]",
       "every band a budget, or none"},
      {"strategy = \"tiles\"\ntile_bands = [4, 2]", "an array of tables"},
  };
  for (const auto& [text, want] : bad) {
    Result<JobConfig> b =
        ParseJobString(std::string("[model]\nlayers = [2, 3]\n[partition]\n") + text, "j.toml");
    ASSERT_FALSE(b.ok()) << text;
    EXPECT_NE(b.status().message().find("j.toml:"), std::string::npos) << b.status().message();
    EXPECT_NE(b.status().message().find("partition.tile_bands"), std::string::npos)
        << b.status().message();
    EXPECT_NE(b.status().message().find(want), std::string::npos) << b.status().message();
  }
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

// What another process reads back from ToToml is the same job: every field, paths absolute.
TEST(JobTest, ToTomlReadsBackToTheSameJob) {
  auto parsed = ParseJobString(kDesignJob);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  JobConfig job = *parsed;
  job.model.layers = {3, 5, 2};
  job.data.source = DataSource::kCsv;
  job.data.path = "rows.csv";
  job.data.test_path = "/abs/test.csv";
  job.base_dir = "/some/dir";
  job.train.lr = 0.1 + 1e-12;  // needs all 17 digits
  job.train.momentum = 0.9;
  job.train.lr_decay = 0.85;
  job.train.lr_decay_steps = 469;
  job.train.seed = 123456789;
  job.partition.strategy = Strategy::kChain;
  job.partition.task_size = 7;
  job.runtime.space = "nats:local?storage=file";
  job.chaos.speeds = {1, 2.5};
  job.chaos.crash_interval_steps = 3;
  auto back = ParseJobString(ToToml(job), "round-trip");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << ToToml(job);
  EXPECT_EQ(back->model.layers, job.model.layers);
  EXPECT_EQ(back->model.activation, job.model.activation);
  EXPECT_EQ(back->model.loss, job.model.loss);
  EXPECT_EQ(back->model.init, "xavier_uniform");
  EXPECT_EQ(back->data.source, DataSource::kCsv);
  EXPECT_EQ(back->data.path, "/some/dir/rows.csv");
  EXPECT_EQ(back->data.test_path, "/abs/test.csv");
  EXPECT_EQ(back->data.samples, job.data.samples);
  EXPECT_EQ(back->data.shuffle, job.data.shuffle);
  EXPECT_EQ(back->train.epochs, job.train.epochs);
  EXPECT_EQ(back->train.batch, job.train.batch);
  EXPECT_EQ(back->train.lr, job.train.lr);
  EXPECT_EQ(back->train.momentum, job.train.momentum);
  EXPECT_EQ(back->train.lr_decay, job.train.lr_decay);
  EXPECT_EQ(back->train.lr_decay_steps, job.train.lr_decay_steps);
  EXPECT_EQ(back->train.seed, job.train.seed);
  EXPECT_EQ(back->partition.strategy, Strategy::kChain);
  EXPECT_EQ(back->partition.task_size, 7);
  EXPECT_EQ(back->runtime.handlers, job.runtime.handlers);
  EXPECT_EQ(back->runtime.window, job.runtime.window);
  EXPECT_EQ(back->runtime.space, job.runtime.space);
  EXPECT_TRUE(back->chaos.enabled);
  EXPECT_EQ(back->chaos.speeds, job.chaos.speeds);
  EXPECT_EQ(back->chaos.crash_interval_steps, 3);
  EXPECT_EQ(back->chaos.crash_manager, job.chaos.crash_manager);
  job.chaos.enabled = false;
  auto plain = ParseJobString(ToToml(job), "round-trip");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->chaos.enabled);
}

}  // namespace
}  // namespace acan::nn
