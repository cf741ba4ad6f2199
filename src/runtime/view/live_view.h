// LiveView: what a running job shows while it goes: its Prometheus metrics (/metrics) and the
// dashboard's data (api/run, the page of src/obs/page.html), from the samples the run takes
// (RunOptions::on_sample) and the epochs as they end. ReportData builds the same data from a run
// directory afterwards (summary.json, metrics.csv, trace.json) for report.html.
// Thread-safe: samples arrive on the run's thread, scrapes on the HTTP server's.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "obs/exposition.h"
#include "obs/http_server.h"
#include "runtime/core/decimated.h"
#include "runtime/core/records.h"

namespace acan::runtime {

struct EpochPoint {
  int64_t epoch = 0;  // from 1
  double loss = 0;    // the epoch's mean training loss
  std::optional<double> test_loss, test_accuracy;
};

class LiveView {
 public:
  // `labels`: on every metric (job, role); `title` and `facts` head the page.
  LiveView(obs::Labels labels, std::string title, nlohmann::json facts = nlohmann::json::object());

  void OnSample(const LiveSample& sample);
  // Instead of samples pushed: asks `source` at every scrape (a process whose figures are
  // counters it can read at any time, e.g. a handler's). Before serving.
  void SetSource(std::function<LiveSample()> source);
  void OnEpoch(const EpochPoint& epoch);
  // Adds to the page's facts (e.g. the final figures).
  void SetFact(const std::string& name, nlohmann::json value);

  // The metrics page in the text exposition format (empty of run figures before a sample).
  std::string MetricsText() const;
  // The same page without acan_up, for a file that outlives the server: after the run's last
  // sample (LiveSample::finished), its final figures (metrics.prom).
  std::string FinalMetricsText() const;
  nlohmann::json PageData() const;

 private:
  std::string Text(bool up) const;

  mutable std::mutex mu_;
  const obs::Labels labels_;
  const std::string title_;
  nlohmann::json facts_;            // GUARDED_BY(mu_)
  std::optional<LiveSample> last_;  // GUARDED_BY(mu_)
  std::function<LiveSample()> source_;
  Decimated<nlohmann::json>
      rows_;  // GUARDED_BY(mu_): the samples, bounded (runtime/core/decimated.h)
  std::vector<EpochPoint> epochs_;  // GUARDED_BY(mu_)
};

// Serves `view` on 127.0.0.1: /metrics on `metrics_port`, the dashboard (/, /chart.js, /api/run)
// on `dashboard_port` (0: a free port; -1: not served; one server for both when they are equal).
// The URLs go to `metrics_url` and `dashboard_url`. Errors: a port that cannot be bound, Chart.js
// missing (obs::ChartJs).
Result<std::vector<std::unique_ptr<obs::HttpServer>>> ServeLiveView(
    std::shared_ptr<const LiveView> view, int metrics_port, int dashboard_port,
    std::string* metrics_url, std::string* dashboard_url);

// The metrics of one sample (see docs/observability.md for the names): the job's (progress,
// controller, crashes; only where the sample has a progress, i.e. from a manager) and the
// process's (its handlers, task times, space calls).
void AppendMetrics(const LiveSample& s, obs::Exposition& e);
void AppendJobMetrics(const LiveSample& s, obs::Exposition& e);
void AppendProcessMetrics(const LiveSample& s, obs::Exposition& e);
void AppendSpaceMetrics(const LiveSample& s, obs::Exposition& e);

// A metrics row as the page plots it.
nlohmann::json RowJson(const MetricsRow& row);

// The page's data from a finished run's directory: summary.json (needed), metrics.csv and
// trace.json (when there). InvalidArgument naming the file and what is wrong with it.
Result<nlohmann::json> ReportData(const std::string& dir);

// Writes <dir>/report.html from the run directory (ReportData, obs::ReportPage).
Status WriteReport(const std::string& dir);

}  // namespace acan::runtime
