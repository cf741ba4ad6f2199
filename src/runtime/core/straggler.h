// Stragglers: when a copy of a running task on another handler would finish long before the one
// running it (LATE, Zaharia et al., OSDI 2008: the longest approximate time to end). Each
// handler's smoothed kernel time per task class (Controller::ClassOf) comes from its done reports,
// late copies' included; a task held by a live claim is worth a copy when the fastest other
// handler's time for its class is well under what the claimant still has to go. The manager sends
// such copies only for the oldest step in flight (what the window waits on) and only while nothing
// is queued (a handler is idle), so fast processors do the work a slow one holds up instead of
// waiting for it (measured: at speeds 1 and 10 the fast handler waited 3-5 ms a step on the slow
// one's biggest update). Not thread-safe: one manager owns one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "nn/task.h"
#include "runtime/core/controller.h"

namespace acan::runtime {

class StragglerWatch {
 public:
  // `handler` ran `task` (a first copy or a later one) with this kernel time.
  void Observe(int handler, const nn::TaskSpec& task, int64_t exec_ns);
  // `handler`'s smoothed time for tasks of `task`'s class, if it ran one.
  std::optional<double> ExpectedNs(int handler, const nn::TaskSpec& task) const;
  // The handler other than `except` with the shortest smoothed time for `task`'s class, and that
  // time; none when no other handler ran one.
  std::optional<std::pair<int, double>> Fastest(const nn::TaskSpec& task, int except) const;
  // Whether a copy of `task`, held by `claimant` for `elapsed_ns` so far, should go to the
  // fastest other handler: it would finish in less than half of what the claimant has left (its
  // smoothed time less the elapsed time; a claimant without a sample is taken to need
  // kUnknownFactor times the fastest), and the claimant has had the fastest's time already.
  bool WorthACopy(int claimant, const nn::TaskSpec& task, double elapsed_ns) const;
  // How long after its dispatch `task` can still be worth a copy for any claimant, the slowest
  // known and one never seen included, on the times known now; none when no handler ran its
  // class. Past it no claimant qualifies, however long it runs: what it has left only shrinks.
  std::optional<double> WorthACopyUntilNs(const nn::TaskSpec& task) const;

  static constexpr double kSmoothing = 0.25;  // weight of a new sample
  static constexpr double kUnknownFactor = 4;
  // A copy must finish within 1 / kMargin of what the claimant has left.
  static constexpr double kMargin = 2;

 private:
  std::map<Controller::ClassKey, std::map<int, double>> smoothed_ns_;  // class -> handler -> time
};

}  // namespace acan::runtime
