// What the training commands share: error printing, and what a person sees of a training run
// (a banner, a progress line, a line per epoch, the outcome).
#pragma once

#include <string>

#include "acan/job.h"
#include "acan/status.h"
#include "acan/train.h"
#include "runtime/api/training.h"
#include "runtime/run/job_runner.h"

namespace acan::cli {

// Prints "acan: <status>" and returns the exit code for it (2 for bad input, 1 otherwise).
int Fail(const Status& s);

// The secure deployment a space URI names (its secure=DIR, else $ACAN_NATS_SECURE), or "".
std::string SecureDirOf(std::string_view uri);

// Whether the artefacts can go into `dir` (`flag` names where it came from in the message): it
// is a directory that can be written, or the nearest existing folder above it is, so that
// WriteArtefacts can create it. Checked before training, which it would otherwise follow; nothing
// is created.
Status CheckOutputDir(const std::string& dir, const std::string& flag = "--out");

// The terminal's view of a run: its callbacks print the banner, a progress line at most twice a
// second (rewritten in place on a terminal) and one per epoch, and the epochs' test figures.
// Quiet: they print nothing.
struct RunPrinter {
  explicit RunPrinter(bool quiet);
  std::function<void(const TrainPlan&)> on_start;
  std::function<void(const TrainProgress&)> on_progress;
  std::function<void(const EpochReport&)> on_epoch;
};

// The outcome lines of a run whose artefacts are in `out_dir`.
void PrintOutcome(const TrainResult& result, const std::string& out_dir);

// A run with the runtime's own options (the experiments): trains with a RunPrinter, writes the
// artefacts into `out_dir` and prints the outcome (unless quiet). The run's details are in
// result.record.
Result<TrainResult> TrainAndReport(const JobConfig& job, runtime::RunOptions options,
                                   const std::string& out_dir, bool quiet);

}  // namespace acan::cli
