#include "runtime/run/artefacts.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "nn/trainer.h"
#include "runtime/view/report.h"

namespace acan::runtime {

Result<RunFigures> Evaluate(const JobConfig& job, const nn::Dataset& data, const nn::Model& init,
                            const RunResult& run) {
  RunFigures f;
  ACAN_ASSIGN_OR_RETURN(nn::EvalReport before, nn::Evaluate(init, data, job));
  ACAN_ASSIGN_OR_RETURN(nn::EvalReport after, nn::Evaluate(run.model, data, job));
  f.initial_loss = before.loss;
  f.final_loss = after.loss;
  if (data.classification) f.accuracy = after.accuracy;
  return f;
}

SummaryRecovery RecoverySummary(const RecoveryStats& stats) {
  auto quantiles = [](std::vector<double> v) {
    SummaryQuantiles q;
    q.count = int64_t(v.size());
    if (v.empty()) return q;
    std::sort(v.begin(), v.end());
    q.median_ms = v[v.size() / 2];
    q.p95_ms = v[std::min(v.size() - 1, v.size() * 95 / 100)];
    return q;
  };
  // a's median over b's, where both are known and b's is positive.
  auto ratio = [](const SummaryQuantiles& a, const SummaryQuantiles& b) -> std::optional<double> {
    if (!a.median_ms || !b.median_ms || *b.median_ms <= 0) return std::nullopt;
    return *a.median_ms / *b.median_ms;
  };
  SummaryRecovery r;
  r.handler_crash_to_retransmitted_done = quantiles(stats.handler_ms);
  r.manager_crash_to_next_step = quantiles(stats.manager_ms);
  r.task = quantiles(stats.task_ms);
  r.lost_task = quantiles(stats.lost_task_ms);
  r.median_recovery_over_median_task = ratio(r.handler_crash_to_retransmitted_done, r.task);
  r.median_recovery_over_median_lost_task =
      ratio(r.handler_crash_to_retransmitted_done, r.lost_task);
  // Each lost task against the median time of its own class (the same task in the other steps):
  // the median task of a run is often a bias update of a few microseconds, which nobody loses.
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  for (const auto& [cls, v] : stats.task_ms_by_class) r.task_by_class[cls] = quantiles(v);
  std::vector<double> ratios;
  for (size_t i = 0; i < stats.lost_classes.size() && i < stats.handler_ms.size(); ++i) {
    auto it = stats.task_ms_by_class.find(stats.lost_classes[i]);
    const double m = it == stats.task_ms_by_class.end() ? 0 : median(it->second);
    if (m > 0) ratios.push_back(stats.handler_ms[i] / m);
  }
  if (!ratios.empty()) r.median_recovery_over_own_class_median_task = median(ratios);
  // ... and against its class's median at the slow-down its redo ran at (the class's times over
  // their slow-downs, times the redo's): what the processor that redid it usually takes for it.
  // With speeds 1:5:10 a handler that crashes holding a task is often the slow one (it holds its
  // tasks longest), and it takes its own task again once restarted, at its own speed.
  std::vector<double> at_speed;
  for (size_t i = 0;
       i < stats.lost_classes.size() && i < stats.handler_ms.size() && i < stats.lost_speeds.size();
       ++i) {
    auto it = stats.task_ms_by_class_at_full_speed.find(stats.lost_classes[i]);
    const double m = it == stats.task_ms_by_class_at_full_speed.end() ? 0 : median(it->second);
    if (m > 0) at_speed.push_back(stats.handler_ms[i] / (m * stats.lost_speeds[i]));
  }
  if (!at_speed.empty()) r.median_recovery_over_own_class_median_at_speed = median(at_speed);
  for (double s : stats.lost_speeds) ++r.redo_speeds[fmt::format("{:g}", s)];
  r.lost_tasks = stats.lost_tasks;
  r.lost_not_redone = stats.lost_not_redone;
  r.manager_recovery = quantiles(stats.manager_recovery_ms);
  r.handler_ms = stats.handler_ms;  // each one (report.html's histogram)
  if (!stats.manager_recovery_calls.empty()) {
    r.manager_recovery_space_calls_max = double(*std::max_element(
        stats.manager_recovery_calls.begin(), stats.manager_recovery_calls.end()));
  }
  return r;
}

RunSummary MakeSummary(const JobConfig& job, const RunOptions& options, const RunResult& run,
                       const RunFigures& figures) {
  const Progress& p = run.progress;
  RunSummary s;
  s.handlers = options.handlers;
  s.window = options.window;
  s.epochs = job.train.epochs;
  s.steps = p.next_step;  // applied, as a process run's summary says
  s.total_steps = p.total_steps;
  s.loss_per_epoch.emplace();
  for (const EpochTotals& e : p.epochs) {
    s.samples += e.rows;
    s.loss_per_epoch->push_back(e.rows ? e.loss_sum / double(e.rows) : 0.0);
  }
  s.initial_loss = figures.initial_loss;
  s.final_loss = figures.final_loss;
  s.accuracy =
      Stated(figures.accuracy >= 0 ? std::optional<double>(figures.accuracy) : std::nullopt);
  s.wall_s = run.wall_s;
  s.samples_per_s = run.wall_s > 0 ? double(s.samples) / run.wall_s : 0.0;
  s.tasks.dispatched = p.dispatched;
  s.tasks.completed = p.completed;
  s.tasks.retransmitted = p.retransmitted;
  s.tasks.duplicates_discarded = p.duplicates_discarded;
  s.tasks.speculated = p.speculated;
  s.tasks.deadlines_extended = p.deadlines_extended;
  s.tasks.tampered = p.tampered;
  s.tasks.by_type = p.by_type;
  s.tasks.retransmit_reasons = p.retransmit_reasons;
  double total_task_s = 0;
  for (const HandlerFigures& h : run.handlers) total_task_s += h.busy_s + h.lost_s;
  s.compute = SummaryCompute{
      .useful_task_s = p.useful_task_s,
      .total_task_s = total_task_s,
      .extra_compute_ratio = p.useful_task_s > 0 ? total_task_s / p.useful_task_s - 1 : 0.0};
  auto plan = nn::Plan::Create(job, p.task_size);
  s.updates.shards = plan.ok() ? int64_t(plan->shards().size()) : 0;
  s.updates.versions_applied = p.versions_applied;
  s.updates.gaps = p.gaps;
  s.updates.repeats = p.repeats;
  s.per_handler.emplace();
  SummaryCrashes crashes;
  for (const HandlerFigures& h : run.handlers) {
    s.per_handler->push_back({.id = h.id,
                              .tasks = h.tasks,
                              .busy_s = h.busy_s,
                              .work = h.work,
                              .idle_ratio = h.idle_ratio,
                              .speed = h.speed,
                              .crashes = h.crashes,
                              .missing_inputs = h.missing_inputs,
                              .bad_tuples = h.bad_tuples,
                              .reused = h.reused,
                              .memory_budget = h.memory_budget,
                              .peak_held_bytes = h.peak_held_bytes,
                              .refused = h.refused});
    crashes.handlers += h.crashes;
  }
  crashes.manager = run.manager_crashes;
  s.crashes = crashes;
  const ControllerSnapshot& c = run.controller;
  s.controller = SummaryController{.timeout_ms = c.timeouts_ms,
                                   .mean_timeout_ms = c.mean_timeout_ms,
                                   .task_size = p.task_size,
                                   .pouch = c.pouch,
                                   .handler_pouch = run.pouch,
                                   .completion_rate = c.completion_rate,
                                   .decisions = c.decisions};
  s.recovery = RecoverySummary(run.recovery);
  // What the run held in the space: at the end and at the peak, by key class.
  auto resident = [](const ResidentCount& c) {
    return SummaryResident{c.tuples, c.bytes, c.peak_tuples, c.peak_bytes};
  };
  SummarySpace& space = s.space.emplace();
  space.total = resident(run.census.total);
  for (const auto& [cls, c] : run.census.by_class) space.by_class[cls] = resident(c);
  // What this process asked of the space: calls and latency by operation, and the value bytes
  // moved (over a network backend, what crossed the wire; headers aside).
  for (size_t op = 0; op < size_t(SpaceOp::kCount); ++op) {
    const LatencyHistogram& h = run.space.latency[op];
    space.calls[std::string(SpaceOpName(SpaceOp(op)))] = {
        int64_t(run.space.calls[op]), h.QuantileNs(0.5) / 1000.0, h.QuantileNs(0.99) / 1000.0};
  }
  space.bytes_put = int64_t(run.space.bytes_put);
  space.bytes_returned = int64_t(run.space.bytes_returned);
  if (p.next_step > 0) {
    space.bytes_moved_per_step =
        double(run.space.bytes_put + run.space.bytes_returned) / p.next_step;
  }
  s.stalls.emplace();
  for (const StallReport& r : run.stalls) {
    s.stalls->push_back({.t_s = r.t_s,
                         .stalled_s = r.stalled_s,
                         .report = r.ToString(),
                         .steps_in_flight = {r.flight.next_step, r.flight.admitted},
                         .tasks_sent = r.flight.tasks_sent,
                         .tasks_held = r.flight.tasks_held,
                         .manager_incarnations = r.manager_incarnations});
  }
  if (!run.tile_bands.empty()) {
    s.tile_bands.emplace();
    for (const TileBand& b : run.tile_bands) s.tile_bands->push_back({b.edge, b.share, b.budget});
  }
  s.weights_sha256 = nn::ModelSha256(run.model);
  s.strategy = std::string(ToString(job.partition.strategy));
  return s;
}

Status WriteMetricsCsv(const std::string& path, const std::vector<MetricsRow>& rows,
                       const std::vector<int>& handler_ids) {
  std::ofstream out(path);
  const size_t handlers = handler_ids.size();
  out << "t_s,samples_per_s,step,task_size,pouch,completion_rate,mean_timeout_ms";
  for (int id : handler_ids) out << ",h" << id << "_tasks,h" << id << "_work,h" << id << "_speed";
  out << ",handler_crashes,manager_crashes,timeouts_ms,retransmitted,space_tuples,space_bytes\n";
  for (const MetricsRow& r : rows) {
    out << fmt::format("{:.3f},{:.1f},{},{},{},{:.3f},{:.3f}", r.t_s, r.samples_per_s, r.step,
                       r.task_size, r.pouch, r.completion_rate, r.mean_timeout_ms);
    for (size_t h = 0; h < handlers; ++h) {
      out << "," << (h < r.handler_tasks.size() ? r.handler_tasks[h] : 0) << ","
          << (h < r.handler_work.size() ? r.handler_work[h] : 0) << ","
          << (h < r.handler_speeds.size() ? r.handler_speeds[h] : 0);
    }
    out << "," << r.handler_crashes << "," << r.manager_crashes << ",\"";
    bool first = true;
    for (const auto& [cls, ms] : r.timeouts_ms) {
      out << (first ? "" : ";") << cls << "=" << fmt::format("{:.3f}", ms);
      first = false;
    }
    out << "\"," << r.retransmitted << "," << r.space_tuples << "," << r.space_bytes << "\n";
  }
  if (!out) return Status::Unavailable(fmt::format("cannot write '{}'", path));
  return Status::Ok();
}

namespace {
Status WriteMetricsCsv(const std::string& path, const RunResult& run) {
  std::vector<int> ids(run.handlers.size());
  for (size_t h = 0; h < ids.size(); ++h) ids[h] = static_cast<int>(h);
  return WriteMetricsCsv(path, run.metrics, ids);
}
}  // namespace

Status WriteArtefacts(const std::string& dir, const RunResult& run, const RunSummary& summary) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::InvalidArgument(
        fmt::format("cannot create output directory '{}': {}", dir, ec.message()));
  }
  ACAN_RETURN_IF_ERROR(nn::SaveModel(dir + "/model.safetensors", run.model));
  ACAN_RETURN_IF_ERROR(WriteMetricsCsv(dir + "/metrics.csv", run));
  if (run.trace) {
    ACAN_RETURN_IF_ERROR(
        WriteWhole(dir + "/trace.json", run.trace->ToJson(static_cast<int>(run.handlers.size()))));
  }
  ACAN_RETURN_IF_ERROR(WriteSummary(dir + "/summary.json", summary));
  ACAN_RETURN_IF_ERROR(WriteAuditLines(dir + "/audit.jsonl", run.audit));
  return WriteReportOrWarn(dir);
}

Status WriteAuditLines(const std::string& path, const std::vector<std::string>& records) {
  std::string text;
  for (const std::string& r : records) text += r + "\n";
  return WriteWhole(path, text);
}

Status WriteReportOrWarn(const std::string& dir) {
  // The charts are for people: a run that trained is not failed for want of its page.
  if (Status s = WriteReport(dir); !s.ok()) {
    spdlog::warn("acan: report.html not written: {}", s.ToString());
  }
  return Status::Ok();
}

}  // namespace acan::runtime
