// StepRules: the manager's decisions about whole steps, as pure functions beside TaskWatch (which
// decides about the tasks in flight): when a step may be admitted (the sliding window), when a
// task may be sent (the versions it reads exist), which version each copy of a task reads, what a
// done report means, and what finishing a step adds to the job's progress. Nothing here touches a
// space, a thread or a clock; the manager (runtime/manager/) reads and writes the space and asks
// these. Tested synchronously in step_rules_test.cc.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "nn/plan.h"
#include "runtime/core/dataflow.h"
#include "runtime/core/messages.h"
#include "runtime/core/progress.h"

namespace acan::runtime {

// The window (a TCP-like sliding window of `window` steps): step `next` may be admitted while at
// most `window` steps are admitted and unfinished (one more is admitted ahead, its inputs put
// before the versions it reads exist), it is a step of the job, and the oldest shard has reached
// version next - window (so no step reads a version more than `window` behind).
inline bool MayAdmit(int64_t admitted_unfinished, int64_t next, int64_t total_steps,
                     int64_t oldest_version, int window) {
  return admitted_unfinished < window + 1 && next < total_steps && oldest_version >= next - window;
}

// Ready to send: every step tensor `t` reads exists (none missing), and so do the versions it
// reads: an update reads exactly the version it advances (some of its shards may be one past it
// already, when a manager died between applying one of its proposals and the next: it runs again
// on version `step` of all, which stays until every shard is in), any other task at least version
// step - window + 1. `version_of(shard)`: the shard's current version.
template <class VersionOf>
bool ReadyToSend(const StepFlow& st, const StepTask& t, int window, VersionOf&& version_of) {
  if (t.missing > 0) return false;
  const bool update = t.spec.type == nn::TaskType::kUpdate;
  for (const std::string& in : t.spec.inputs) {
    if (!nn::Plan::IsStateKey(in)) continue;
    const int64_t v = version_of(in);
    if (update ? v != st.step && v != st.step + 1 : v < st.step - window + 1) return false;
  }
  return true;
}

// The version of a shard every copy of a task of `step` reads, resolved at its first send: an
// update the version it advances, any other task the newest version then (`current`), no newer
// than its own step's, which stays until the step is complete. So a task run again (its output
// was lost) makes the same bytes.
int64_t VersionToRead(nn::TaskType type, int64_t step, int64_t current);

// What a done report for a task means.
enum class ReportMeaning {
  kLate,           // no step in flight has the task: a late duplicate of a finished step
  kDuplicate,      // the task is done already: a second copy's
  kStaleMissing,   // a copy older than the one in flight found inputs missing, or was refused
  kMissingInputs,  // the copy in flight found inputs missing: bring them back, send again
  kRefused,        // the copy in flight was refused by its handler (over its memory): send again
  kFailed,         // the task failed deterministically: the job stops with its error
  kFirst,          // done for the first time: its outputs exist, its updates are applied
};
// `t`: the task in flight the report is for (nullptr: none).
ReportMeaning MeaningOf(const StepTask* t, const DoneMessage& msg);
// Whether a report's time tells how fast its handler is (every copy that ran, the second too).
inline bool TimesItsHandler(const DoneMessage& msg) {
  return msg.missing.empty() && msg.error.empty() && msg.refused.empty();
}

// The metrics of a finished step: the sum over its metric tensors (each [mean loss, correct])
// of mean loss x rows, and of correct answers.
struct StepMetrics {
  double loss_sum = 0;
  int64_t correct = 0;

  // Adds one metric tensor of a step of `rows` rows. Error: not [loss, correct].
  Status Add(std::span<const float> metric, int64_t rows);
};

// Step `step` (`rows` rows) is finished with `metrics`: its epoch's totals grow (epochs are added
// as they begin, so the state saved at every step holds the epochs so far, not a job's whole
// count), every step before step + 1 is applied, and the job is finished after its last step.
// REQUIRES: step == progress->next_step (steps finish in order).
void FinishStep(Progress* progress, int64_t step, int64_t rows, int64_t batches_per_epoch,
                const StepMetrics& metrics);

}  // namespace acan::runtime
