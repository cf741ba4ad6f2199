// Stall reports: when no step of a run completes for a long while, the run says what it has in
// flight, so a stall is never silent (a hang in CI shows its cause within minutes).
#pragma once

#include <string>

#include "runtime/manager.h"
#include "space/census_space.h"

namespace acan::runtime {

struct StallReport {
  double t_s = 0;                    // when it was made, since the run began
  double stalled_s = 0;              // since the last step completed (or the run began)
  int manager_slot = -1;             // the slot of the manager that last became active
  int64_t manager_incarnations = 0;  // managers that became active so far
  int64_t manager_crashes = 0;
  int64_t handler_crashes = 0;
  FlightStatus flight;  // what that manager last reported in flight
  Census space;         // resident tuples and bytes, by key class

  // One line: what is stalled and what is in flight and in the space.
  std::string ToString() const;
};

}  // namespace acan::runtime
