// The manager's decisions on the tasks it sent, run synchronously: no thread, no space, no
// clock but the time points these tests make. Each case feeds TaskWatch what a look in the space
// would have found and checks what it decides and what it changes on the task.
#include "runtime/core/task_watch.h"

#include <gtest/gtest.h>

namespace acan::runtime {
namespace {

using std::chrono::milliseconds;
using Kind = Decision::Kind;

nn::TaskSpec Spec(const std::string& key) {
  nn::TaskSpec t;
  t.key = key;
  t.type = nn::TaskType::kBackward;
  t.op = nn::TaskOp::kMicroBatch;
  t.widths = {4, 4, 1};
  t.rows = 8;
  t.batch = 8;
  return t;
}

class TaskWatchTest : public ::testing::Test {
 protected:
  // A step of `n` tasks, none sent yet.
  void Step(int64_t step, int n) {
    StepFlow& st = steps_[step];
    st.step = step;
    for (int i = 0; i < n; ++i) {
      StepTask t;
      t.spec = Spec("mb.s" + std::to_string(step) + ".m" + std::to_string(i));
      st.tasks.push_back(std::move(t));
    }
  }
  StepTask& Task(int64_t step, size_t i) { return steps_.at(step).tasks.at(i); }
  // Sends task (step, i) at `at`, as the manager does.
  void Send(int64_t step, size_t i, Clock::time_point at) {
    StepTask& t = Task(step, i);
    ++t.attempt;
    t.dispatched = true;
    watch_.OnSent(t, at);
  }
  // Asks the watch about a due task, answering each look from `world`, and returns the decision
  // and the looks it asked for, in order.
  std::pair<Decision, std::vector<Look>> Deadline(StepTask& t, const Seen& world,
                                                  Clock::time_point now) {
    Seen seen;
    std::vector<Look> looks;
    Decision d = watch_.OnDeadline(t, seen, now);
    while (d.kind == Kind::kLook) {
      looks.push_back(d.look);
      if (d.look == Look::kQueued) seen.queued = world.queued;
      if (d.look == Look::kClaim) seen.claim = world.claim;
      if (d.look == Look::kReported) seen.reported = world.reported;
      EXPECT_LE(looks.size(), 3u) << "a deadline needs three looks at most";
      if (looks.size() > 3) break;
      d = watch_.OnDeadline(t, seen, now);
    }
    return {d, looks};
  }

  const Clock::time_point t0_ = Clock::time_point() + std::chrono::hours(1);
  Controller controller_{ControllerOptions{}};
  StragglerWatch stragglers_;
  TaskWatch watch_{&controller_, &stragglers_, /*speculate=*/true};
  StepsInFlight steps_;
};

TEST_F(TaskWatchTest, ASentTaskIsDueAtItsTimeoutNotBefore) {
  Step(0, 3);
  Send(0, 0, t0_);
  Send(0, 2, t0_ + milliseconds(10));
  const auto timeout = controller_.Timeout(Task(0, 0).spec);
  EXPECT_EQ(Task(0, 0).deadline, t0_ + timeout);
  EXPECT_TRUE(watch_.Due(steps_, t0_ + timeout - milliseconds(1)).empty());
  EXPECT_EQ(watch_.Due(steps_, t0_ + timeout), (std::vector<TaskRef>{{0, 0}}));
  // The task never sent (index 1) is never due; a done one neither.
  EXPECT_EQ(watch_.Due(steps_, t0_ + timeout + milliseconds(10)),
            (std::vector<TaskRef>{{0, 0}, {0, 2}}));
  Task(0, 0).done = true;
  EXPECT_EQ(watch_.Due(steps_, t0_ + timeout + milliseconds(10)), (std::vector<TaskRef>{{0, 2}}));
}

TEST_F(TaskWatchTest, AQueuedTaskWaitsWithoutBackingOff) {
  Step(0, 1);
  Send(0, 0, t0_);
  const auto timeout = controller_.Timeout(Task(0, 0).spec);
  const auto now = t0_ + timeout;
  auto [d, looks] = Deadline(Task(0, 0), {.queued = true}, now);
  EXPECT_EQ(d.kind, Kind::kWait);
  EXPECT_EQ(looks, std::vector<Look>{Look::kQueued});  // no claim read for a queued task
  EXPECT_EQ(Task(0, 0).deadline, now + timeout);
  EXPECT_EQ(controller_.Timeout(Task(0, 0).spec), timeout);  // busy handlers: no backoff
}

TEST_F(TaskWatchTest, ALiveClaimExtendsUntilTheTaskIsHung) {
  Step(0, 1);
  Send(0, 0, t0_);
  const auto timeout = controller_.Timeout(Task(0, 0).spec);
  auto [d, looks] =
      Deadline(Task(0, 0), {.queued = false, .claim = ClaimState::kAlive}, t0_ + timeout);
  EXPECT_EQ(d.kind, Kind::kExtend);
  EXPECT_EQ(looks, (std::vector<Look>{Look::kQueued, Look::kClaim}));
  EXPECT_EQ(Task(0, 0).deadline, t0_ + 2 * timeout);
  // Claimed for kHungFactor timeouts: sent again, however alive its claimant says it is.
  const auto hung = t0_ + TaskWatch::kHungFactor * timeout;
  auto [d2, looks2] = Deadline(Task(0, 0), {.queued = false, .claim = ClaimState::kAlive}, hung);
  EXPECT_EQ(d2.kind, Kind::kResend);
  EXPECT_STREQ(d2.reason, "hung");
  EXPECT_GT(controller_.Timeout(Task(0, 0).spec), timeout);  // backed off
}

TEST_F(TaskWatchTest, NoClaimButAReportWaitsForTheReport) {
  Step(0, 1);
  Send(0, 0, t0_);
  const auto timeout = controller_.Timeout(Task(0, 0).spec);
  auto [d, looks] = Deadline(
      Task(0, 0), {.queued = false, .claim = ClaimState::kNone, .reported = true}, t0_ + timeout);
  EXPECT_EQ(d.kind, Kind::kWait);
  EXPECT_EQ(looks, (std::vector<Look>{Look::kQueued, Look::kClaim, Look::kReported}));
  EXPECT_EQ(controller_.Timeout(Task(0, 0).spec), timeout);
}

TEST_F(TaskWatchTest, ALostTaskGoesAgainNamedAfterItsClaimAndBacksOff) {
  const std::pair<ClaimState, const char*> cases[] = {
      {ClaimState::kNone, "timeout"},
      {ClaimState::kStale, "handler-restarted"},
      {ClaimState::kDead, "handler-died"},
      {ClaimState::kLapsed, "claim-lapsed"},
  };
  int64_t step = 0;
  for (const auto& [claim, reason] : cases) {
    Step(step, 1);
    Send(step, 0, t0_);
    const auto timeout = controller_.Timeout(Task(step, 0).spec);
    auto [d, looks] = Deadline(Task(step, 0), {.queued = false, .claim = claim, .reported = false},
                               t0_ + timeout);
    EXPECT_EQ(d.kind, Kind::kResend) << reason;
    EXPECT_STREQ(d.reason, reason);
    // Only a task nobody claims is looked for among the reports.
    EXPECT_EQ(looks.size(), claim == ClaimState::kNone ? 3u : 2u) << reason;
    EXPECT_GT(controller_.Timeout(Task(step, 0).spec), timeout) << reason;
    ++step;
  }
}

TEST_F(TaskWatchTest, ARestartNoticeResendsOnlyTheDeadsTasksAtOnce) {
  Step(0, 3);
  Send(0, 0, t0_);
  Send(0, 1, t0_);
  const auto timeout = controller_.Timeout(Task(0, 0).spec);
  Decision dead = TaskWatch::OnRestartNotice(Task(0, 0), ClaimState::kDead);
  EXPECT_EQ(dead.kind, Kind::kResend);
  EXPECT_STREQ(dead.reason, "handler-died");
  EXPECT_STREQ(TaskWatch::OnRestartNotice(Task(0, 0), ClaimState::kStale).reason,
               "handler-restarted");
  EXPECT_EQ(TaskWatch::OnRestartNotice(Task(0, 1), ClaimState::kAlive).kind, Kind::kNothing);
  EXPECT_EQ(TaskWatch::OnRestartNotice(Task(0, 1), ClaimState::kLapsed).kind, Kind::kNothing);
  EXPECT_EQ(TaskWatch::OnRestartNotice(Task(0, 2), ClaimState::kDead).kind, Kind::kNothing)
      << "a task never sent is not resent";
  Task(0, 1).done = true;
  EXPECT_EQ(TaskWatch::OnRestartNotice(Task(0, 1), ClaimState::kDead).kind, Kind::kNothing);
  EXPECT_EQ(controller_.Timeout(Task(0, 0).spec), timeout) << "a known death is no congestion";
}

TEST_F(TaskWatchTest, ASlowClaimantsTaskGetsOneCopyWhenAHandlerIsIdle) {
  Step(0, 1);
  const nn::TaskSpec spec = Task(0, 0).spec;
  stragglers_.Observe(0, spec, 1'000'000);   // 1 ms: fast
  stragglers_.Observe(1, spec, 50'000'000);  // 50 ms: slow
  Send(0, 0, t0_);
  StepTask& t = Task(0, 0);
  EXPECT_EQ(t.straggler_check_at, t0_ + milliseconds(1));  // looked at after the fastest's time
  EXPECT_EQ(watch_.OnStragglerTick(t, t0_).kind, Kind::kNothing);  // not yet
  EXPECT_EQ(watch_.NextWake(steps_, t0_ + milliseconds(100)), t0_ + milliseconds(1));
  // Due: a look is scheduled a fastest's time on, and the watch asks whether a handler is idle.
  const auto at = t0_ + milliseconds(2);
  Decision d = watch_.OnStragglerTick(t, at);
  ASSERT_EQ(d.kind, Kind::kLook);
  EXPECT_EQ(d.look, Look::kIdle);
  EXPECT_EQ(t.straggler_check_at, at + milliseconds(1));
  // Nobody idle: no copy.
  EXPECT_EQ(watch_.OnStragglerSeen(t, {.idle = false}, at).kind, Kind::kNothing);
  // Idle, and the slow handler holds it: a copy; two claimants: none.
  Seen seen{.idle = true};
  d = watch_.OnStragglerSeen(t, seen, at);
  ASSERT_EQ(d.kind, Kind::kLook);
  EXPECT_EQ(d.look, Look::kClaimants);
  seen.claimants = std::vector<int>{0, 1};
  EXPECT_EQ(watch_.OnStragglerSeen(t, seen, at).kind, Kind::kNothing);
  seen.claimants = std::vector<int>{0};  // the fast one holds it: no copy
  EXPECT_EQ(watch_.OnStragglerSeen(t, seen, at).kind, Kind::kNothing);
  EXPECT_FALSE(t.speculated);
  seen.claimants = std::vector<int>{1};
  EXPECT_EQ(watch_.OnStragglerSeen(t, seen, at).kind, Kind::kSpeculate);
  EXPECT_TRUE(t.speculated);
  // Once: a speculated task is not looked at again.
  EXPECT_EQ(watch_.OnStragglerTick(t, at + milliseconds(10)).kind, Kind::kNothing);
}

TEST_F(TaskWatchTest, PastTheLastMomentACopyCouldWinATaskIsNotLookedAtAgain) {
  Step(0, 1);
  const nn::TaskSpec spec = Task(0, 0).spec;
  stragglers_.Observe(0, spec, 1'000'000);
  stragglers_.Observe(1, spec, 4'000'000);
  Send(0, 0, t0_);
  StepTask& t = Task(0, 0);
  const double until_ns = *stragglers_.WorthACopyUntilNs(spec);
  const auto past = t0_ + std::chrono::nanoseconds(static_cast<int64_t>(until_ns) + 1);
  EXPECT_EQ(watch_.OnStragglerTick(t, past).kind, Kind::kNothing);
  EXPECT_EQ(t.straggler_check_at, Clock::time_point::max());
}

TEST_F(TaskWatchTest, WithoutSpeculationNoTaskIsEverCopied) {
  TaskWatch plain(&controller_, &stragglers_, /*speculate=*/false);
  Step(0, 1);
  const nn::TaskSpec spec = Task(0, 0).spec;
  stragglers_.Observe(0, spec, 1'000'000);
  stragglers_.Observe(1, spec, 50'000'000);
  StepTask& t = Task(0, 0);
  ++t.attempt;
  t.dispatched = true;
  plain.OnSent(t, t0_);
  EXPECT_EQ(t.straggler_check_at, Clock::time_point::max());
  EXPECT_EQ(plain.OnStragglerTick(t, t0_ + std::chrono::seconds(1)).kind, Kind::kNothing);
}

TEST_F(TaskWatchTest, ARecoveringManagerKeepsWhatIsDoneOrHeldAndSendsTheRest) {
  Step(0, 3);
  const auto now = t0_ + milliseconds(5);
  EXPECT_FALSE(watch_.OnRecovered(Task(0, 0), /*done=*/true, /*held=*/false, now));
  EXPECT_TRUE(Task(0, 0).done);
  EXPECT_TRUE(Task(0, 0).dispatched);
  EXPECT_TRUE(watch_.OnRecovered(Task(0, 1), /*done=*/false, /*held=*/true, now));
  EXPECT_EQ(Task(0, 1).attempt, 1);  // in flight, under a fresh deadline
  EXPECT_EQ(Task(0, 1).deadline, now + controller_.Timeout(Task(0, 1).spec));
  EXPECT_FALSE(watch_.OnRecovered(Task(0, 2), /*done=*/false, /*held=*/false, now));
  EXPECT_FALSE(Task(0, 2).dispatched);  // to be sent
  EXPECT_EQ(watch_.Due(steps_, Task(0, 1).deadline), (std::vector<TaskRef>{{0, 1}}));
}

TEST_F(TaskWatchTest, OnlyAFirstAttemptsLatencyTeachesTheController) {
  Step(0, 2);
  const nn::TaskSpec spec = Task(0, 0).spec;
  const auto before = controller_.Timeout(spec);
  Send(0, 1, t0_);
  Send(0, 1, t0_);  // a second attempt: its latency says nothing of the class
  watch_.OnDone(Task(0, 1), t0_ + milliseconds(1));
  EXPECT_EQ(controller_.Timeout(spec), before);
  Send(0, 0, t0_);
  watch_.OnDone(Task(0, 0), t0_ + milliseconds(1));
  EXPECT_LT(controller_.Timeout(spec), before);  // 1 ms against the 2 s first guess
}

TEST_F(TaskWatchTest, TheLoopWakesAtTheEarliestDeadlineOrStragglerLook) {
  Step(0, 2);
  Step(1, 1);
  const auto latest = t0_ + milliseconds(100);
  EXPECT_EQ(watch_.NextWake(steps_, latest), latest);  // nothing in flight
  ControllerOptions fast;
  fast.initial_timeout = milliseconds(30);
  Controller c(fast);
  TaskWatch w(&c, &stragglers_, /*speculate=*/true);
  StepTask& late = steps_.at(1).tasks.at(0);
  ++late.attempt;
  late.dispatched = true;
  w.OnSent(late, t0_ + milliseconds(20));  // a later step's deadline counts too
  EXPECT_EQ(w.NextWake(steps_, latest), t0_ + milliseconds(50));
  stragglers_.Observe(0, Task(0, 0).spec, 5'000'000);
  StepTask& oldest = Task(0, 0);
  ++oldest.attempt;
  oldest.dispatched = true;
  w.OnSent(oldest, t0_);
  EXPECT_EQ(w.NextWake(steps_, latest), t0_ + milliseconds(5));  // its straggler look
  oldest.speculated = true;
  EXPECT_EQ(w.NextWake(steps_, latest), t0_ + milliseconds(30));  // its deadline
}

}  // namespace
}  // namespace acan::runtime
