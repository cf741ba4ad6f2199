// The dashboard's data (live_view.h): the samples as the page's rows, the epochs, the facts; and
// the metrics page from the last sample (metrics_map.h).
#include "runtime/view/live_view.h"

#include <fmt/format.h>

#include "runtime/view/metrics_map.h"

namespace acan::runtime {

namespace {

using nlohmann::json;

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
  MutexLock lock(mu_);
  rows_.Push(RowJson(sample.row), /*keep=*/sample.finished);
  last_ = sample;
}

void LiveView::OnEpoch(const EpochPoint& epoch) {
  MutexLock lock(mu_);
  epochs_.push_back(epoch);
}

void LiveView::SetFact(const std::string& name, json value) {
  MutexLock lock(mu_);
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
  MutexLock lock(mu_);
  if (last_) AppendMetrics(*last_, e);
  return e.text();
}

json LiveView::PageData() const {
  MutexLock lock(mu_);
  json d;
  d["title"] = title_;
  json facts = facts_;
  std::vector<int> ids;
  if (last_) {
    const Progress& p = last_->progress;
    facts["step"] = fmt::format("{} / {}", p.next_step, p.total_steps);
    facts["retransmitted"] = p.retransmitted;
    facts["elapsed"] = fmt::format("{:.1f} s", last_->row.t_s);
    for (const HandlerFigures& h : last_->handlers) ids.push_back(h.id);
  }
  d["facts"] = facts;
  d["handlers"] = ids;
  d["rows"] = rows_.items();
  d["epochs"] = EpochsJson(epochs_);
  d["finished"] = last_ && last_->finished;
  return d;
}

}  // namespace acan::runtime
