#include "runtime/core/controller.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "nn/executor.h"

namespace acan::runtime {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;

Controller::Controller(ControllerOptions options)
    : options_(options), start_(std::chrono::steady_clock::now()) {
  int h = std::max(1, options_.handlers);
  pouch_ = options_.initial_pouch > 0 ? options_.initial_pouch : (5 * h + 1) / 2;
  if (options_.max_pouch <= 0) options_.max_pouch = 8 * h;
  task_size_ = options_.task_size;
}

Controller::ClassKey Controller::ClassOf(const nn::TaskSpec& task) {
  const int64_t work = nn::TaskWork(task);
  return {static_cast<int>(task.op),
          static_cast<int>(std::bit_width(uint64_t(std::max<int64_t>(work, 1))))};
}

nanoseconds Controller::TimeoutOf(const Estimate& e) const {
  double ns;
  if (e.has_sample) {
    ns = options_.multiplier * (e.srtt_ns + 4 * e.rttvar_ns);
  } else if (e.probe_ns > 0) {
    ns = options_.multiplier * e.probe_ns;
  } else {
    ns = double(duration_cast<nanoseconds>(options_.initial_timeout).count());
  }
  ns *= e.backoff * timeout_scale_;
  ns = std::clamp(ns, double(duration_cast<nanoseconds>(options_.min_timeout).count()),
                  double(duration_cast<nanoseconds>(options_.max_timeout).count()));
  return nanoseconds(static_cast<int64_t>(ns));
}

nanoseconds Controller::Timeout(const nn::TaskSpec& task) const {
  auto it = estimates_.find(ClassOf(task));
  return TimeoutOf(it == estimates_.end() ? Estimate{} : it->second);
}

void Controller::Probe(const nn::TaskSpec& task, nanoseconds elapsed) {
  Estimate& e = estimates_[ClassOf(task)];
  e.probe_ns = std::max(e.probe_ns, double(elapsed.count()));
}

void Controller::Observe(const nn::TaskSpec& task, nanoseconds latency) {
  Estimate& e = estimates_[ClassOf(task)];
  double r = double(latency.count());
  if (!e.has_sample) {
    e.srtt_ns = r;
    e.rttvar_ns = r / 2;
    e.has_sample = true;
  } else {  // RFC 6298: alpha = 1/8, beta = 1/4
    e.rttvar_ns = 0.75 * e.rttvar_ns + 0.25 * std::abs(e.srtt_ns - r);
    e.srtt_ns = 0.875 * e.srtt_ns + 0.125 * r;
  }
  e.backoff = 1.0;
  Record(true);
}

void Controller::Backoff(const nn::TaskSpec& task) {
  Estimate& e = estimates_[ClassOf(task)];
  e.backoff = std::min(e.backoff * 2, 64.0);
  Record(false);
}

std::string Controller::ClassName(const ClassKey& k) {
  return std::string(nn::ToString(static_cast<nn::TaskOp>(k.first))) + "/2^" +
         std::to_string(k.second);
}

std::map<std::string, double> Controller::MeanTaskNs() const {
  std::map<std::string, double> out;
  for (const auto& [k, e] : estimates_) {
    const double ns = e.has_sample ? e.srtt_ns : e.probe_ns;
    if (ns > 0) out[ClassName(k)] = ns;
  }
  return out;
}

void Controller::Seed(const std::map<std::string, double>& mean_task_ns) {
  for (int op = 0; op <= static_cast<int>(nn::TaskOp::kChain); ++op) {
    for (int bits = 0; bits <= 64; ++bits) {
      auto it = mean_task_ns.find(ClassName({op, bits}));
      if (it != mean_task_ns.end() && it->second > 0) estimates_[{op, bits}].probe_ns = it->second;
    }
  }
}

void Controller::Record(bool in_time) {
  outcomes_.push_back(in_time);
  if (outcomes_.size() > options_.window) outcomes_.pop_front();
  if (++since_decision_ >= options_.window / 2 && outcomes_.size() >= options_.window / 2) Decide();
}

double Controller::completion_rate() const {
  if (outcomes_.empty()) return 1.0;
  return double(std::count(outcomes_.begin(), outcomes_.end(), true)) / double(outcomes_.size());
}

void Controller::Decide() {
  since_decision_ = 0;
  const double rate = completion_rate();
  std::string action;
  if (rate > 0.9) {
    if (pouch_ < options_.max_pouch) {
      ++pouch_;
      action = "grow pouch";
    } else if (options_.adapt_task_size && task_size_ < options_.max_task_size) {
      task_size_ = std::min(options_.max_task_size, task_size_ * 2);
      action = "grow task size";
    }
    timeout_scale_ = std::max(1.0, timeout_scale_ / 1.25);
  } else if (rate < 0.7) {
    if (options_.adapt_task_size && task_size_ > options_.min_task_size) {
      task_size_ = std::max(options_.min_task_size, task_size_ / 2);
      action = "shrink task size";
    } else {
      timeout_scale_ = std::min(16.0, timeout_scale_ * 1.5);
      action = "lengthen timeouts";
    }
  }
  if (action.empty()) return;
  ControllerDecision d;
  d.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  d.completion_rate = rate;
  d.action = action;
  d.pouch = pouch_;
  d.task_size = task_size_;
  d.timeout_scale = timeout_scale_;
  decisions_.push_back(d);
}

ControllerSnapshot Controller::Snapshot() const {
  ControllerSnapshot s;
  double sum = 0;
  for (const auto& [k, e] : estimates_) {
    double ms = double(TimeoutOf(e).count()) / 1e6;
    s.timeouts_ms[ClassName(k)] = ms;
    sum += ms;
  }
  s.mean_timeout_ms = estimates_.empty() ? 0 : sum / double(estimates_.size());
  s.pouch = pouch_;
  s.task_size = task_size_;
  s.completion_rate = completion_rate();
  s.decisions = decisions_;
  return s;
}

int64_t InitialTaskSize(const std::vector<int64_t>& widths, bool tiles, int64_t batch) {
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return InitialTaskSize(widths, tiles, batch, l3 > 0 ? l3 : int64_t{32} << 20);
}

int64_t InitialTaskSize(const std::vector<int64_t>& widths, bool tiles, int64_t batch,
                        int64_t l3_bytes) {
  const double budget = double(l3_bytes) / 4;
  if (tiles) {  // an edge x edge tile of floats, plus its inputs and outputs
    int64_t edge = static_cast<int64_t>(std::sqrt(budget / 4.0));
    int64_t widest = *std::max_element(widths.begin(), widths.end());
    return std::clamp<int64_t>(edge, 8, std::max<int64_t>(8, widest));
  }
  double row_bytes = 0;  // activations and their gradients for one row
  for (int64_t w : widths) row_bytes += 8.0 * double(w);
  return std::clamp<int64_t>(static_cast<int64_t>(budget / row_bytes), 1,
                             std::max<int64_t>(1, batch));
}

}  // namespace acan::runtime
