// Env: what the runtime asks of the world around it (the time, sleeping, and running a task's
// kernel) behind one seam, as LevelDB's Env. Production code uses Env::Default(); tests drive time
// with a ManualEnv (runtime/testing/manual_env.h) instead of sleeping, and the experiments' slow
// processors are a wrapper (SlowedEnv) over the kernel instead of branches inside the handler.
//
// Thread-safety: Default() and SlowedEnv may be used from any number of threads; a ManualEnv's
// clock is atomic, so threads may read it while a test advances it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "acan/clock.h"
#include "acan/status.h"
#include "nn/task.h"

namespace acan::runtime {

// What a task's execution may use besides its inputs.
struct TaskRunContext {
  const std::atomic<bool>* stop = nullptr;  // set: the processor crashed; stop as soon as possible
  // Renews the task's claim (false: it could not, give up). An Env that makes a task take longer
  // than its kernel calls it every `renew_every`.
  std::function<bool()> renew;
  std::chrono::nanoseconds renew_every{0};
  int64_t* kernel_ns = nullptr;  // out: the kernel's own time, before any slow-down
};

class Env {
 public:
  virtual ~Env() = default;

  // The process-wide Env: the steady and wall clocks, real sleeps, the kernels at full speed.
  static const Env* Default();

  virtual Clock::time_point Now() const = 0;
  // The wall clock in nanoseconds since the epoch: claim leases compare it across processes.
  virtual int64_t WallNs() const = 0;
  virtual void SleepUntil(Clock::time_point t) const = 0;
  // The deadline of a wait on a space `d` from now on this Env's clock. A space waits in real
  // time, so a ManualEnv's is real too (Default's: Deadline::After).
  virtual Deadline DeadlineAfter(Clock::duration d) const { return Deadline::After(d); }
  // How many times slower than its kernel a task runs here (1: full speed).
  virtual double SlowDown() const = 0;
  // Runs a task's kernel (nn::ExecuteTask), and whatever else this Env makes of it.
  virtual Status ExecuteTask(const nn::TaskSpec& spec,
                             std::span<const std::span<const float>> inputs,
                             std::vector<std::vector<float>>* outputs,
                             const TaskRunContext& context) const = 0;
};

// Forwards every call to another Env; a subclass overrides only what it changes.
class EnvWrapper : public Env {
 public:
  // REQUIRES: `target` outlives the wrapper.
  explicit EnvWrapper(const Env* target) : target_(target) {}
  Clock::time_point Now() const override { return target_->Now(); }
  int64_t WallNs() const override { return target_->WallNs(); }
  void SleepUntil(Clock::time_point t) const override { target_->SleepUntil(t); }
  Deadline DeadlineAfter(Clock::duration d) const override { return target_->DeadlineAfter(d); }
  double SlowDown() const override { return target_->SlowDown(); }
  Status ExecuteTask(const nn::TaskSpec& spec, std::span<const std::span<const float>> inputs,
                     std::vector<std::vector<float>>* outputs,
                     const TaskRunContext& context) const override {
    return target_->ExecuteTask(spec, inputs, outputs, context);
  }

 protected:
  const Env* target() const { return target_; }

 private:
  const Env* target_;
};

// A slow processor (the experiments' speed factors): a task takes `*speed` times its kernel's
// time. The kernel runs at full speed, then the rest is waited out, renewing the claim on the way
// and ending early when the processor crashes (the result is lost then anyway). A sleep ends late
// (measured on a 2-core VM: 150-300 us past its target, 5-50% of a slowed micro-batch's wait),
// so what the waits overran so far is taken off the next wait: over a run, its tasks take
// `*speed` times their kernels' time, not more (without it, a slow handler did 0.75-0.84 of its
// share of the work; EnvTest.LateSleepsDoNotSlowAProcessorBeyondItsSpeed).
class SlowedEnv : public EnvWrapper {
 public:
  // REQUIRES: `speed` outlives the Env; it may change at any time (read before every task).
  SlowedEnv(const Env* target, const std::atomic<double>* speed)
      : EnvWrapper(target), speed_(speed) {}
  double SlowDown() const override;
  Status ExecuteTask(const nn::TaskSpec& spec, std::span<const std::span<const float>> inputs,
                     std::vector<std::vector<float>>* outputs,
                     const TaskRunContext& context) const override;

 private:
  // How many ns the waits so far ended past their targets (negative: a wait shorter than a
  // sleep's lateness was skipped), within kMaxOverrunNs either way.
  static constexpr int64_t kMaxOverrunNs = 10'000'000;
  const std::atomic<double>* speed_;
  mutable std::atomic<int64_t> overrun_ns_{0};
};

}  // namespace acan::runtime
