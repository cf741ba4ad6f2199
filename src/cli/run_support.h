// What the training commands share: error printing, the progress line, and one run from job to
// artefacts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "acan/job.h"
#include "acan/status.h"
#include "runtime/artefacts.h"
#include "runtime/job_runner.h"

namespace acan::cli {

// Prints "acan: <status>" and returns the exit code for it (2 for bad input, 1 otherwise).
int Fail(const Status& s);

struct RunOutcome {
  runtime::RunResult run;
  runtime::RunFigures figures;
  nlohmann::json summary;
};

// The run options a job file asks for ([runtime] and [chaos]).
runtime::RunOptions OptionsFromJob(const JobConfig& job);

// Loads the data and the initial model (`init_path`, or the job's init), runs the job with a
// progress line on stderr (unless quiet), evaluates on the job's test split after every epoch and
// at the end, writes the artefacts into `out_dir` and prints the outcome.
Result<RunOutcome> TrainAndReport(const JobConfig& job, runtime::RunOptions options,
                                  const std::string& init_path, const std::string& out_dir,
                                  bool quiet);

}  // namespace acan::cli
