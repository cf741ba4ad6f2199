// The offline report (report.h): summary.json (ReadSummary, runtime/core/summary.h), metrics.csv
// (ReadMetricsCsv, the rows artefacts.cc writes read back) and trace.json into the page's data,
// then report.html.
#include "runtime/view/report.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "common/write_whole.h"
#include "obs/page.h"
#include "runtime/core/summary.h"

namespace acan::runtime {

namespace {

using nlohmann::json;

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
  ACAN_ASSIGN_OR_RETURN(RunSummary summary, ReadSummary((root / "summary.json").string()));
  std::vector<int> handlers;
  ACAN_ASSIGN_OR_RETURN(json rows, ReadMetricsCsv(root / "metrics.csv", &handlers));
  json d;
  d["title"] = fmt::format("acan run: {}", fs::absolute(root).lexically_normal().string());
  d["rows"] = rows;
  d["handlers"] = handlers;
  d["finished"] = true;
  // Epochs: the training loss of each, with the held-out figures where the run made them.
  json epochs = json::array();
  const std::vector<double> losses = summary.loss_per_epoch.value_or(std::vector<double>{});
  const std::vector<SummaryTestEpoch> tests =
      summary.test_per_epoch.value_or(std::vector<SummaryTestEpoch>{});
  for (size_t e = 0; e < losses.size(); ++e) {
    json point = {
        {"epoch", e + 1}, {"loss", losses[e]}, {"test_loss", nullptr}, {"test_accuracy", nullptr}};
    for (const SummaryTestEpoch& t : tests) {
      if (t.epoch == int64_t(e + 1)) {
        point["test_loss"] = t.test_loss;
        point["test_accuracy"] = t.test_accuracy;
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
  if (summary.recovery) {
    for (const LostTaskTrace& l : summary.recovery->lost.value_or(std::vector<LostTaskTrace>{})) {
      recovery_ms.push_back(l.done_ms);
    }
    if (recovery_ms.empty()) recovery_ms = summary.recovery->handler_ms;
  }
  d["recovery_ms"] = recovery_ms;
  d["decisions"] = summary.controller ? json(summary.controller->decisions) : json::array();
  json facts = json::object();
  facts["strategy"] = summary.strategy;
  // Steps applied, never versions applied (a step applies a version of every shard it updates).
  d["steps"] = summary.steps;
  if (summary.total_steps) d["total_steps"] = *summary.total_steps;
  facts["steps"] = summary.steps;
  if (summary.samples_per_s) facts["samples/s"] = fmt::format("{:.0f}", *summary.samples_per_s);
  if (auto accuracy = summary.test_accuracy.value_or(std::nullopt)) {
    facts["test accuracy"] = fmt::format("{:.4f}", *accuracy);
  }
  if (summary.wall_s) facts["wall"] = fmt::format("{:.1f} s", *summary.wall_s);
  facts["retransmitted"] = summary.tasks.retransmitted;
  facts["weights"] = summary.weights_sha256;
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
