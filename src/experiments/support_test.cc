// The experiments' shared figures and claims (support.h) and the registry (experiment.h), with
// no run: the experiments themselves are the experiment tests (tests/e2e/experiment.sh).
#include "experiments/support.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "experiments/experiment.h"

namespace acan::experiments {
namespace {

TEST(ExperimentSupportTest, MedianSpreadAndCorrelation) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Cv({5}), 0);
  EXPECT_NEAR(Cv({1, 3}), std::sqrt(2.0) / 2, 1e-12);  // sd sqrt(2) over mean 2
  EXPECT_NEAR(Pearson({1, 2, 3, 4}, {2, 4, 6, 8}), 1, 1e-12);
  EXPECT_NEAR(Pearson({1, 2, 3, 4}, {8, 6, 4, 2}), -1, 1e-12);
  EXPECT_EQ(Pearson({1, 2}, {1, 2}), 0);  // fewer than 3
  EXPECT_EQ(Pearson({1, 1, 1}, {1, 2, 3}), 0);
}

TEST(ExperimentSupportTest, SteadyThroughputLeavesOutTheFirstQuarter) {
  std::vector<runtime::MetricsRow> rows(5);
  const double rates[] = {0, 1000, 100, 100, 100};  // a fast start, then steady
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].t_s = double(i);
    rows[i].samples_per_s = rates[i];
  }
  EXPECT_DOUBLE_EQ(SteadySamplesPerS(rows), 100);
  EXPECT_EQ(SteadySamplesPerS({rows[0]}), 0);
}

TEST(ExperimentSupportTest, CheckpointRestartIsYoungsOptimum) {
  // A checkpoint of 2 steps, crashes every 100 steps of 3 processes: M = 100/3 steps between
  // failures, C = sqrt(2 x 2 x M), restarts of 5 steps.
  const CheckpointRestart c = ScoreCheckpointRestart(0.02, 0.05, 0.01, 100, 3);
  const double m = 100.0 / 3, every = std::sqrt(2 * 2 * m);
  EXPECT_NEAR(c.every_steps, every, 1e-9);
  EXPECT_NEAR(c.extra, every / 2 / m + 2 / every + 5 / m, 1e-9);
  EXPECT_EQ(c.ToJson()["extra_compute_ratio"], c.extra);
  // Nothing to score without steps or processes.
  EXPECT_EQ(ScoreCheckpointRestart(0.02, 0.05, 0, 100, 3).extra, 0);
  EXPECT_EQ(ScoreCheckpointRestart(0.02, 0.05, 0.01, 100, 0).extra, 0);
}

TEST(ExperimentSupportTest, ClaimsGoToExperimentJsonAndTheExitCode) {
  const std::string dir = ::testing::TempDir() + "/experiment_support_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  Claims claims;
  claims.Add("a", true, 0.5, "<= 1", "the baseline", "a holds");
  EXPECT_TRUE(claims.all_hold());
  EXPECT_EQ(Finish(dir, {{"experiment", "test"}}, claims).value(), 0);
  claims.Add("b", false, 2, "<= 1", "the baseline", "b does not");
  EXPECT_EQ(Finish(dir, {{"experiment", "test"}}, claims).value(), 1);
  std::ifstream in(dir + "/experiment.json");
  const nlohmann::json written = nlohmann::json::parse(in);
  EXPECT_EQ(written["experiment"], "test");
  EXPECT_EQ(written["claims_hold"], false);
  ASSERT_EQ(written["claims"].size(), 2u);
  EXPECT_EQ(written["claims"][1], nlohmann::json({{"name", "b"},
                                                  {"figure", 2},
                                                  {"goal", "<= 1"},
                                                  {"baseline", "the baseline"},
                                                  {"holds", false}}));
  std::filesystem::remove_all(dir);
  const auto unwritable = Finish(dir + "/missing/folder", {}, claims);
  EXPECT_EQ(unwritable.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(unwritable.status().message().find("experiment.json"), std::string::npos);
}

TEST(ExperimentRegistryTest, TheNotesExperimentsInItsOrder) {
  std::vector<std::string> names;
  for (const Experiment& e : Experiments()) {
    names.emplace_back(e.name);
    EXPECT_EQ(FindExperiment(e.name), &e);
    EXPECT_NE(e.run, nullptr);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"feasibility", "adaptivity", "robustness"}));
  EXPECT_EQ(FindExperiment("speed"), nullptr);
}

}  // namespace
}  // namespace acan::experiments
