// One training run from a job to its outcome, the one place that builds it: loads the data and
// the initial model, runs the job (RunJob), evaluates on the test split after every epoch and at
// the end, and builds summary.json. acan::Train (acan/train.h) is this with the job's run options;
// the experiments call it with their own (injected chaos, restart delays) and read the details
// of the run from TrainResult::record. Printing is the caller's.
#pragma once

#include <optional>
#include <string>

#include "acan/job.h"
#include "acan/train.h"
#include "nn/model.h"
#include "runtime/run/artefacts.h"
#include "runtime/run/job_runner.h"

namespace acan {
namespace internal {
// The run behind a TrainResult.
struct TrainRecord {
  runtime::RunResult run;
  runtime::RunFigures figures;
  runtime::RunSummary summary;  // summary.json (runtime/core/summary.h)
  // The run's last /metrics page without acan_up (LiveView::FinalMetricsText): metrics.prom.
  std::string metrics_prom;
};
}  // namespace internal

namespace runtime {

// The run options a job file asks for: [runtime] (handlers, window, space) and [chaos], seeded
// by train.seed. The one copy from the job file into the runtime's options.
RunOptions RunOptionsFromJob(const JobConfig& job);

// True when the controller chooses (and may change) the task size: partition.task_size = 0,
// except for the chain strategy, whose task size fixes what a step is (chosen once).
bool AdaptsTaskSize(const JobConfig& job);

// What a training run does besides running the job.
struct TrainSettings {
  std::optional<nn::Model> init;  // the initial model; unset: init_path, else the job's
  std::string init_path;
  bool evaluate_each_epoch = true;
  int metrics_port = -1;    // TrainOptions::metrics_port
  int dashboard_port = -1;  // TrainOptions::dashboard_port
  std::function<void(const TrainPlan&)> on_start;
  std::function<void(const TrainProgress&)> on_progress;
  std::function<void(const EpochReport&)> on_epoch;
};

// A run's initial model: `init` if set, else the safetensors file `init_path` if given, else the
// job's model.init; InvalidArgument when its widths are not the job's model.layers.
Result<nn::Model> InitialModelFor(const JobConfig& job, const std::optional<nn::Model>& init,
                                  const std::string& init_path);

// The public view of a job's progress.
TrainProgress ToTrainProgress(const Progress& p, int64_t steps_per_epoch, int64_t epochs);

// Trains `job` with `options` (options.on_progress and on_epoch_end are the settings' to set).
Result<TrainResult> TrainJob(const JobConfig& job, RunOptions options,
                             const TrainSettings& settings, const RunHooks& hooks = {});

}  // namespace runtime
}  // namespace acan
