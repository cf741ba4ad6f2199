// The design note's experiments (DESIGN.md section 8) by name: what `acan experiment NAME` runs.
// Each prints its claims, each judged against a baseline measured apart from the run it judges,
// writes the artefacts of `acan train` plus experiment.json into its output directory, and ends
// with the command's exit code.
//
// An experiment trains through the program that runs it (the CLI shows a run as `acan train` does
// and supervises runs of processes), so the caller hands it a Harness: this module sits below the
// CLI and reaches nothing above it. Stateless; an experiment runs on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"
#include "acan/train.h"
#include "runtime/run/job_runner.h"

namespace acan::experiments {

// A run of the job as processes (`acan train --processes`), as the robustness experiment across
// processes asks for one: `handlers` handler processes, an active manager and a standby over
// `space`, the artefacts and summary.json in `out`.
struct ProcessRun {
  std::string config;  // the job file the processes read
  std::string space;   // a URI; "nats:local" starts a private server in <out>/nats
  std::string out;
  int handlers = 1;
  bool quiet = true;  // no banner, progress or outcome lines
  // Real faults: in every interval of `kill_interval_s` (0: none) each handler process and, with
  // `kill_manager`, the active manager is killed with SIGKILL with probability `kill_probability`
  // and started again; the schedule is a function of `seed`. `speeds`: the handlers' slow-downs,
  // a rotation of them each interval (empty: all at full speed).
  double kill_interval_s = 0;
  double kill_probability = 1.0;
  bool kill_manager = true;
  uint64_t seed = 11;
  std::vector<double> speeds;
};

// What an experiment uses of the program that runs it.
struct Harness {
  // Trains `job` with the runtime's `options`, writes the artefacts into `out_dir` and shows the
  // run as `acan train` does (nothing when `quiet`); the run's details are in result.record.
  std::function<Result<TrainResult>(const JobConfig& job, runtime::RunOptions options,
                                    const std::string& out_dir, bool quiet)>
      train;
  // Runs `job` as processes (its file is run.config); returns the exit code, having printed why
  // when it is not 0.
  std::function<int(const JobConfig& job, const ProcessRun& run)> run_processes;
};

// What the command line chose for one experiment.
struct ExperimentOptions {
  std::string out;     // the artefacts' directory: exists and can be written, or can be made
  bool quick = false;  // a shorter run (each experiment says what it leaves out)
  std::string space;   // robustness across processes: the space of its processes ("": nats:local)
  int processes = 0;   // robustness: this many handler processes; 0: in process
};

// One experiment. run returns the command's exit code: 0 when every claim holds, 1 when one does
// not, a failed process run's own; an error for what stopped the experiment (the caller prints
// it and exits as for any error).
struct Experiment {
  std::string_view name;
  Result<int> (*run)(const ExperimentOptions& options, const Harness& harness);
};

// Every experiment, in the order the note gives them: feasibility, adaptivity, robustness.
const std::vector<Experiment>& Experiments();

// The experiment called `name`; nullptr when there is none.
const Experiment* FindExperiment(std::string_view name);

}  // namespace acan::experiments
