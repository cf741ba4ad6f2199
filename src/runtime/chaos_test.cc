// Quick chaos runs (label: chaos): handlers and the manager crash every fraction of a second and
// speeds change, yet with window 1 the weights are bitwise those of the reference, the versions
// have no gap and no repeat, and training converges.
#include <gtest/gtest.h>

#include "nn/model.h"
#include "nn/trainer.h"
#include "runtime/job_runner.h"

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

nn::JobConfig Job(const std::string& strategy, int64_t task_size, int64_t samples) {
  auto job = nn::ParseJobString(R"(
[model]
layers = [64, 48, 4]
activation = "tanh"
loss = "softmax_cross_entropy"
[data]
source = "synthetic"
samples = )" + std::to_string(samples) +
                                R"(
[train]
epochs = 2
batch = 16
lr = 0.1
momentum = 0.5
seed = 5
[partition]
strategy = ")" + strategy + R"("
task_size = )" + std::to_string(task_size) +
                                "\n");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return *job;
}

struct Case {
  std::string strategy;
  int64_t task_size;
  int64_t samples = 1536;  // enough steps to last several crash intervals
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.strategy << "/" << c.task_size; }

class ChaosTest : public ::testing::TestWithParam<Case> {};

TEST_P(ChaosTest, CrashesChangeTheCostNeverTheResult) {
  const Case c = GetParam();
  nn::JobConfig job = Job(c.strategy, c.task_size, c.samples);
  nn::Model init = *nn::InitialModel(job);
  nn::Dataset data = *nn::LoadDataset(job);
  auto trainer = *nn::ReferenceTrainer::Create(job, init, data);
  ASSERT_TRUE(trainer->Train().ok());
  const std::string reference = nn::ModelSha256(trainer->CurrentModel());

  RunOptions o;
  o.handlers = 3;
  o.window = 1;
  o.lease = 60ms;
  o.manager_restart_delay = 10ms;
  o.handler_restart_delay = 5ms;
  o.controller.min_timeout = 5ms;
  o.chaos.speeds = {1, 2, 4};
  o.chaos.speed_change_s = 0.05;
  o.chaos.crash_interval_s = 0.05;
  o.chaos.crash_probability = 0.7;
  o.chaos.crash_manager = true;
  o.chaos.seed = 3;
  auto r = RunJob(job, data, init, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(nn::ModelSha256(r->model), reference);
  EXPECT_EQ(r->progress.gaps, 0);
  EXPECT_EQ(r->progress.repeats, 0);
  auto plan = nn::Plan::Create(job);
  EXPECT_EQ(r->progress.versions_applied,
            int64_t(plan->shards().size()) * 2 * r->progress.total_steps);  // weights + velocity
  int64_t handler_crashes = 0;
  for (const auto& h : r->handlers) handler_crashes += h.crashes;
  EXPECT_GT(handler_crashes, 0);
  EXPECT_GT(r->manager_crashes, 0);
  ASSERT_EQ(r->progress.epochs.size(), 2u);
  auto mean = [](const EpochTotals& e) { return e.loss_sum / double(e.rows); };
  EXPECT_LT(mean(r->progress.epochs[1]), mean(r->progress.epochs[0]));
}

// A crashed handler's supervisor announces the death at once, so its claimed tasks go out again
// without waiting for a deadline: with timeouts of an hour the run still finishes, every
// retransmission was caused by a death or restart notice, and nothing else changes.
TEST(ChaosTest, DeathNoticesRetransmitWithoutWaitingForDeadlines) {
  nn::JobConfig job = Job("data", 4, 1536);
  nn::Model init = *nn::InitialModel(job);
  nn::Dataset data = *nn::LoadDataset(job);
  auto trainer = *nn::ReferenceTrainer::Create(job, init, data);
  ASSERT_TRUE(trainer->Train().ok());

  RunOptions o;
  o.handlers = 3;
  o.window = 1;
  o.standby = false;
  o.handler_restart_delay = 5ms;
  o.controller.min_timeout = std::chrono::hours(1);
  o.controller.initial_timeout = std::chrono::hours(1);
  o.controller.max_timeout = std::chrono::hours(1);
  o.chaos.crash_interval_s = 0.03;
  o.chaos.crash_probability = 1.0;
  o.chaos.crash_manager = false;
  o.chaos.seed = 8;
  auto r = RunJob(job, data, init, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(nn::ModelSha256(r->model), nn::ModelSha256(trainer->CurrentModel()));
  int64_t crashes = 0;
  for (const auto& h : r->handlers) crashes += h.crashes;
  EXPECT_GT(crashes, 0);
  for (const auto& [reason, n] : r->progress.retransmit_reasons) {
    EXPECT_TRUE(reason == "handler-died" || reason == "handler-restarted") << reason << ": " << n;
  }
  if (!r->recovery.handler_ms.empty()) {
    // Mostly deaths; a restart notice read first reports the same loss as a restart.
    EXPECT_GT(r->progress.retransmit_reasons["handler-died"] +
                  r->progress.retransmit_reasons["handler-restarted"],
              0);
  }
  // Each lost task is measured against its class: the same task in the other steps.
  ASSERT_EQ(r->recovery.lost_classes.size(), r->recovery.handler_ms.size());
  for (const std::string& c : r->recovery.lost_classes) {
    EXPECT_TRUE(c == "mb.m0" || c == "mb.m1" || c == "mb.m2" || c == "mb.m3" ||
                c.starts_with("upd.l"))
        << c;
    EXPECT_GT(r->recovery.task_ms_by_class.count(c), 0u) << c;
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, ChaosTest,
                         ::testing::Values(Case{"data", 4}, Case{"tiles", 16}, Case{"pipeline", 8},
                                           Case{"chain", 2, 12288}),
                         [](const auto& info) { return info.param.strategy; });

}  // namespace
}  // namespace acan::runtime
