// Telemetry on a clock the test moves: recovery times are measured from the crash to the redo,
// by class; the chaos calibration is the median step; a stall report says how long.
#include "runtime/telemetry.h"

#include <gtest/gtest.h>

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
  t.OnTaskDone("mb.s4.m1", 3000000);  // the redo, 12 ms after the crash
  t.OnTaskDone("mb.s4.m1", 3000000);  // a duplicate report is no second redo
  RecoveryStats r = t.recovery();
  ASSERT_EQ(r.handler_ms.size(), 1u);
  EXPECT_DOUBLE_EQ(r.handler_ms[0], 12.0);
  EXPECT_DOUBLE_EQ(r.lost_task_ms[0], 3.0);
  EXPECT_EQ(r.lost_classes, (std::vector<std::string>{"mb.m1"}));
  EXPECT_EQ(r.task_ms_by_class["mb.m0"], (std::vector<double>{2.0}));
  EXPECT_EQ(r.task_ms_by_class["mb.m1"].size(), 2u);

  t.OnManagerCrash();
  env.Advance(30ms);
  t.OnStep(Progress{}, ControllerSnapshot{});
  r = t.recovery();
  EXPECT_EQ(r.manager_ms, (std::vector<double>{30.0}));
  t.OnRecovered(4ms, 17);
  EXPECT_EQ(t.recovery().manager_recovery_calls, (std::vector<int64_t>{17}));
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
