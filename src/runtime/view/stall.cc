#include "runtime/view/stall.h"

#include <fmt/format.h>

namespace acan::runtime {

std::string StallReport::ToString() const {
  std::string classes;
  for (const auto& [cls, c] : space.by_class) {
    if (c.tuples == 0) continue;
    classes += fmt::format("{}{} {}", classes.empty() ? "" : ", ", cls, c.tuples);
  }
  return fmt::format(
      "no step completed for {:.1f} s (at {:.1f} s): manager incarnation {} (slot {}; {} manager "
      "and {} handler crashes so far), steps {}..{} in flight, {} tasks sent and not done, {} "
      "held back by the pouch; space holds {} tuples, {} bytes ({})",
      stalled_s, t_s, manager_incarnations, manager_slot, manager_crashes, handler_crashes,
      flight.next_step, flight.admitted - 1, flight.tasks_sent, flight.tasks_held,
      space.total.tuples, space.total.bytes, classes);
}

StallWatch::StallWatch(Clock::duration floor)
    : floor_(floor), last_(Clock::now()), next_report_(last_ + floor) {}

Clock::duration StallWatch::Limit() const { return std::max(floor_, 8 * longest_); }

void StallWatch::OnStep(int64_t next_step, Clock::duration longest_timeout) {
  MutexLock lock(mu_);
  last_ = Clock::now();
  next_step_ = next_step;
  if (longest_timeout.count() > 0) longest_ = longest_timeout;
  next_report_ = last_ + Limit();
}

std::optional<double> StallWatch::Due() {
  MutexLock lock(mu_);
  const auto now = Clock::now();
  if (now < next_report_) return std::nullopt;
  next_report_ = now + Limit();
  return std::chrono::duration<double>(now - last_).count();
}

int64_t StallWatch::next_step() const {
  MutexLock lock(mu_);
  return next_step_;
}

}  // namespace acan::runtime
