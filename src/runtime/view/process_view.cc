#include "runtime/view/process_view.h"

#include <algorithm>
#include <tuple>

#include "runtime/core/messages.h"
#include "runtime/core/progress.h"

namespace acan::runtime {

ProcessView::ProcessView(const Layout& layout, std::shared_ptr<LiveView> view, int handlers,
                         std::chrono::milliseconds interval)
    : layout_(layout), view_(std::move(view)), interval_(interval), last_row_at_(start_) {
  for (int h = 0; h < handlers; ++h) {
    HandlerFigures r;
    r.id = h;
    handlers_.push_back(r);
  }
  speeds_.assign(size_t(std::max(handlers, 0)), 1.0);
}

void ProcessView::OnPut(const Key& key, const Value& value) {
  auto parsed = layout_.Parse(key);
  if (!parsed.ok()) return;
  if (parsed->kind == KeyKind::kDone) {
    auto done = DecodeDoneMessage(value);
    if (!done.ok() || !done->error.empty() || !done->missing.empty()) return;
    MutexLock lock(mu_);
    if (done->handler < 0 || size_t(done->handler) >= handlers_.size()) return;
    HandlerFigures& h = handlers_[size_t(done->handler)];
    const int64_t in_hand = done->in_hand_ns > 0 ? done->in_hand_ns : done->exec_ns;
    h.tasks++;
    h.busy_s += double(in_hand) / 1e9;
    task_latency_[Layout::TaskClass(parsed->task_key)].Record(
        uint64_t(std::max<int64_t>(in_hand, 0)));
    return;
  }
  if (parsed->kind != KeyKind::kManagerState) return;
  auto p = Progress::FromJson(value.AsString());
  if (!p.ok()) return;
  MutexLock lock(mu_);
  progress_ = std::move(*p);
  if (Clock::now() - last_sample_ >= interval_ || progress_.finished) {
    SampleLocked(progress_.finished);
  }
}

void ProcessView::SetCrashes(int64_t handlers, int64_t manager) {
  MutexLock lock(mu_);
  handler_kills_ = handlers;
  manager_kills_ = manager;
}

void ProcessView::SetSpeeds(std::vector<double> speeds) {
  MutexLock lock(mu_);
  speeds_ = std::move(speeds);
}

void ProcessView::SetResident(std::function<std::pair<int64_t, int64_t>()> resident) {
  resident_ = std::move(resident);
}

void ProcessView::Finish() {
  MutexLock lock(mu_);
  SampleLocked(true);
}

void ProcessView::SampleLocked(bool finished) {
  last_sample_ = Clock::now();
  LiveSample s;
  s.row = RunMetrics(progress_, ControllerSnapshot{}, start_, &last_row_at_, &last_samples_);
  s.row.pouch = 0;
  s.row.handler_crashes = handler_kills_;
  s.row.manager_crashes = manager_kills_;
  if (resident_) std::tie(s.row.space_tuples, s.row.space_bytes) = resident_();
  for (size_t h = 0; h < handlers_.size(); ++h) {
    s.row.handler_tasks.push_back(handlers_[h].tasks);
    // The work a report stands for is its time in hand: the share the page plots.
    s.row.handler_work.push_back(int64_t(handlers_[h].busy_s * 1e6));
    s.row.handler_speeds.push_back(h < speeds_.size() ? speeds_[h] : 1.0);
  }
  s.progress = progress_;
  s.handlers = handlers_;
  for (size_t h = 0; h < s.handlers.size() && h < speeds_.size(); ++h) {
    s.handlers[h].speed = speeds_[h];
  }
  s.task_latency = task_latency_;
  s.finished = finished;
  view_->OnSample(s);
}

}  // namespace acan::runtime
