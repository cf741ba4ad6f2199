// A step's dataflow against an independent walk of the plan: running tasks as they become ready,
// every task of every strategy becomes ready exactly once, and only after every tensor it reads
// exists (an input of the step, or an output of a task run before it).
#include "runtime/core/dataflow.h"

#include <gtest/gtest.h>

#include <deque>
#include <set>

#include "acan/job.h"

namespace acan::runtime {
namespace {

nn::Plan PlanFor(const std::string& strategy, int64_t task_size) {
  auto job = ParseJobString(
      "[model]\nlayers = [12, 8, 3]\n[train]\nbatch = 4\n[partition]\n"
      "strategy = \"" +
      strategy + "\"\ntask_size = " + std::to_string(task_size) + "\n");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return nn::Plan::Create(*job, task_size, 16).value();
}

TEST(DataflowTest, EveryTaskBecomesReadyOnceAndOnlyAfterWhatItReadsExists) {
  for (auto [strategy, size] : {std::pair{"tiles", 4}, std::pair{"data", 2},
                                std::pair{"pipeline", 2}, std::pair{"chain", 2}}) {
    SCOPED_TRACE(strategy);
    const nn::Plan plan = PlanFor(strategy, size);
    const int64_t step = 3, rows = 4;
    std::vector<std::string> inputs;
    std::vector<float> x(rows * 12), t(rows * 3);
    for (const auto& [key, tensor] : plan.StepInputs(step, rows, x, t)) inputs.push_back(key);
    StepFlow st = StepFlow::Build(&plan, step, rows, inputs);
    ASSERT_EQ(st.tasks.size(), plan.StepTasks(step, rows).size());
    EXPECT_EQ(st.inputs, inputs);
    std::set<std::string> exists(inputs.begin(), inputs.end());
    std::deque<size_t> ready;
    for (size_t i = 0; i < st.tasks.size(); ++i) {
      if (st.tasks[i].missing == 0) ready.push_back(i);
      EXPECT_FALSE(st.tasks[i].encoded_spec.empty());
      EXPECT_GT(st.tasks[i].work, 0);
    }
    std::vector<int> times_ready(st.tasks.size(), 0);
    while (!ready.empty()) {
      const size_t i = ready.front();
      ready.pop_front();
      ++times_ready[i];
      for (const std::string& in : st.tasks[i].spec.inputs) {
        EXPECT_TRUE(nn::Plan::IsStateKey(in) || exists.count(in))
            << st.tasks[i].spec.key << " is ready before " << in << " exists";
      }
      for (const std::string& out : st.tasks[i].spec.outputs) {  // the task ran
        if (nn::Plan::IsStateKey(out)) continue;
        exists.insert(out);
        for (size_t j : st.Provide(out)) ready.push_back(j);
        EXPECT_TRUE(st.Provide(out).empty());  // a duplicate output unblocks nothing
      }
    }
    for (size_t i = 0; i < st.tasks.size(); ++i) {
      EXPECT_EQ(times_ready[i], 1) << st.tasks[i].spec.key;
    }
  }
}

TEST(DataflowTest, ACleanUpViewNeedsNoEncodedSpecs) {
  const nn::Plan plan = PlanFor("tiles", 4);
  StepFlow st = StepFlow::Build(&plan, 0, 4, {}, /*encode=*/false);
  ASSERT_FALSE(st.tasks.empty());
  for (const StepTask& t : st.tasks) EXPECT_TRUE(t.encoded_spec.empty());
}

}  // namespace
}  // namespace acan::runtime
