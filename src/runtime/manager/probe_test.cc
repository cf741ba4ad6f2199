// The kernel probe on a clock the test moves: each task of the step timed once, in the plan's
// order, a chain scaled by its length, and nothing once the lease or the budget says stop.
#include "runtime/manager/probe.h"

#include <gtest/gtest.h>

#include "acan/job.h"
#include "nn/model.h"
#include "runtime/testing/manual_env.h"

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

struct Probed {
  std::vector<std::string> keys;
  std::vector<std::chrono::nanoseconds> took;
};

Probed Probe(
    const std::string& strategy, int64_t task_size, const Env& env, Clock::time_point budget_end,
    std::function<bool()> keep_going = [] { return true; }) {
  auto job = ParseJobString("[data]\nsamples = 8\n[partition]\nstrategy = \"" + strategy +
                            "\"\ntask_size = " + std::to_string(task_size) + "\n");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  nn::Dataset data = nn::LoadDataset(*job).value();
  nn::Plan plan = nn::Plan::Create(*job, task_size, data.rows).value();
  nn::Batcher batcher(&data, nn::Plan::StepBatch(*job, task_size, data.rows), false, 1);
  std::unordered_map<std::string, std::vector<float>> state;
  for (auto& [key, tensor] : plan.InitialState(*nn::InitialModel(*job))) state[key] = tensor;
  Probed p;
  ProbeStep(plan, 0, batcher.Get(0), state, env, budget_end, keep_going,
            [&](const nn::TaskSpec& t, std::chrono::nanoseconds took) {
              p.keys.push_back(t.key);
              p.took.push_back(took);
            });
  return p;
}

TEST(ProbeTest, EachTaskOfTheStepIsTimedOnceInThePlansOrder) {
  ManualEnv env;
  env.set_task_time(3ms);
  Probed p = Probe("tiles", 11, env, env.Now() + 1h);
  auto job =
      ParseJobString("[data]\nsamples = 8\n[partition]\nstrategy = \"tiles\"\ntask_size = 11\n");
  std::vector<std::string> want;
  for (const nn::TaskSpec& t : nn::Plan::Create(*job, 11, 8)->StepTasks(0, 1))
    want.push_back(t.key);
  EXPECT_EQ(p.keys, want);
  for (auto took : p.took) EXPECT_EQ(took, 3ms);
}

TEST(ProbeTest, AChainIsTimedOnItsFirstMiniBatchAndScaledByItsLength) {
  ManualEnv env;
  env.set_task_time(2ms);
  Probed p = Probe("chain", 4, env, env.Now() + 1h);
  ASSERT_EQ(p.keys.size(), 1u);
  EXPECT_EQ(p.took[0], 8ms);  // 4 steps of 2 ms
}

TEST(ProbeTest, NothingIsTimedPastTheBudgetOrWithoutTheLease) {
  ManualEnv env;
  env.set_task_time(3ms);
  EXPECT_TRUE(Probe("tiles", 11, env, env.Now()).keys.empty());
  EXPECT_TRUE(Probe("tiles", 11, env, env.Now() + 1h, [] { return false; }).keys.empty());
  // A budget of 10 ms: the fourth task starts at 9 ms, the fifth would start at 12.
  EXPECT_EQ(Probe("tiles", 11, env, env.Now() + 10ms).keys.size(), 4u);
}

}  // namespace
}  // namespace acan::runtime
