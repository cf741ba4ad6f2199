// The Env seam: a manual clock moves only when told; a slowed processor takes `speed` times its
// kernel's time, renewing the claim on the way, and stops early on a crash.
#include "runtime/state/env.h"

#include <gtest/gtest.h>

#include "runtime/testing/manual_env.h"

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

// A kernel that takes exactly 10 ms of the manual clock and computes nothing.
class TenMsKernel : public ManualEnv {
 public:
  Status ExecuteTask(const nn::TaskSpec&, std::span<const std::span<const float>>,
                     std::vector<std::vector<float>>*,
                     const TaskRunContext& context) const override {
    Advance(10ms);
    if (context.kernel_ns) *context.kernel_ns = 10000000;
    return Status::Ok();
  }
};

nn::TaskSpec AnyTask() { return nn::TaskSpec{}; }

// A kernel of `kernel` on the manual clock, whose every sleep ends `late` past its target, as a
// real one does (150-300 us on a 2-core VM).
class LateSleeper : public ManualEnv {
 public:
  LateSleeper(Clock::duration kernel, Clock::duration late) : kernel_(kernel), late_(late) {}
  Status ExecuteTask(const nn::TaskSpec&, std::span<const std::span<const float>>,
                     std::vector<std::vector<float>>*, const TaskRunContext&) const override {
    Advance(kernel_);
    return Status::Ok();
  }
  void SleepUntil(Clock::time_point t) const override { ManualEnv::SleepUntil(t + late_); }

 private:
  Clock::duration kernel_, late_;
};

TEST(EnvTest, AManualClockMovesOnlyWhenTold) {
  ManualEnv env;
  const auto t0 = env.Now();
  const int64_t w0 = env.WallNs();
  EXPECT_EQ(env.Now(), t0);
  env.Advance(3ms);
  EXPECT_EQ(env.Now() - t0, 3ms);
  EXPECT_EQ(env.WallNs() - w0, 3000000);
  env.SleepUntil(t0 + 10ms);
  EXPECT_EQ(env.Now() - t0, 10ms);
  env.SleepUntil(t0);  // the past: no step back
  EXPECT_EQ(env.Now() - t0, 10ms);
}

TEST(EnvTest, ASlowedProcessorTakesSpeedTimesItsKernelAndRenewsTheClaim) {
  TenMsKernel base;
  std::atomic<double> speed{5.0};
  SlowedEnv slow(&base, &speed);
  EXPECT_DOUBLE_EQ(slow.SlowDown(), 5.0);
  std::atomic<bool> stop{false};
  std::vector<Clock::time_point> renewals;
  int64_t kernel_ns = 0;
  TaskRunContext ctx;
  ctx.stop = &stop;
  ctx.renew_every = 8ms;
  ctx.renew = [&] {
    renewals.push_back(base.Now());
    return true;
  };
  ctx.kernel_ns = &kernel_ns;
  std::vector<std::vector<float>> out;
  const auto t0 = base.Now();
  (void)slow.ExecuteTask(AnyTask(), {}, &out, ctx);
  EXPECT_EQ(base.Now() - t0, 50ms);  // 10 ms of kernel, 40 more waited out
  // Renewed as soon as the kernel returned, then never more than renew_every apart, up to the end.
  ASSERT_FALSE(renewals.empty());
  EXPECT_EQ(renewals.front() - t0, 10ms);
  for (size_t i = 1; i < renewals.size(); ++i) EXPECT_LE(renewals[i] - renewals[i - 1], 8ms);
  EXPECT_LE(base.Now() - renewals.back(), 8ms);
  EXPECT_EQ(kernel_ns, 10000000);  // the kernel's own time, not the stretch

  speed = 1.0;  // full speed: the kernel's time alone, no renewal needed
  renewals.clear();
  const auto t1 = base.Now();
  (void)slow.ExecuteTask(AnyTask(), {}, &out, ctx);
  EXPECT_EQ(base.Now() - t1, 10ms);
  EXPECT_TRUE(renewals.empty());
}

// Late sleeps do not make a slowed processor slower than its speed: over many tasks the total is
// speed times the kernels' time, within one sleep's lateness, both when the wait takes several
// sleeps (a 40-ms wait ending 300 us late: 0.6% over without the correction) and when
// it is shorter than one sleep's lateness (a 40-us wait: 7 times over).
TEST(EnvTest, LateSleepsDoNotSlowAProcessorBeyondItsSpeed) {
  using Ns = std::chrono::nanoseconds;
  for (const auto& [kernel, late] : std::vector<std::pair<Ns, Ns>>{{10ms, 300us}, {10us, 300us}}) {
    LateSleeper base(kernel, late);
    std::atomic<double> speed{5.0};
    SlowedEnv slow(&base, &speed);
    std::vector<std::vector<float>> out;
    const auto t0 = base.Now();
    constexpr int kTasks = 100;
    for (int i = 0; i < kTasks; ++i) ASSERT_TRUE(slow.ExecuteTask(AnyTask(), {}, &out, {}).ok());
    const auto took = base.Now() - t0;
    SCOPED_TRACE(::testing::Message()
                 << "kernel " << kernel.count() << " ns, took " << took.count() << " ns");
    EXPECT_GE(took, kTasks * 5 * kernel - late);
    EXPECT_LE(took, kTasks * 5 * kernel + late);
  }
}

TEST(EnvTest, ACrashOrALostClaimEndsTheWaitEarly) {
  TenMsKernel base;
  std::atomic<double> speed{10.0};
  SlowedEnv slow(&base, &speed);
  std::atomic<bool> stop{false};
  TaskRunContext ctx;
  ctx.stop = &stop;
  ctx.renew_every = 20ms;
  ctx.renew = [&] {
    stop = true;  // the processor crashes while the task runs
    return true;
  };
  std::vector<std::vector<float>> out;
  auto t0 = base.Now();
  (void)slow.ExecuteTask(AnyTask(), {}, &out, ctx);
  EXPECT_LT(base.Now() - t0, 30ms);
  stop = false;
  ctx.renew = [] { return false; };  // the claim could not be renewed: give up
  t0 = base.Now();
  (void)slow.ExecuteTask(AnyTask(), {}, &out, ctx);
  EXPECT_EQ(base.Now() - t0, 20ms);
}

}  // namespace
}  // namespace acan::runtime
