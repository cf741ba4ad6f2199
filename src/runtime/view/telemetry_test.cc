// Telemetry on a clock the test moves: recovery times are measured from the crash to the redo,
// by class; the chaos calibration is the median step; a stall report says how long.
#include "runtime/view/telemetry.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/run/artefacts.h"
#include "runtime/testing/manual_env.h"

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

TEST(TelemetryTest, ALostTaskIsTimedFromTheCrashToItsRedoAndCountedInItsClass) {
  ManualEnv env;
  Telemetry t(&env);
  const auto crash = env.Now();
  t.OnHandlerCrash({{"mb.s4.m1", 4}}, crash);
  env.Advance(7ms);
  t.OnTaskDone("mb.s4.m0", 2000000);  // another task: not a redo
  env.Advance(5ms);
  t.OnReported("mb.s4.m0", 2000000, 1.0);
  EXPECT_EQ(t.recovery().lost_not_redone, 1);
  // The redo's report, 12 ms after the crash: timed by the report itself, before any manager
  // reads it (one that took over after the crash may find it in the space and never call
  // OnTaskDone for it).
  t.OnReported("mb.s4.m1", 3000000, 1.0);
  t.OnReported("mb.s4.m1", 3000000, 1.0);  // a duplicate report is no second redo
  t.OnTaskDone("mb.s4.m1", 3000000);
  RecoveryStats r = t.recovery();
  EXPECT_EQ(r.lost_tasks, 1);
  EXPECT_EQ(r.lost_not_redone, 0);
  ASSERT_EQ(r.handler_ms.size(), 1u);
  EXPECT_DOUBLE_EQ(r.handler_ms[0], 12.0);
  EXPECT_DOUBLE_EQ(r.lost_task_ms[0], 3.0);
  EXPECT_EQ(r.lost_classes, (std::vector<std::string>{"mb.m1"}));
  EXPECT_EQ(r.task_ms_by_class["mb.m0"], (std::vector<double>{2.0}));
  EXPECT_EQ(r.task_ms_by_class["mb.m1"].size(), 1u);

  t.OnManagerCrash();
  env.Advance(30ms);
  t.OnStep(Progress{}, ControllerSnapshot{});
  r = t.recovery();
  EXPECT_EQ(r.manager_ms, (std::vector<double>{30.0}));
  t.OnRecovered(4ms, 17);
  EXPECT_EQ(t.recovery().manager_recovery_calls, (std::vector<int64_t>{17}));
}

// A crashed handler gives up what it held once its thread is out of the task: another handler
// may have redone it meanwhile (its death announced at once), and that report came first. A report
// from before the crash is no redo.
TEST(TelemetryTest, ARedoReportedBeforeTheLossIsToldIsTimedFromTheCrash) {
  ManualEnv env;
  Telemetry t(&env);
  t.OnReported("mb.s2.m1", 1000000, 1.0);  // before the crash
  env.Advance(1ms);
  const auto crash = env.Now();
  env.Advance(4ms);
  t.OnReported("mb.s2.m0", 2000000, 5.0);  // the redo, 4 ms after the crash
  env.Advance(3ms);
  t.OnHandlerCrash({{"mb.s2.m0", 2}, {"mb.s2.m1", 2}}, crash);
  RecoveryStats r = t.recovery();
  EXPECT_EQ(r.lost_tasks, 2);
  EXPECT_EQ(r.lost_not_redone, 1);  // mb.s2.m1's only report came before the crash
  ASSERT_EQ(r.handler_ms.size(), 1u);
  EXPECT_DOUBLE_EQ(r.handler_ms[0], 4.0);
  EXPECT_EQ(r.lost_speeds, (std::vector<double>{5.0}));
  env.Advance(2ms);
  t.OnReported("mb.s2.m1", 1000000, 1.0);
  r = t.recovery();
  EXPECT_EQ(r.lost_not_redone, 0);
  EXPECT_EQ(r.handler_ms, (std::vector<double>{4.0, 9.0}));
}

// A redo is judged against what its processor usually takes: the class's times over their
// slow-downs, times the redo's. A slow handler redoing its own lost task at 10 is not a slow
// recovery; a fast one taking three times its usual time is.
TEST(TelemetryTest, ARedoIsJudgedAgainstItsClassAtTheSlowDownItRanAt) {
  ManualEnv env;
  Telemetry t(&env);
  for (int i = 0; i < 6; ++i) t.OnTaskDone("mb.s" + std::to_string(i) + ".m0", 2000000, 1.0);
  for (int i = 6; i < 9; ++i) t.OnTaskDone("mb.s" + std::to_string(i) + ".m0", 20000000, 10.0);
  // Crash 1: the redo runs at 10, 21 ms from the crash (its usual time at 10: 20 ms).
  t.OnHandlerCrash({{"mb.s9.m0", 4}}, env.Now());
  env.Advance(21ms);
  t.OnReported("mb.s9.m0", 20500000, 10.0);
  const SummaryRecovery slow = RecoverySummary(t.recovery());
  EXPECT_NEAR(slow.median_recovery_over_own_class_median_at_speed.value_or(0), 21.0 / 20, 1e-9);
  EXPECT_EQ(slow.redo_speeds, (std::map<std::string, int64_t>{{"10", 1}}));
  // Against the class at any speed (median 2 ms: most runs were at full speed) it looks 10x slow.
  EXPECT_NEAR(slow.median_recovery_over_own_class_median_task.value_or(0), 21.0 / 2, 1e-9);

  // Crashes 2 and 3: redos at full speed 6 ms after their crashes, three times the usual 2 ms.
  for (int s : {10, 11}) {
    const std::string key = "mb.s" + std::to_string(s) + ".m0";
    t.OnHandlerCrash({{key, 4}}, env.Now());
    env.Advance(6ms);
    t.OnReported(key, 2000000, 1.0);
  }
  const SummaryRecovery fast = RecoverySummary(t.recovery());
  EXPECT_NEAR(fast.median_recovery_over_own_class_median_at_speed.value_or(0), 3.0, 1e-9);
  EXPECT_EQ(fast.redo_speeds, (std::map<std::string, int64_t>{{"1", 2}, {"10", 1}}));
}

TEST(TelemetryTest, TheCalibrationIsTheMedianStepAndAStallReportSaysHowLong) {
  ManualEnv env;
  Telemetry t(&env);
  const auto start = env.Now();
  int hook_calls = 0;
  t.SetStepHook(4, [&] { ++hook_calls; });
  EXPECT_FALSE(t.MedianStepS(3).has_value());
  for (auto gap : {0ms, 10ms, 50ms, 20ms}) {
    env.Advance(gap);
    Progress p;
    t.OnStep(p, {});
  }
  EXPECT_EQ(hook_calls, 1);  // on the 4th step
  ASSERT_TRUE(t.MedianStepS(3).has_value());
  EXPECT_NEAR(*t.MedianStepS(3), 0.020, 1e-9);  // gaps 10, 50, 20 ms
  t.OnActive(1);
  t.OnFlight(FlightStatus{3, 5, 7, 2});
  env.Advance(2s);
  StallReport s = t.Stall(start);
  EXPECT_NEAR(s.stalled_s, 2.0, 1e-9);
  EXPECT_NEAR(s.t_s, 2.08, 1e-9);
  EXPECT_EQ(s.manager_slot, 1);
  EXPECT_EQ(s.manager_incarnations, 1);
  EXPECT_EQ(s.flight.tasks_sent, 7);
}

}  // namespace
}  // namespace acan::runtime
