// Stall reports: when no step of a run completes for a long while, the run says what it has in
// flight, so a stall is never silent (a hang in CI shows its cause within minutes).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/thread_annotations.h"
#include "runtime/core/records.h"
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

// For a process that sees a job's steps complete (a manager, a supervisor watching the manager's
// state): when no step completed for max(floor, 8 x the longest task timeout), a report is due,
// and again each time as long again passes. Thread-safe.
class StallWatch {
 public:
  explicit StallWatch(Clock::duration floor);
  // A step completed: `next_step` is the first not yet applied; `longest_timeout`, the longest
  // task timeout the manager uses now (0: unknown).
  void OnStep(int64_t next_step, Clock::duration longest_timeout = {});
  // Seconds since the last step when a report is due now, else none.
  std::optional<double> Due();
  int64_t next_step() const;

 private:
  Clock::duration Limit() const REQUIRES(mu_);

  const Clock::duration floor_;
  mutable Mutex mu_;
  Clock::time_point last_ GUARDED_BY(mu_);
  Clock::time_point next_report_ GUARDED_BY(mu_);
  Clock::duration longest_ GUARDED_BY(mu_) = {};
  int64_t next_step_ GUARDED_BY(mu_) = 0;
};

}  // namespace acan::runtime
