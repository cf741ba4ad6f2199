// ManualEnv: an Env whose clock moves only when a test says so (test code: not in libacan).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "runtime/state/env.h"

namespace acan::runtime {

// A clock that moves only when told (tests): Now() starts at an arbitrary point and SleepUntil
// jumps to its target; WallNs() moves with it. Kernels run for real, taking no time on this clock
// unless `task_time` is set.
class ManualEnv : public Env {
 public:
  ManualEnv();
  Clock::time_point Now() const override;
  int64_t WallNs() const override;
  void SleepUntil(Clock::time_point t) const override;
  double SlowDown() const override { return 1.0; }
  Status ExecuteTask(const nn::TaskSpec& spec, std::span<const std::span<const float>> inputs,
                     std::vector<std::vector<float>>* outputs,
                     const TaskRunContext& context) const override;

  void Advance(std::chrono::nanoseconds d) const;
  // Each task advances the clock by this much (0: none).
  void set_task_time(std::chrono::nanoseconds d) { task_time_ = d; }

 private:
  mutable std::atomic<int64_t> now_ns_;
  const int64_t wall_base_ns_;
  std::chrono::nanoseconds task_time_{0};
};

}  // namespace acan::runtime
