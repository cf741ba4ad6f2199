#include "runtime/view/live_view.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/write_whole.h"
#include "obs/page.h"

namespace acan::runtime {

namespace {

using nlohmann::json;

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
  for (const HandlerReport& h : s.handlers) {
    const obs::Labels l = {{"handler", std::to_string(h.id)}};
    e.Counter("acan_handler_tasks_total", "Tasks a handler ran to completion.", double(h.tasks), l);
  }
  for (const HandlerReport& h : s.handlers) {
    e.Counter("acan_handler_work_total", "Floats a handler's tasks read and wrote.", double(h.work),
              {{"handler", std::to_string(h.id)}});
  }
  if (!s.handler_times_known) {
    AppendSpaceMetrics(s, e);
    return;
  }
  for (const HandlerReport& h : s.handlers) {
    e.Counter("acan_handler_busy_seconds_total", "Time a handler spent on tasks it reported.",
              h.busy_s, {{"handler", std::to_string(h.id)}});
  }
  for (const HandlerReport& h : s.handlers) {
    // Accumulated by the handler as each wait for a task ends, never derived from the run's time
    // less the busy time: that drops when a task longer than the time between scrapes reports,
    // and Prometheus reads a drop as a reset.
    if (h.idle_s < 0) continue;  // not known here
    e.Counter("acan_handler_idle_seconds_total", "Time a handler waited with no task in hand.",
              h.idle_s, {{"handler", std::to_string(h.id)}});
  }
  for (const HandlerReport& h : s.handlers) {
    e.Counter("acan_handler_lost_seconds_total", "Time spent on tasks a crash lost.", h.lost_s,
              {{"handler", std::to_string(h.id)}});
  }
  for (const HandlerReport& h : s.handlers) {
    e.Gauge("acan_handler_slowdown", "A handler's injected slow-down (1: full speed).", h.speed,
            {{"handler", std::to_string(h.id)}});
  }
  for (const HandlerReport& h : s.handlers) {
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

json RowJson(const MetricsRow& r) {
  auto known = [](int64_t v) { return v >= 0 ? json(v) : json(nullptr); };
  return {{"t_s", r.t_s},
          {"samples_per_s", r.samples_per_s},
          {"step", r.step},
          {"task_size", r.task_size},
          {"pouch", r.pouch},
          {"completion_rate", r.completion_rate},
          {"mean_timeout_ms", r.mean_timeout_ms},
          {"handler_tasks", r.handler_tasks},
          {"handler_work", r.handler_work},
          {"handler_speeds", r.handler_speeds},
          {"handler_crashes", r.handler_crashes},
          {"manager_crashes", r.manager_crashes},
          {"retransmitted", r.retransmitted},
          {"space_tuples", known(r.space_tuples)},
          {"space_bytes", known(r.space_bytes)}};
}

LiveView::LiveView(obs::Labels labels, std::string title, json facts)
    : labels_(std::move(labels)), title_(std::move(title)), facts_(std::move(facts)) {}

void LiveView::OnSample(const LiveSample& sample) {
  std::lock_guard lock(mu_);
  rows_.Push(RowJson(sample.row), /*keep=*/sample.finished);
  last_ = sample;
}

void LiveView::OnEpoch(const EpochPoint& epoch) {
  std::lock_guard lock(mu_);
  epochs_.push_back(epoch);
}

void LiveView::SetFact(const std::string& name, json value) {
  std::lock_guard lock(mu_);
  facts_[name] = std::move(value);
}

void LiveView::SetSource(std::function<LiveSample()> source) { source_ = std::move(source); }

std::string LiveView::MetricsText() const { return Text(/*up=*/true); }

std::string LiveView::FinalMetricsText() const { return Text(/*up=*/false); }

std::string LiveView::Text(bool up) const {
  obs::Exposition e(labels_);
  if (up) e.Gauge("acan_up", "1 while the process serves its metrics.", 1);
  if (source_) {
    AppendMetrics(source_(), e);
    return e.text();
  }
  std::lock_guard lock(mu_);
  if (last_) AppendMetrics(*last_, e);
  return e.text();
}

namespace {

json EpochsJson(const std::vector<EpochPoint>& epochs) {
  json out = json::array();
  for (const EpochPoint& p : epochs) {
    out.push_back({{"epoch", p.epoch},
                   {"loss", p.loss},
                   {"test_loss", p.test_loss ? json(*p.test_loss) : json(nullptr)},
                   {"test_accuracy", p.test_accuracy ? json(*p.test_accuracy) : json(nullptr)}});
  }
  return out;
}

}  // namespace

json LiveView::PageData() const {
  std::lock_guard lock(mu_);
  json d;
  d["title"] = title_;
  json facts = facts_;
  std::vector<int> ids;
  if (last_) {
    const Progress& p = last_->progress;
    facts["step"] = fmt::format("{} / {}", p.next_step, p.total_steps);
    facts["retransmitted"] = p.retransmitted;
    facts["elapsed"] = fmt::format("{:.1f} s", last_->row.t_s);
    for (const HandlerReport& h : last_->handlers) ids.push_back(h.id);
  }
  d["facts"] = facts;
  d["handlers"] = ids;
  d["rows"] = rows_.items();
  d["epochs"] = EpochsJson(epochs_);
  d["finished"] = last_ && last_->finished;
  return d;
}

Result<std::vector<std::unique_ptr<obs::HttpServer>>> ServeLiveView(
    std::shared_ptr<const LiveView> view, int metrics_port, int dashboard_port,
    std::string* metrics_url, std::string* dashboard_url) {
  std::vector<std::unique_ptr<obs::HttpServer>> servers;
  auto serve_metrics = [&](obs::HttpServer& server) {
    server.Get("/metrics", [view] {
      return obs::HttpResponse{200, view->MetricsText(),
                               "text/plain; version=0.0.4; charset=utf-8"};
    });
  };
  std::string chart_js;
  if (dashboard_port >= 0) {
    ACAN_ASSIGN_OR_RETURN(chart_js, obs::ChartJs());
  }
  auto serve_dashboard = [&](obs::HttpServer& server) {
    const std::string page = obs::DashboardPage();
    server.Get("/", [page] { return obs::HttpResponse{200, page, "text/html; charset=utf-8"}; });
    server.Get("/chart.js", [chart_js] {
      return obs::HttpResponse{200, chart_js, "text/javascript; charset=utf-8"};
    });
    server.Get("/api/run", [view] {
      return obs::HttpResponse{200, view->PageData().dump(), "application/json"};
    });
  };
  const bool shared = metrics_port >= 0 && metrics_port == dashboard_port && metrics_port != 0;
  if (metrics_port >= 0) {
    auto server = std::make_unique<obs::HttpServer>();
    serve_metrics(*server);
    if (shared) serve_dashboard(*server);
    ACAN_RETURN_IF_ERROR(server->Start(metrics_port));
    *metrics_url = server->url() + "/metrics";
    if (shared) *dashboard_url = server->url() + "/";
    servers.push_back(std::move(server));
  }
  if (dashboard_port >= 0 && !shared) {
    auto server = std::make_unique<obs::HttpServer>();
    serve_dashboard(*server);
    ACAN_RETURN_IF_ERROR(server->Start(dashboard_port));
    *dashboard_url = server->url() + "/";
    servers.push_back(std::move(server));
  }
  return servers;
}

// ---- the report, from a run directory ----

namespace {

Result<json> ReadJson(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(fmt::format("'{}' is missing", path.string()));
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument(fmt::format("'{}' is not a JSON object", path.string()));
  }
  return j;
}

// One CSV line split at commas outside double quotes.
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// metrics.csv (artefacts.cc writes it) back into rows; handler columns h<id>_tasks/_work/_speed.
Result<json> ReadMetricsCsv(const std::filesystem::path& path, std::vector<int>* handlers) {
  std::ifstream in(path);
  if (!in) return json::array();  // a run without one (the report shows the rest)
  std::string line;
  if (!std::getline(in, line)) return json::array();
  const std::vector<std::string> header = SplitCsv(line);
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const char* needed : {"t_s", "samples_per_s", "step"}) {
    if (!column.count(needed)) {
      return Status::InvalidArgument(
          fmt::format("'{}' has no column '{}' (line 1)", path.string(), needed));
    }
  }
  handlers->clear();
  for (const std::string& h : header) {
    int id = -1;
    if (h.size() > 7 && h[0] == 'h' && h.ends_with("_tasks") &&
        std::sscanf(h.c_str(), "h%d_tasks", &id) == 1) {
      handlers->push_back(id);
    }
  }
  json rows = json::array();
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const std::vector<std::string> cells = SplitCsv(line);
    if (cells.size() != header.size()) {
      return Status::InvalidArgument(fmt::format("'{}' line {}: {} fields, the header has {}",
                                                 path.string(), line_no, cells.size(),
                                                 header.size()));
    }
    auto number = [&](const std::string& name) -> json {
      auto it = column.find(name);
      if (it == column.end() || cells[it->second].empty()) return nullptr;
      char* end = nullptr;
      const double v = std::strtod(cells[it->second].c_str(), &end);
      if (end == cells[it->second].c_str() || *end != '\0') return nullptr;
      return v;
    };
    json row;
    for (const char* name : {"t_s", "samples_per_s", "step", "task_size", "pouch",
                             "completion_rate", "mean_timeout_ms", "handler_crashes",
                             "manager_crashes", "retransmitted", "space_tuples", "space_bytes"}) {
      row[name] = number(name);
    }
    if (row["t_s"].is_null()) {
      return Status::InvalidArgument(
          fmt::format("'{}' line {}: t_s is not a number", path.string(), line_no));
    }
    for (const char* negative : {"space_tuples", "space_bytes"}) {
      if (row[negative].is_number() && row[negative].get<double>() < 0) row[negative] = nullptr;
    }
    json tasks = json::array(), work = json::array(), speeds = json::array();
    for (int id : *handlers) {
      tasks.push_back(number(fmt::format("h{}_tasks", id)));
      work.push_back(number(fmt::format("h{}_work", id)));
      speeds.push_back(number(fmt::format("h{}_speed", id)));
    }
    row["handler_tasks"] = tasks;
    row["handler_work"] = work;
    row["handler_speeds"] = speeds;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

Result<json> ReportData(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  ACAN_ASSIGN_OR_RETURN(json summary, ReadJson(root / "summary.json"));
  std::vector<int> handlers;
  ACAN_ASSIGN_OR_RETURN(json rows, ReadMetricsCsv(root / "metrics.csv", &handlers));
  json d;
  d["title"] = fmt::format("acan run: {}", fs::absolute(root).lexically_normal().string());
  d["rows"] = rows;
  d["handlers"] = handlers;
  d["finished"] = true;
  // Epochs: the training loss of each, with the held-out figures where the run made them.
  json epochs = json::array();
  const json losses = summary.value("loss_per_epoch", json::array());
  const json tests = summary.value("test_per_epoch", json::array());
  for (size_t e = 0; e < losses.size(); ++e) {
    json point = {
        {"epoch", e + 1}, {"loss", losses[e]}, {"test_loss", nullptr}, {"test_accuracy", nullptr}};
    for (const json& t : tests) {
      if (t.value("epoch", 0) == int64_t(e + 1)) {
        point["test_loss"] = t.value("test_loss", json(nullptr));
        point["test_accuracy"] = t.value("test_accuracy", json(nullptr));
      }
    }
    epochs.push_back(point);
  }
  d["epochs"] = epochs;
  // The handlers' mean slow-down over the run, for their share of speed.
  if (!rows.empty() && !handlers.empty()) {
    std::vector<double> sum(handlers.size(), 0);
    for (const json& r : rows) {
      for (size_t h = 0; h < handlers.size(); ++h) {
        const json& v = r["handler_speeds"][h];
        sum[h] += v.is_number() ? v.get<double>() : 1.0;
      }
    }
    json mean = json::array();
    for (double s : sum) mean.push_back(s / double(rows.size()));
    d["mean_speeds"] = mean;
  }
  // Recovery: each lost task's kill (or crash) to its redo, where the run kept them.
  json recovery_ms = json::array();
  const json recovery = summary.value("recovery", json::object());
  for (const json& l : recovery.value("lost", json::array())) {
    if (l.contains("done_ms")) recovery_ms.push_back(l["done_ms"]);
  }
  if (recovery_ms.empty()) recovery_ms = recovery.value("handler_ms", json::array());
  d["recovery_ms"] = recovery_ms;
  d["decisions"] = summary.value("controller", json::object()).value("decisions", json::array());
  json facts = json::object();
  auto fact = [&](const char* name, const json& v) {
    if (!v.is_null()) facts[name] = v;
  };
  fact("strategy", summary.value("strategy", json(nullptr)));
  fact("steps",
       summary.value(
           "steps",
           summary.value("updates", json::object()).value("versions_applied", json(nullptr))));
  if (summary.contains("samples_per_s") && summary["samples_per_s"].is_number()) {
    facts["samples/s"] = fmt::format("{:.0f}", summary["samples_per_s"].get<double>());
  }
  if (summary.contains("test_accuracy") && summary["test_accuracy"].is_number()) {
    facts["test accuracy"] = fmt::format("{:.4f}", summary["test_accuracy"].get<double>());
  }
  if (summary.contains("wall_s") && summary["wall_s"].is_number()) {
    facts["wall"] = fmt::format("{:.1f} s", summary["wall_s"].get<double>());
  }
  const json tasks = summary.value("tasks", json::object());
  fact("retransmitted", tasks.value("retransmitted", json(nullptr)));
  fact("weights", summary.value("weights_sha256", json(nullptr)));
  // The trace, when the run kept one: its retransmissions and crashes, counted.
  std::ifstream trace_in(root / "trace.json");
  if (trace_in) {
    json trace = json::parse(trace_in, nullptr, /*allow_exceptions=*/false);
    if (trace.is_discarded()) {
      return Status::InvalidArgument(
          fmt::format("'{}' is not JSON", (root / "trace.json").string()));
    }
    const json events = trace.is_object() ? trace.value("traceEvents", json::array()) : trace;
    int64_t executions = 0, instants = 0;
    for (const json& ev : events) {
      const std::string ph = ev.is_object() ? ev.value("ph", "") : "";
      executions += ph == "X";
      instants += ph == "i" || ph == "I";
    }
    facts["trace"] = fmt::format("{} task slices, {} events", executions, instants);
  }
  d["facts"] = facts;
  return d;
}

Status WriteReport(const std::string& dir) {
  ACAN_ASSIGN_OR_RETURN(json data, ReportData(dir));
  ACAN_ASSIGN_OR_RETURN(std::string page, obs::ReportPage(data));
  return WriteWhole((std::filesystem::path(dir) / "report.html").string(), page);
}

}  // namespace acan::runtime
