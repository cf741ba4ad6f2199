#include "runtime/stall.h"

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

}  // namespace acan::runtime
