// LiveView: what a running job shows while it goes, from the samples the run takes
// (RunOptions::on_sample) and the epochs as they end: its Prometheus metrics page (/metrics, from
// the last sample through metrics_map.h) and the dashboard's data (api/run, the page of
// src/obs/page.html). ServeLiveView (serve.h) serves it; report.h builds the same data from a run
// directory afterwards for report.html.
// Thread-safe: samples arrive on the run's thread, scrapes on the HTTP server's.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/thread_annotations.h"
#include "obs/exposition.h"
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

  mutable Mutex mu_;
  const obs::Labels labels_;
  const std::string title_;
  nlohmann::json facts_ GUARDED_BY(mu_);
  std::optional<LiveSample> last_ GUARDED_BY(mu_);
  std::function<LiveSample()> source_;
  // The samples, bounded (runtime/core/decimated.h).
  Decimated<nlohmann::json> rows_ GUARDED_BY(mu_);
  std::vector<EpochPoint> epochs_ GUARDED_BY(mu_);
};

// A metrics row as the page plots it.
nlohmann::json RowJson(const MetricsRow& row);

}  // namespace acan::runtime
