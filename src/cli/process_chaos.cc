#include "cli/process_chaos.h"

#include <utility>

#include "common/split_mix.h"

namespace acan::cli {

ChaosSchedule::ChaosSchedule(ProcessChaos chaos, int handlers)
    : chaos_(std::move(chaos)), handlers_(handlers) {}

std::optional<double> ChaosSchedule::KillMoment(int target, int64_t k) const {
  const uint64_t h = SplitMix64(SplitMix64(chaos_.seed ^ (uint64_t(target) << 32)) ^ uint64_t(k));
  if (UnitInterval(h) >= chaos_.probability) return std::nullopt;
  return UnitInterval(SplitMix64(h)) * chaos_.interval_s;
}

double ChaosSchedule::SpeedIn(int h, int64_t k) const {
  if (chaos_.speeds.empty()) return 1.0;
  const uint64_t r = SplitMix64(SplitMix64(chaos_.seed ^ 0x5eedULL) ^ uint64_t(k));
  return chaos_.speeds[(size_t(h) + r) % chaos_.speeds.size()];
}

ChaosSchedule::Due ChaosSchedule::At(double t_s) {
  Due due;
  if (!kills()) return due;
  const auto k = static_cast<int64_t>(t_s / chaos_.interval_s);
  if (k != interval_ || kill_at_.empty()) {
    // A new interval's speeds (the first one's are on the handlers' command lines).
    if (k != interval_ && !chaos_.speeds.empty()) {
      for (int h = 0; h < handlers_; ++h) due.speeds.push_back(SpeedIn(h, k));
    }
    interval_ = k;
    kill_at_.assign(handlers_ + 1, std::nullopt);
    for (int target = 0; target <= handlers_; ++target) {
      if (target == handlers_ && !chaos_.manager) continue;
      kill_at_[target] = KillMoment(target, k);
    }
  }
  const double in_interval = t_s - double(k) * chaos_.interval_s;
  for (int target = 0; target <= handlers_; ++target) {
    if (!kill_at_[target] || *kill_at_[target] > in_interval) continue;
    kill_at_[target].reset();
    due.targets.push_back(target);
  }
  return due;
}

}  // namespace acan::cli
