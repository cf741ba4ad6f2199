#include "runtime/state/step_cleanup.h"

#include <gtest/gtest.h>

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

// Everything a step can leave in the space goes, and nothing of the next step.
TEST(StepCleanupTest, RemoveStepClearsItsTuplesAndNoOtherSteps) {
  const nn::Plan plan = PlanFor("data", 2);
  const Layout layout("job");
  auto space = OpenSpace("mem:").value();
  std::vector<StepFlow> steps;
  for (int64_t step : {3, 4}) {
    std::vector<std::string> inputs;
    std::vector<float> x(4 * 12), t(4 * 3);
    for (const auto& [key, tensor] : plan.StepInputs(step, 4, x, t)) inputs.push_back(key);
    steps.push_back(StepFlow::Build(&plan, step, 4, inputs));
    const StepFlow& st = steps.back();
    ASSERT_TRUE(space->Put(layout.StepOpen(step), Value()).ok());
    for (const std::string& in : st.inputs)
      ASSERT_TRUE(space->Put(layout.Tensor(in), Value()).ok());
    for (const StepTask& task : st.tasks) {
      ASSERT_TRUE(space->Put(layout.Task(task.spec.type, task.spec.key), Value()).ok());
      ASSERT_TRUE(space->Put(layout.Claim(task.spec.key, 0), Value()).ok());
      ASSERT_TRUE(space->Put(layout.Claim(task.spec.key, 1), Value()).ok());
      for (const std::string& out : task.spec.outputs) {
        ASSERT_TRUE(space->Put(layout.Output(out, step), Value()).ok());
        ASSERT_TRUE(space->Put(layout.Output(out, step), Value()).ok());  // a duplicate's copy
      }
    }
  }
  const size_t before = space->Stats().tuples;
  const size_t of_step_4 = before / 2;
  ASSERT_EQ(before, 2 * of_step_4);
  ASSERT_TRUE(RemoveStep(space.get(), layout, steps[0]).ok());
  EXPECT_EQ(space->Stats().tuples, of_step_4);
  auto left = space->ReadAll(">");
  ASSERT_TRUE(left.ok());
  for (const Tuple& t : *left) {
    auto parsed = layout.Parse(t.key);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    if (parsed->kind == KeyKind::kState) continue;
    EXPECT_EQ(parsed->step, 4) << t.key.str();
  }
}

}  // namespace
}  // namespace acan::runtime
