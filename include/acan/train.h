// Training a job: acan::Train runs one job in this process (a manager with a standby and N handler
// threads over a space, by default the embedded mem:), evaluates it on the job's test split after
// every epoch and at the end, and returns the trained model with the run's figures and its
// summary (the summary.json of `acan train`); WriteArtefacts puts them in a folder.
//
// With window 1 the weights are bitwise those of the single-threaded reference trainer, whatever
// the chaos options inject (crashes, slow handlers). Train blocks until the job is done; its
// callbacks run on the manager's thread, one at a time. Train may be called from several threads
// at once (each call has its own space unless two name the same shared one).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "acan/export.h"
#include "acan/job.h"
#include "acan/model.h"
#include "acan/status.h"

namespace acan {

// Where a job stands, after a step.
struct TrainProgress {
  int64_t step = 0;  // steps applied (the next step to apply)
  int64_t total_steps = 0;
  int64_t steps_per_epoch = 0;
  int64_t epoch = 0;  // 1-based: the epoch of the last applied step (0 before the first)
  int64_t epochs = 0;
  double epoch_loss = 0;  // mean training loss of that epoch so far
  int64_t samples = 0;    // rows trained on so far
  int64_t tasks_completed = 0;
  int64_t tasks_retransmitted = 0;
  // Why each retransmission was sent (reason -> count; docs/operations.md, summary.json `tasks`).
  std::map<std::string, int64_t> retransmit_reasons;
  int64_t duplicates_discarded = 0;
  int64_t versions_applied = 0;  // parameter updates applied, over every shard
  // An update that found its shard behind its step, and a version applied twice: both must stay 0
  // (the manager's own count; the version oracle checks the same from outside).
  int64_t version_gaps = 0;
  int64_t version_repeats = 0;
  int64_t manager_takeovers = 0;
  bool finished = false;
};

// One epoch's figures.
struct EpochReport {
  int64_t epoch = 0;                    // 1-based
  double train_loss = 0;                // mean over the epoch's mini-batches, as trained
  std::optional<double> test_loss;      // when the job has a test split
  std::optional<double> test_accuracy;  // ... and is a classification
};

// What a run is about to do (after the data is loaded, before the first step).
struct TrainPlan {
  std::vector<int64_t> layers;  // the model's widths
  Strategy strategy = Strategy::kData;
  int64_t samples = 0;
  int64_t epochs = 0;
  int64_t total_steps = 0;
  int handlers = 0;
  int64_t window = 1;
  std::string space_uri;
  bool chaos = false;  // faults or slow-downs are injected
  // Where the run shows itself (TrainOptions::metrics_port, dashboard_port); empty: not served.
  std::string metrics_url;    // http://127.0.0.1:PORT/metrics
  std::string dashboard_url;  // http://127.0.0.1:PORT/
};

struct TrainOptions {
  int handlers = 0;            // handler threads; 0: the job's runtime.handlers
  int64_t window = 0;          // update window; 0: the job's runtime.window
  std::string space_uri;       // empty: the job's runtime.space
  std::string job_id = "job";  // the token every key of the job starts with
  // The initial model: `init_model` if set, else the safetensors file `init_path` if given, else
  // the job's model.init.
  std::optional<Model> init_model;
  std::string init_path;
  // Injected faults and slow-downs (the experiments); unset: the job's [chaos] section.
  std::optional<ChaosConfig> chaos;
  bool trace = false;  // record every task execution (WriteArtefacts writes trace.json)
  // Bind handler h to the h-th CPU when there is one per handler and nothing is slowed down.
  bool pin_handlers = false;
  bool evaluate_each_epoch = true;  // on the job's test split, when it has one
  // While it trains, serve Prometheus metrics (text format at /metrics) and the live dashboard
  // (a page of charts at /, its data at /api/run) on 127.0.0.1: a port, 0 for a free one
  // (on_start's TrainPlan says which), -1 for none. One port may serve both.
  int metrics_port = -1;
  int dashboard_port = -1;
  std::function<void(const TrainPlan&)> on_start;
  std::function<void(const TrainProgress&)> on_progress;  // after every step
  std::function<void(const EpochReport&)> on_epoch;       // after every epoch
};

struct HandlerFigures {
  int id = 0;
  int64_t tasks = 0;  // tasks run to completion
  int64_t work = 0;   // floats its tasks read and wrote: work done, independent of timing
  double busy_s = 0;
  double idle_ratio = 0;
  double speed = 1;  // its slow-down factor at the end (1 = full speed)
  int64_t crashes = 0;
};

namespace internal {
struct TrainRecord;  // what WriteArtefacts needs beyond the figures (time series, trace)
}  // namespace internal

struct TrainResult {
  Model model;
  TrainProgress progress;  // at the end
  std::vector<HandlerFigures> handlers;
  std::vector<EpochReport> epochs;
  double initial_loss = 0;               // the initial model over the training set
  double final_loss = 0;                 // the trained model over the training set
  std::optional<double> train_accuracy;  // classification
  std::optional<EvalResult> test;        // on the test split, when the job has one
  double train_s = 0;                    // training alone (the run less its per-epoch evaluations)
  double wall_s = 0;                     // the whole run
  int64_t manager_crashes = 0;
  std::string summary_json;  // summary.json (fields in docs/operations.md)
  std::shared_ptr<const internal::TrainRecord> record;
};

// Loads the job's data and initial model, trains, evaluates. InvalidArgument for a bad job or
// option (naming it), NotFound for missing files, DataLoss for damaged ones.
ACAN_EXPORT Result<TrainResult> Train(const JobConfig& job, const TrainOptions& options = {});

// Writes model.safetensors, summary.json, metrics.csv, metrics.prom (the run's last /metrics page,
// served or not), audit.jsonl and report.html (and trace.json for a traced run) into `dir`,
// created when missing; each file through a temporary one, so none is ever half written.
ACAN_EXPORT Status WriteArtefacts(const std::string& dir, const TrainResult& result);

}  // namespace acan
