// The metrics mapping (metrics_map.h): a LiveSample's progress, controller, handlers, task times
// and space calls as Prometheus counters, gauges and histograms.
#include "runtime/view/metrics_map.h"

#include <string>
#include <vector>

namespace acan::runtime {

namespace {

// Prometheus buckets from a power-of-two histogram: upper bounds 2^(i+1) ns for i in
// [kFirst, kLast], in seconds; what lies below the first bound goes to it, above the last to +Inf.
constexpr size_t kFirst = 9, kLast = 35;  // 1.024 us .. 68.7 s

void AppendLatency(obs::Exposition& e, std::string_view name, std::string_view help,
                   const LatencyHistogram& h, const obs::Labels& labels) {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;
  for (size_t i = kFirst; i <= kLast; ++i) {
    bounds.push_back(double(uint64_t{1} << (i + 1)) / 1e9);
    uint64_t c = h.counts[i];
    if (i == kFirst) {
      for (size_t j = 0; j < kFirst; ++j) c += h.counts[j];
    }
    counts.push_back(c);
  }
  uint64_t above = 0;
  for (size_t j = kLast + 1; j < LatencyHistogram::kBuckets; ++j) above += h.counts[j];
  counts.push_back(above);
  e.Histogram(name, help, bounds, counts, double(h.sum_ns) / 1e9, labels);
}

double EpochLoss(const EpochTotals& t) { return t.rows ? t.loss_sum / double(t.rows) : 0.0; }

}  // namespace

void AppendMetrics(const LiveSample& s, obs::Exposition& e) {
  if (s.progress.total_steps > 0) AppendJobMetrics(s, e);
  AppendProcessMetrics(s, e);
}

void AppendJobMetrics(const LiveSample& s, obs::Exposition& e) {
  const Progress& p = s.progress;
  int64_t samples = 0;
  for (const EpochTotals& t : p.epochs) samples += t.rows;
  e.Counter("acan_steps_applied_total", "Steps whose updates are all applied.",
            double(p.next_step));
  e.Gauge("acan_steps", "Steps the job has in all.", double(p.total_steps));
  e.Counter("acan_samples_total", "Training rows the applied steps covered.", double(samples));
  e.Counter("acan_versions_applied_total", "Parameter versions written (one a shard a step).",
            double(p.versions_applied));
  e.Counter("acan_version_gaps_total", "Updates that found their shard behind (must stay 0).",
            double(p.gaps));
  e.Counter("acan_version_repeats_total", "Versions found written already (must stay 0).",
            double(p.repeats));
  if (!p.epochs.empty()) {
    e.Gauge("acan_training_loss", "Mean training loss of the current epoch so far.",
            EpochLoss(p.epochs.back()));
    e.Gauge("acan_epoch", "The epoch in progress, from 1.", double(p.epochs.size()));
  }
  e.Counter("acan_tasks_dispatched_total", "Task tuples put, first sends and resends.",
            double(p.dispatched));
  for (const auto& [type, n] : p.by_type) {
    e.Counter("acan_tasks_completed_total", "Tasks completed (first reports), by type.", double(n),
              {{"type", type}});
  }
  e.Counter("acan_tasks_retransmitted_total", "Tasks sent again, all reasons.",
            double(p.retransmitted));
  for (const auto& [reason, n] : p.retransmit_reasons) {
    e.Counter("acan_retransmissions_total", "Tasks sent again, by reason.", double(n),
              {{"reason", reason}});
  }
  e.Counter("acan_duplicates_discarded_total", "Reports of tasks already done, dropped.",
            double(p.duplicates_discarded));
  e.Counter("acan_speculative_copies_total",
            "Copies of a slow handler's task sent for a faster one (not retransmissions).",
            double(p.speculated));
  e.Counter("acan_deadlines_extended_total", "Deadlines passed while a live handler held the task.",
            double(p.deadlines_extended));
  for (const auto& [cls, h] : s.task_latency) {
    AppendLatency(e, "acan_task_seconds", "Task time in its handler's hands, by class.", h,
                  {{"class", cls}});
  }
  const ControllerSnapshot& c = s.controller;
  for (const auto& [cls, ms] : c.timeouts_ms) {
    e.Gauge("acan_timeout_seconds", "The controller's current timeout, by task class.", ms / 1e3,
            {{"class", cls}});
  }
  e.Gauge("acan_pouch", "Tasks a handler takes at once (the controller's pouch).", double(c.pouch));
  e.Gauge("acan_task_size", "Rows a task covers.", double(p.task_size));
  e.Gauge("acan_completion_rate", "Share of first sends completed before their deadline.",
          c.completion_rate);
  e.Counter("acan_manager_crashes_total", "Crashes of the active manager.",
            double(s.row.manager_crashes));
  e.Counter("acan_manager_takeovers_total", "Times a standby manager took over.",
            double(p.manager_takeovers));
  e.Counter("acan_stalls_total", "Stall warnings: no step for far longer than the timeouts.",
            double(s.stalls));
  if (s.row.space_tuples >= 0) {
    e.Gauge("acan_space_resident_tuples", "Tuples of the job in the space now.",
            double(s.row.space_tuples));
    e.Gauge("acan_space_resident_bytes", "Value bytes of the job in the space now.",
            double(s.row.space_bytes));
  }
}

void AppendProcessMetrics(const LiveSample& s, obs::Exposition& e) {
  for (const HandlerFigures& h : s.handlers) {
    const obs::Labels l = {{"handler", std::to_string(h.id)}};
    e.Counter("acan_handler_tasks_total", "Tasks a handler ran to completion.", double(h.tasks), l);
  }
  for (const HandlerFigures& h : s.handlers) {
    e.Counter("acan_handler_work_total", "Floats a handler's tasks read and wrote.", double(h.work),
              {{"handler", std::to_string(h.id)}});
  }
  if (!s.handler_times_known) {
    AppendSpaceMetrics(s, e);
    return;
  }
  for (const HandlerFigures& h : s.handlers) {
    e.Counter("acan_handler_busy_seconds_total", "Time a handler spent on tasks it reported.",
              h.busy_s, {{"handler", std::to_string(h.id)}});
  }
  for (const HandlerFigures& h : s.handlers) {
    // Accumulated by the handler as each wait for a task ends, never derived from the run's time
    // less the busy time: that drops when a task longer than the time between scrapes reports,
    // and Prometheus reads a drop as a reset.
    if (h.idle_s < 0) continue;  // not known here
    e.Counter("acan_handler_idle_seconds_total", "Time a handler waited with no task in hand.",
              h.idle_s, {{"handler", std::to_string(h.id)}});
  }
  for (const HandlerFigures& h : s.handlers) {
    e.Counter("acan_handler_lost_seconds_total", "Time spent on tasks a crash lost.", h.lost_s,
              {{"handler", std::to_string(h.id)}});
  }
  for (const HandlerFigures& h : s.handlers) {
    e.Gauge("acan_handler_slowdown", "A handler's injected slow-down (1: full speed).", h.speed,
            {{"handler", std::to_string(h.id)}});
  }
  for (const HandlerFigures& h : s.handlers) {
    e.Counter("acan_handler_crashes_total", "Crashes of a handler (each restarted).",
              double(h.crashes), {{"handler", std::to_string(h.id)}});
  }
  AppendSpaceMetrics(s, e);
}

void AppendSpaceMetrics(const LiveSample& s, obs::Exposition& e) {
  for (size_t op = 0; op < size_t(SpaceOp::kCount); ++op) {
    if (s.space.calls[op] == 0) continue;
    AppendLatency(e, "acan_space_operation_seconds",
                  "Space calls of this process, by operation (waits included).",
                  s.space.latency[op], {{"op", std::string(SpaceOpName(SpaceOp(op)))}});
  }
  e.Counter("acan_space_bytes_put_total", "Value bytes this process put.",
            double(s.space.bytes_put));
  e.Counter("acan_space_bytes_returned_total", "Value bytes the space returned to this process.",
            double(s.space.bytes_returned));
}

}  // namespace acan::runtime
