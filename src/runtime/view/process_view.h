// ProcessView: what the supervisor of a run of processes shows of the job (its dashboard and
// /metrics), from the puts it watches at the server (NatsSpace::WatchPuts): the manager's state
// after every step (progress, loss) and the handlers' reports (tasks, time in hand, by handler),
// with the kills and speeds the supervisor knows itself. Sampled into a LiveView at most every
// `interval`. Thread-safe: puts arrive on a libnats thread, kills on the supervisor's.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "acan/key.h"
#include "acan/value.h"
#include "common/thread_annotations.h"
#include "runtime/core/layout.h"
#include "runtime/view/live_view.h"

namespace acan::runtime {

class ProcessView {
 public:
  ProcessView(const Layout& layout, std::shared_ptr<LiveView> view, int handlers,
              std::chrono::milliseconds interval = std::chrono::milliseconds(500));

  void OnPut(const Key& key, const Value& value);
  void SetCrashes(int64_t handlers, int64_t manager);
  void SetSpeeds(std::vector<double> speeds);
  // What the space holds now (tuples, value bytes), asked at each sample (e.g. the server's
  // stream counts through a connection other than the watch's). Before the first put.
  void SetResident(std::function<std::pair<int64_t, int64_t>()> resident);
  // A last sample (the job is over).
  void Finish();

 private:
  void SampleLocked(bool finished) REQUIRES(mu_);

  const Layout layout_;
  const std::shared_ptr<LiveView> view_;
  const std::chrono::milliseconds interval_;
  const Clock::time_point start_ = Clock::now();
  std::function<std::pair<int64_t, int64_t>()> resident_;
  Mutex mu_;
  Progress progress_ GUARDED_BY(mu_);  // the last state put
  std::vector<HandlerFigures> handlers_ GUARDED_BY(mu_);
  std::vector<double> speeds_ GUARDED_BY(mu_);
  std::map<std::string, LatencyHistogram> task_latency_ GUARDED_BY(mu_);
  int64_t handler_kills_ GUARDED_BY(mu_) = 0;
  int64_t manager_kills_ GUARDED_BY(mu_) = 0;
  Clock::time_point last_sample_ GUARDED_BY(mu_) = {};
  Clock::time_point last_row_at_ GUARDED_BY(mu_);
  int64_t last_samples_ GUARDED_BY(mu_) = 0;
};

}  // namespace acan::runtime
