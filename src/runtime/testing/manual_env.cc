#include "runtime/testing/manual_env.h"

namespace acan::runtime {

ManualEnv::ManualEnv() : now_ns_(int64_t{1} << 40), wall_base_ns_(Env::Default()->WallNs()) {}

Clock::time_point ManualEnv::Now() const {
  return Clock::time_point(std::chrono::nanoseconds(now_ns_.load()));
}

int64_t ManualEnv::WallNs() const { return wall_base_ns_ + now_ns_.load(); }

void ManualEnv::SleepUntil(Clock::time_point t) const {
  const int64_t target =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  int64_t now = now_ns_.load();
  while (now < target && !now_ns_.compare_exchange_weak(now, target)) {
  }
}

void ManualEnv::Advance(std::chrono::nanoseconds d) const { now_ns_.fetch_add(d.count()); }

Status ManualEnv::ExecuteTask(const nn::TaskSpec& spec,
                              std::span<const std::span<const float>> inputs,
                              std::vector<std::vector<float>>* outputs,
                              const TaskRunContext& context) const {
  Status s = Env::Default()->ExecuteTask(spec, inputs, outputs, context);
  Advance(task_time_);
  return s;
}

}  // namespace acan::runtime
