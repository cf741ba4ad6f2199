// The chaos of a run of processes (roles.h, ProcessChaos) as a schedule: which process is due to
// be killed, and the handlers' speeds, at a moment of the run. What it says is a function of
// (seed, process, interval) and the moment given: no clock, no signal, no process, so that the
// supervisor (process_supervisor.h) acts on it and a reader checks it alone. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cli/roles.h"

namespace acan::cli {

class ChaosSchedule {
 public:
  // Targets 0..handlers-1 are the handler processes, `handlers` the active manager.
  ChaosSchedule(ProcessChaos chaos, int handlers);

  // Whether it kills anything (an interval is set).
  bool kills() const { return chaos_.interval_s > 0; }

  struct Due {
    std::vector<double> speeds;  // a new interval's speeds by handler; empty: unchanged
    std::vector<int> targets;    // the processes to kill now, each due once in its interval
  };
  // What is due `t_s` seconds into the run. REQUIRES: t_s does not decrease from call to call.
  Due At(double t_s);

  // Handler h's slow-down in the interval the schedule is at (1: full speed): what a handler
  // started now is told on its command line.
  double Speed(int h) const { return SpeedIn(h, interval_); }

 private:
  // When, in interval k, `target` is killed, in seconds from the interval's start, if it is.
  std::optional<double> KillMoment(int target, int64_t k) const;
  // Handler h's slow-down in interval k: speeds[(h + r) % size], with r drawn from (seed, k).
  double SpeedIn(int h, int64_t k) const;

  const ProcessChaos chaos_;
  const int handlers_;
  int64_t interval_ = 0;
  std::vector<std::optional<double>> kill_at_;  // the interval's kills by target, not yet due
};

}  // namespace acan::cli
