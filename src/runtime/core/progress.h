// Progress: the counters a job accumulates, persisted by the manager in the space (so a new
// manager continues them) and reported in summary.json. Plain value; JSON round trip.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "acan/status.h"

namespace acan::runtime {

struct EpochTotals {
  double loss_sum = 0;  // sum over steps of (mean mini-batch loss * rows)
  int64_t correct = 0;
  int64_t rows = 0;
};

struct Progress {
  int64_t next_step = 0;  // every step before this one is applied
  int64_t total_steps = 0;
  bool finished = false;
  int64_t dispatched = 0;
  int64_t completed = 0;
  int64_t retransmitted = 0;
  int64_t duplicates_discarded = 0;
  // Copies of stragglers' tasks for faster handlers (runtime/core/straggler.h): neither dispatched
  // nor retransmitted (nothing was lost); the copy that loses is a discarded duplicate.
  int64_t speculated = 0;
  int64_t deadlines_extended = 0;  // deadlines passed while a live handler held the task
  int64_t inputs_restored = 0;     // step inputs put again after a handler found them missing
  int64_t tampered = 0;  // handlers' outputs refused (not their writer's bytes) and made again
  std::map<std::string, int64_t> by_type;             // completed tasks per type
  std::map<std::string, int64_t> retransmit_reasons;  // reason -> count
  double useful_task_s = 0;                           // first completions only
  int64_t versions_applied = 0;
  int64_t gaps = 0;     // an update found its shard behind the step (must stay 0)
  int64_t repeats = 0;  // a version applied twice (must stay 0)
  int64_t manager_takeovers = 0;
  std::vector<EpochTotals> epochs;
  int64_t task_size = 0;
  // The controller's mean task time per class (Controller::MeanTaskNs): a new manager starts
  // its timeouts from these instead of probing again.
  std::map<std::string, double> task_ns;

  std::string ToJson() const;
  static Result<Progress> FromJson(std::string_view text);
};

}  // namespace acan::runtime
