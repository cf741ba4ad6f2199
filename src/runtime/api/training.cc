#include "runtime/api/training.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "nn/dataset.h"
#include "nn/evaluate.h"
#include "nn/model_api_internal.h"
#include "nn/plan.h"
#include "obs/http_server.h"
#include "runtime/run/process.h"
#include "runtime/view/live_view.h"
#include "runtime/view/serve.h"

namespace acan {
namespace runtime {

RunOptions RunOptionsFromJob(const JobConfig& job) {
  RunOptions o;
  o.handlers = static_cast<int>(job.runtime.handlers);
  o.window = job.runtime.window;
  o.speculate = job.runtime.speculate;
  o.space_uri = job.runtime.space;
  o.handler_memory = job.runtime.handler_memory;
  o.manager_memory = job.runtime.manager_memory;
  if (job.chaos.enabled) o.chaos = ChaosOptions::FromConfig(job.chaos, job.train.seed);
  return o;
}

Result<nn::Model> InitialModelFor(const JobConfig& job, const std::optional<nn::Model>& init,
                                  const std::string& init_path) {
  nn::Model m;
  if (init) {
    m = *init;
  } else {
    ACAN_ASSIGN_OR_RETURN(
        m, init_path.empty() ? nn::InitialModel(job) : nn::LoadJobModel(init_path, job));
  }
  if (m.widths != job.model.layers) {
    return Status::InvalidArgument(
        fmt::format("the initial model's widths [{}] are not the job's model.layers [{}]",
                    fmt::join(m.widths, ", "), fmt::join(job.model.layers, ", ")));
  }
  return m;
}

bool AdaptsTaskSize(const JobConfig& job) {
  return job.partition.task_size == 0 && job.partition.strategy != Strategy::kChain;
}

TrainProgress ToTrainProgress(const Progress& p, int64_t steps_per_epoch, int64_t epochs) {
  TrainProgress out;
  out.step = p.next_step;
  out.total_steps = p.total_steps;
  out.steps_per_epoch = steps_per_epoch;
  out.epochs = epochs;
  if (p.next_step > 0 && steps_per_epoch > 0) {
    const int64_t e = std::min<int64_t>((p.next_step - 1) / steps_per_epoch, epochs - 1);
    out.epoch = e + 1;
    if (size_t(e) < p.epochs.size() && p.epochs[e].rows > 0) {
      out.epoch_loss = p.epochs[e].loss_sum / double(p.epochs[e].rows);
    }
  }
  for (const EpochTotals& e : p.epochs) out.samples += e.rows;
  out.tasks_completed = p.completed;
  out.tasks_retransmitted = p.retransmitted;
  out.retransmit_reasons = p.retransmit_reasons;
  out.duplicates_discarded = p.duplicates_discarded;
  out.versions_applied = p.versions_applied;
  out.version_gaps = p.gaps;
  out.version_repeats = p.repeats;
  out.manager_takeovers = p.manager_takeovers;
  out.finished = p.finished;
  return out;
}

namespace {
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

Result<TrainResult> TrainJob(const JobConfig& job, RunOptions options,
                             const TrainSettings& settings, const RunHooks& hooks) {
  TuneProcess();
  ACAN_ASSIGN_OR_RETURN(nn::Dataset data, nn::LoadDataset(job));
  ACAN_ASSIGN_OR_RETURN(nn::Model init, InitialModelFor(job, settings.init, settings.init_path));
  ACAN_ASSIGN_OR_RETURN(std::optional<nn::Dataset> test, nn::LoadTestDataset(job, data));
  nn::Batcher batcher(&data, nn::Plan::StepBatch(job, options.task_size, data.rows),
                      job.data.shuffle, job.train.seed);
  const int64_t steps_per_epoch = batcher.BatchesPerEpoch();
  const int64_t epochs = job.train.epochs;

  // The training loss of each epoch as its last step is applied (for the epoch report, which the
  // manager's thread makes right after), kept only then: the progress is a sizeable copy.
  std::vector<double> epoch_loss(epochs, 0.0);
  options.on_progress = [&](const Progress& p) {
    const int64_t e = (p.next_step - 1) / steps_per_epoch;
    if (p.next_step % steps_per_epoch == 0 && e < epochs && size_t(e) < p.epochs.size() &&
        p.epochs[e].rows > 0) {
      epoch_loss[e] = p.epochs[e].loss_sum / double(p.epochs[e].rows);
    }
    if (settings.on_progress) settings.on_progress(ToTrainProgress(p, steps_per_epoch, epochs));
  };
  // What the run shows while it goes: /metrics and the dashboard (runtime/view/live_view.h); and,
  // served or not, its last metrics page when it is over (metrics.prom).
  auto live = std::make_shared<LiveView>(
      obs::Labels{{"job", options.job_token}, {"role", "trainer"}},
      fmt::format("acan: training {} on {}", fmt::join(job.model.layers, "-"), options.space_uri),
      nlohmann::json{{"strategy", std::string(ToString(job.partition.strategy))},
                     {"handlers", options.handlers},
                     {"window", options.window}});
  options.on_sample = [live, previous = options.on_sample](const LiveSample& s) {
    live->OnSample(s);
    if (previous) previous(s);
  };
  std::vector<std::unique_ptr<obs::HttpServer>> servers;
  std::string metrics_url, dashboard_url;
  if (settings.metrics_port >= 0 || settings.dashboard_port >= 0) {
    ACAN_ASSIGN_OR_RETURN(
        servers, ServeLiveView(live, settings.metrics_port, settings.dashboard_port, &metrics_url,
                               &dashboard_url));
  }
  // Held-out evaluation after every epoch (its time is reported apart from training's).
  std::vector<EpochReport> reports;
  std::vector<SummaryTestEpoch> per_epoch;
  double eval_s = 0;
  Status eval_error;
  options.on_epoch_end = [&](int64_t epoch, const nn::Model& model) {
    EpochReport report;
    report.epoch = epoch + 1;
    if (epoch < epochs) report.train_loss = epoch_loss[epoch];
    if (test && settings.evaluate_each_epoch) {
      const auto start = Clock::now();
      auto r = nn::Evaluate(model, *test, job);
      eval_s += Seconds(Clock::now() - start);
      if (!r.ok()) {
        eval_error = r.status();
        return;
      }
      report.test_loss = r->loss;
      if (test->classification) report.test_accuracy = r->accuracy;
      per_epoch.push_back({epoch + 1, r->loss, r->accuracy});
    }
    reports.push_back(report);
    live->OnEpoch({report.epoch, report.train_loss, report.test_loss, report.test_accuracy});
    if (settings.on_epoch) settings.on_epoch(report);
  };
  if (settings.on_start) {
    TrainPlan plan;
    plan.layers = job.model.layers;
    plan.strategy = job.partition.strategy;
    plan.samples = data.rows;
    plan.epochs = epochs;
    plan.total_steps = steps_per_epoch * epochs;
    plan.handlers = options.handlers;
    plan.window = options.window;
    plan.space_uri = options.space_uri;
    plan.chaos = !options.chaos.speeds.empty() || options.chaos.crash_interval_s > 0 ||
                 options.chaos.relative();
    plan.metrics_url = metrics_url;
    plan.dashboard_url = dashboard_url;
    settings.on_start(plan);
  }

  auto record = std::make_shared<internal::TrainRecord>();
  ACAN_ASSIGN_OR_RETURN(record->run, RunJob(job, data, init, options, hooks));
  ACAN_RETURN_IF_ERROR(eval_error);
  record->metrics_prom = live->FinalMetricsText();
  ACAN_ASSIGN_OR_RETURN(record->figures, Evaluate(job, data, init, record->run));
  const RunResult& run = record->run;
  RunSummary& summary = record->summary;
  summary = MakeSummary(job, options, run, record->figures);

  TrainResult result;
  const double in_run_eval_s = eval_s;
  if (test) {
    const auto start = Clock::now();
    ACAN_ASSIGN_OR_RETURN(nn::EvalReport final_eval, nn::Evaluate(run.model, *test, job));
    eval_s += Seconds(Clock::now() - start);
    summary.test_rows = final_eval.rows;
    summary.test_loss = Stated(final_eval.loss);
    summary.test_accuracy =
        Stated(data.classification ? std::optional<double>(final_eval.accuracy) : std::nullopt);
    summary.per_class_accuracy = final_eval.per_class_accuracy;
    summary.test_per_epoch = std::move(per_epoch);
    result.test = nn::ToPublicEval(final_eval, "test", data.classification);
  } else {
    summary.test_loss = Stated(std::nullopt);
    summary.test_accuracy = Stated(std::nullopt);
  }
  summary.eval_s = eval_s;
  // Training alone: the run's wall time less the per-epoch evaluations made inside it.
  summary.train_s = run.wall_s - in_run_eval_s;

  result.model = nn::ToPublicModel(run.model);
  result.progress = ToTrainProgress(run.progress, steps_per_epoch, epochs);
  for (const HandlerFigures& h : run.handlers) {
    result.handlers.push_back({h.id, h.tasks, h.work, h.busy_s, h.idle_ratio, h.speed, h.crashes});
  }
  result.epochs = std::move(reports);
  result.initial_loss = record->figures.initial_loss;
  result.final_loss = record->figures.final_loss;
  if (record->figures.accuracy >= 0) result.train_accuracy = record->figures.accuracy;
  result.train_s = run.wall_s - in_run_eval_s;
  result.wall_s = run.wall_s;
  result.manager_crashes = run.manager_crashes;
  result.summary_json = SummaryText(summary);
  result.record = std::move(record);
  return result;
}

}  // namespace runtime

Result<TrainResult> Train(const JobConfig& job, const TrainOptions& options) {
  JobConfig resolved = job;
  if (options.chaos) {
    resolved.chaos = *options.chaos;
    resolved.chaos.enabled = true;
  }
  if (options.handlers != 0) resolved.runtime.handlers = options.handlers;
  if (options.window != 0) resolved.runtime.window = options.window;
  if (!options.space_uri.empty()) resolved.runtime.space = options.space_uri;
  ACAN_RETURN_IF_ERROR(ValidateJob(resolved));
  runtime::RunOptions o = runtime::RunOptionsFromJob(resolved);
  ACAN_ASSIGN_OR_RETURN(Key token, Key::Parse(options.job_id));
  o.job_token = token.str();
  o.adapt_task_size = runtime::AdaptsTaskSize(job);
  if (options.trace) o.trace = std::make_shared<runtime::TraceRecorder>();
  o.pin_handlers = options.pin_handlers;
  runtime::TrainSettings s;
  if (options.init_model) s.init = nn::FromPublicModel(*options.init_model);
  s.init_path = options.init_path;
  s.evaluate_each_epoch = options.evaluate_each_epoch;
  s.metrics_port = options.metrics_port;
  s.dashboard_port = options.dashboard_port;
  s.on_start = options.on_start;
  s.on_progress = options.on_progress;
  s.on_epoch = options.on_epoch;
  return runtime::TrainJob(resolved, std::move(o), s);
}

Status WriteArtefacts(const std::string& dir, const TrainResult& result) {
  if (!result.record) {
    return Status::InvalidArgument("WriteArtefacts needs a TrainResult returned by acan::Train");
  }
  ACAN_RETURN_IF_ERROR(runtime::WriteArtefacts(dir, result.record->run, result.record->summary));
  return acan::WriteWhole((std::filesystem::path(dir) / "metrics.prom").string(),
                          result.record->metrics_prom);
}

}  // namespace acan
