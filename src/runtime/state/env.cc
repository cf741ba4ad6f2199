#include "runtime/state/env.h"

#include <algorithm>
#include <thread>

#include "nn/executor.h"

namespace acan::runtime {

namespace {

int64_t RealWallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status RunKernel(const nn::TaskSpec& spec, std::span<const std::span<const float>> inputs,
                 std::vector<std::vector<float>>* outputs, const TaskRunContext& context) {
  const auto start = Clock::now();
  Status s = nn::ExecuteTask(spec, inputs, outputs);
  if (context.kernel_ns) {
    *context.kernel_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  }
  return s;
}

class DefaultEnv final : public Env {
 public:
  Clock::time_point Now() const override { return Clock::now(); }
  int64_t WallNs() const override { return RealWallNs(); }
  void SleepUntil(Clock::time_point t) const override { std::this_thread::sleep_until(t); }
  double SlowDown() const override { return 1.0; }
  Status ExecuteTask(const nn::TaskSpec& spec, std::span<const std::span<const float>> inputs,
                     std::vector<std::vector<float>>* outputs,
                     const TaskRunContext& context) const override {
    return RunKernel(spec, inputs, outputs, context);
  }
};

}  // namespace

const Env* Env::Default() {
  static const DefaultEnv env;
  return &env;
}

double SlowedEnv::SlowDown() const {
  return std::max(1.0, speed_->load(std::memory_order_relaxed)) * target()->SlowDown();
}

Status SlowedEnv::ExecuteTask(const nn::TaskSpec& spec,
                              std::span<const std::span<const float>> inputs,
                              std::vector<std::vector<float>>* outputs,
                              const TaskRunContext& context) const {
  const auto start = Now();
  Status s = target()->ExecuteTask(spec, inputs, outputs, context);
  const double speed = speed_->load(std::memory_order_relaxed);
  if (speed <= 1.0) return s;
  const auto until = start + std::chrono::duration_cast<Clock::duration>((Now() - start) * speed);
  // Aimed earlier by what the previous waits overran: each lands about one sleep's lateness past
  // its aim, so the overrun stays about one sleep's lateness instead of growing with every task.
  const auto aim = until - std::chrono::nanoseconds(overrun_ns_.load(std::memory_order_relaxed));
  auto renew =
      context.renew_every.count() > 0 ? start + context.renew_every : Clock::time_point::max();
  auto stopped = [&] { return context.stop && context.stop->load(std::memory_order_relaxed); };
  while (Now() < aim) {
    if (stopped()) return s;
    if (Now() >= renew) {
      if (context.renew && !context.renew()) return s;
      renew = Now() + context.renew_every;
    }
    SleepUntil(std::min({aim, renew, Now() + std::chrono::milliseconds(5)}));
  }
  const int64_t overrun =
      overrun_ns_.load(std::memory_order_relaxed) +
      std::chrono::duration_cast<std::chrono::nanoseconds>(Now() - until).count();
  overrun_ns_.store(std::clamp(overrun, -kMaxOverrunNs, kMaxOverrunNs), std::memory_order_relaxed);
  return s;
}

}  // namespace acan::runtime
