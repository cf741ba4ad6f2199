// The supervisor's slots on the test's own thread (RunIncarnation instead of Start): a crash is
// announced at once (alive tuple withdrawn, a restart notice), the pouch in hand goes back, the
// task being run is lost and its claim removed once its step is closed, and the next incarnation
// announces itself.
#include "runtime/run/supervisor.h"

#include <gtest/gtest.h>

#include "nn/plan.h"
#include "runtime/core/messages.h"
#include "runtime/state/liveness.h"
#include "space/space_wrapper.h"

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

// Calls `on_take` when a take of tasks returns some.
class TakeHook : public SpaceWrapper {
 public:
  using SpaceWrapper::Put;
  using SpaceWrapper::Read;
  using SpaceWrapper::ReadAll;
  using SpaceWrapper::SpaceWrapper;
  using SpaceWrapper::Take;
  std::function<void()> on_take;
  Result<std::vector<Tuple>> Take(const Pattern& p, size_t n, Deadline d) override {
    auto got = SpaceWrapper::Take(p, n, d);
    if (got.ok() && !got->empty() && p.token_count() > 1 && p.token(1) == "task" && on_take) {
      on_take();
    }
    return got;
  }
};

// Crashes the slot while its task's kernel runs.
class CrashingKernel : public EnvWrapper {
 public:
  CrashingKernel() : EnvWrapper(Env::Default()) {}
  HandlerSlot* slot = nullptr;
  Status ExecuteTask(const nn::TaskSpec& spec, std::span<const std::span<const float>> in,
                     std::vector<std::vector<float>>* out,
                     const TaskRunContext& ctx) const override {
    if (slot) slot->Crash();
    return target()->ExecuteTask(spec, in, out, ctx);
  }
};

struct SupervisorTest : ::testing::Test {
  void SetUp() override {
    inner = std::move(OpenSpace("mem:").value());
    hook = std::make_unique<TakeHook>(inner.get());
    space = hook.get();
  }
  // The first task of a step of the note's toy in data partition (a micro-batch), its inputs
  // put as placeholders: a kernel would refuse them, but a crashed handler never gets that far.
  static nn::TaskSpec Spec(int64_t step) {
    JobConfig job = *ParseJobString("[partition]\nstrategy = \"data\"\n");
    return nn::Plan::Create(job)->StepTasks(step, 1).front();
  }
  Value Task(int64_t step) {
    std::vector<std::string> keys;
    for (const std::string& in : Spec(step).inputs) {
      Key k = nn::Plan::IsStateKey(in) ? layout.State(in, 0) : layout.Tensor(in);
      EXPECT_TRUE(space->Put(k, Value::FromVector(std::vector<float>{0})).ok());
      keys.push_back(k.str());
    }
    return EncodeTaskMessage(1, keys, nn::EncodeTask(Spec(step)));
  }
  Key TaskKey(int64_t step) { return layout.Task(Spec(step).type, Spec(step).key); }
  std::string ClaimsOf(int64_t step) { return Spec(step).key; }
  int64_t AliveIncarnation(int h) {
    auto alive = space->Read(layout.Alive(h));
    return alive.ok() && alive->has_value() ? (*alive)->value.As<int64_t>()[0] : -1;
  }

  Layout layout{"job"};
  std::unique_ptr<Space> inner;
  std::unique_ptr<TakeHook> hook;
  Space* space = nullptr;
  RunOptions run;
  Telemetry telemetry;
};

TEST_F(SupervisorTest, ACrashedHandlerIsAnnouncedDeadItsPouchGoesBackAndItComesBackAsANewOne) {
  HandlerSettings ho;
  ho.id = 4;
  HandlerSlot slot(space, layout, ho, run, &telemetry);
  ASSERT_TRUE(space->Put(TaskKey(0), Task(0)).ok());
  // The first take crashes it: what the take returned goes back untouched.
  hook->on_take = [&] {
    EXPECT_EQ(AliveIncarnation(4), 1);
    slot.Crash();
  };
  EXPECT_TRUE(slot.RunIncarnation());
  EXPECT_EQ(slot.stats().crashes.load(), 1);
  EXPECT_EQ(slot.stats().tasks.load(), 0);
  EXPECT_EQ(AliveIncarnation(4), -1);                              // withdrawn at once
  EXPECT_TRUE(space->Read(layout.RestartNotice(4))->has_value());  // the manager is told
  EXPECT_TRUE(space->Read(TaskKey(0))->has_value());               // back for the others
  // The next incarnation announces itself; stopping the slot ends it.
  hook->on_take = [&] {
    EXPECT_EQ(AliveIncarnation(4), 2);
    slot.Stop();
  };
  EXPECT_FALSE(slot.RunIncarnation());
  EXPECT_EQ(slot.incarnation(), 2);
  EXPECT_EQ(space->ReadAll(layout.RestartNotice(4))->size(), 1u);  // one notice at most
  EXPECT_TRUE(space->Read(TaskKey(0))->has_value());
  EXPECT_FALSE(slot.RunIncarnation());  // stopped for good
}

TEST_F(SupervisorTest, ATaskLostMidRunLeavesNoClaimOnAClosedStepButKeepsOneOnAnOpenOne) {
  CrashingKernel kernel;
  HandlerSettings ho;
  ho.id = 1;
  HandlerSlot slot(space, layout, ho, run, &telemetry, &kernel);
  kernel.slot = &slot;
  ASSERT_TRUE(space->Put(layout.StepOpen(1), Value()).ok());  // step 1 open, step 0 closed
  ASSERT_TRUE(space->Put(TaskKey(0), Task(0)).ok());
  EXPECT_TRUE(slot.RunIncarnation());  // takes step 0's task, crashes in its kernel
  EXPECT_EQ(slot.stats().crashes.load(), 1);
  EXPECT_FALSE(space->Read(TaskKey(0))->has_value());  // lost, not put back
  EXPECT_TRUE(space->ReadAll(layout.ClaimPattern(ClaimsOf(0)))->empty());
  ASSERT_TRUE(space->Put(TaskKey(1), Task(1)).ok());
  EXPECT_TRUE(slot.RunIncarnation());
  // Step 1 is open: its clean-up will remove the claim; the manager sees it as stale meanwhile.
  EXPECT_EQ(space->ReadAll(layout.ClaimPattern(ClaimsOf(1)))->size(), 1u);
  // The lost tasks are timed from the crash to their redo's report.
  EXPECT_EQ(telemetry.recovery().lost_tasks, 2);
  EXPECT_EQ(telemetry.recovery().lost_not_redone, 2);
  telemetry.OnReported(Spec(0).key, 1000, 1.0);
  telemetry.OnReported(Spec(1).key, 1000, 1.0);
  EXPECT_EQ(telemetry.recovery().handler_ms.size(), 2u);
  EXPECT_EQ(telemetry.recovery().lost_not_redone, 0);
}

// Runs `on_kernel` when a task's kernel begins.
class KernelHook : public EnvWrapper {
 public:
  KernelHook() : EnvWrapper(Env::Default()) {}
  std::function<void()> on_kernel;
  Status ExecuteTask(const nn::TaskSpec& spec, std::span<const std::span<const float>> in,
                     std::vector<std::vector<float>>* out,
                     const TaskRunContext& ctx) const override {
    if (on_kernel) on_kernel();
    return target()->ExecuteTask(spec, in, out, ctx);
  }
};

// A pouch of three: while the first task runs, the two behind it are claimed (held, not lost, for
// a manager whose deadline passes meanwhile); when the handler dies, they go back unclaimed. (Their
// messages say no deadline: a task whose deadline is far off is claimed only when it starts.)
TEST_F(SupervisorTest, EveryTaskOfAPouchIsClaimedWhenItIsTaken) {
  KernelHook kernel;
  HandlerSettings ho;
  ho.id = 2;
  const std::atomic<int> pouch{3};
  ho.pouch = &pouch;
  HandlerSlot slot(space, layout, ho, run, &telemetry, &kernel);
  for (int64_t step = 0; step < 3; ++step) {
    ASSERT_TRUE(space->Put(layout.StepOpen(step), Value()).ok());
    ASSERT_TRUE(space->Put(TaskKey(step), Task(step)).ok());
  }
  Liveness liveness(space, &layout, Env::Default());
  std::vector<ClaimState> behind;
  kernel.on_kernel = [&] {
    for (int64_t step = 1; step < 3; ++step)
      behind.push_back(liveness.ClaimOf(Spec(step).key).value());
    slot.Crash();
  };
  EXPECT_TRUE(slot.RunIncarnation());
  EXPECT_EQ(behind, (std::vector<ClaimState>{ClaimState::kAlive, ClaimState::kAlive}));
  for (int64_t step = 1; step < 3; ++step) {
    EXPECT_TRUE(space->Read(TaskKey(step))->has_value()) << "step " << step << " back";
    EXPECT_TRUE(space->ReadAll(layout.ClaimPattern(ClaimsOf(step)))->empty()) << "step " << step;
  }
}

TEST(RunEndTest, APokeWakesTheWaiterAndTheEndIsFinal) {
  RunEnd end;
  end.Poke();
  EXPECT_FALSE(end.WaitUntil(Clock::now() + 10s));  // woken by the poke, not over
  end.Finish();
  EXPECT_TRUE(end.WaitUntil(Clock::now() + 10s));
  EXPECT_TRUE(end.finished());
  EXPECT_FALSE(end.stopped());
}

TEST(ManagerSettingsTest, ASlotsManagersTakeTheRunsSettings) {
  RunOptions run;
  run.window = 3;
  run.handlers = 5;
  run.lease = 123ms;
  run.adapt_task_size = true;
  ManagerSettings mo = ManagerSettingsFor(run, 1);
  EXPECT_EQ(mo.owner, "manager-1");
  EXPECT_EQ(mo.window, 3);
  EXPECT_EQ(mo.controller.handlers, 5);
  EXPECT_EQ(mo.lease, 123ms);
  EXPECT_TRUE(mo.adapt_task_size);
}

}  // namespace
}  // namespace acan::runtime
