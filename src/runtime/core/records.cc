#include "runtime/core/records.h"

#include <chrono>

namespace acan::runtime {

MetricsRow RunMetrics(const Progress& p, const ControllerSnapshot& c, Clock::time_point start,
                      Clock::time_point* last_at, int64_t* last_samples) {
  const auto now = Clock::now();
  MetricsRow row;
  row.t_s = std::chrono::duration<double>(now - start).count();
  int64_t samples = 0;
  for (const auto& e : p.epochs) samples += e.rows;
  const double dt = std::chrono::duration<double>(now - *last_at).count();
  row.samples_per_s = dt > 0 ? double(samples - *last_samples) / dt : 0;
  *last_samples = samples;
  *last_at = now;
  row.step = p.next_step;
  row.task_size = p.task_size;
  row.pouch = c.pouch;
  row.completion_rate = c.completion_rate;
  row.mean_timeout_ms = c.mean_timeout_ms;
  row.timeouts_ms = c.timeouts_ms;
  row.retransmitted = p.retransmitted;
  return row;
}

}  // namespace acan::runtime
