// The artefacts of a run, in one folder: model.safetensors and summary.json (its schema is
// runtime/core/summary.h; docs/operations.md lists the fields). Plain functions.
#pragma once

#include <string>

#include "acan/job.h"
#include "acan/status.h"
#include "common/write_whole.h"
#include "nn/dataset.h"
#include "runtime/core/summary.h"
#include "runtime/run/job_runner.h"

namespace acan::runtime {

struct RunFigures {
  double initial_loss = 0;  // the initial model over the training set
  double final_loss = 0;    // the trained model over the training set
  double accuracy = -1;     // classification: the trained model's accuracy; -1 = regression
};

// Evaluates the initial and trained models on `data`.
Result<RunFigures> Evaluate(const JobConfig& job, const nn::Dataset& data, const nn::Model& init,
                            const RunResult& run);

// summary.json's "recovery": crash-to-redo times against the lost tasks' classes, the manager's.
SummaryRecovery RecoverySummary(const RecoveryStats& stats);

// An in-process run's summary.json, but for the held-out evaluation (api/training.cc adds it).
RunSummary MakeSummary(const JobConfig& job, const RunOptions& options, const RunResult& run,
                       const RunFigures& figures);

// metrics.csv: one row per sample, handler columns h<id>_tasks, h<id>_work (floats its tasks read
// and wrote), h<id>_speed for each of `handler_ids`.
Status WriteMetricsCsv(const std::string& path, const std::vector<MetricsRow>& rows,
                       const std::vector<int>& handler_ids);

// Writes model.safetensors, metrics.csv, trace.json (when traced), summary.json, audit.jsonl (the
// job's audit log, runtime/audit/audit.h) and report.html into `dir` (created when missing).
Status WriteArtefacts(const std::string& dir, const RunResult& run, const RunSummary& summary);

// Writes `records` (JSON lines) to `path` the same way.
Status WriteAuditLines(const std::string& path, const std::vector<std::string>& records);

// Writes <dir>/report.html (runtime/view/report.h) from what is in `dir`; a failure is logged as
// a warning, not returned: the page is a view of artefacts already written.
Status WriteReportOrWarn(const std::string& dir);

}  // namespace acan::runtime
