#include "runtime/controller.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "nn/executor.h"

namespace acan::runtime {

Controller::ClassKey Controller::ClassOf(const nn::TaskSpec& task) {
  int64_t work = 0;
  for (int64_t n : nn::InputSizes(task)) work += n;
  for (int64_t n : nn::OutputSizes(task)) work += n;
  return {static_cast<int>(task.op), static_cast<int>(std::bit_width(uint64_t(std::max<int64_t>(work, 1))))};
}

std::chrono::nanoseconds Controller::TimeoutOf(const Estimate& e) const {
  using namespace std::chrono;
  double ns = e.has_sample ? options_.multiplier * (e.srtt_ns + 4 * e.rttvar_ns)
                           : double(duration_cast<nanoseconds>(options_.initial_timeout).count());
  ns *= e.backoff;
  ns = std::clamp(ns, double(duration_cast<nanoseconds>(options_.min_timeout).count()),
                  double(duration_cast<nanoseconds>(options_.max_timeout).count()));
  return nanoseconds(static_cast<int64_t>(ns));
}

std::chrono::nanoseconds Controller::Timeout(const nn::TaskSpec& task) const {
  auto it = estimates_.find(ClassOf(task));
  return TimeoutOf(it == estimates_.end() ? Estimate{} : it->second);
}

void Controller::Observe(const nn::TaskSpec& task, std::chrono::nanoseconds latency) {
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
}

void Controller::Backoff(const nn::TaskSpec& task) {
  Estimate& e = estimates_[ClassOf(task)];
  e.backoff = std::min(e.backoff * 2, 64.0);
}

std::map<std::string, double> Controller::TimeoutsMs() const {
  std::map<std::string, double> out;
  for (const auto& [k, e] : estimates_) {
    std::string name = std::string(nn::ToString(static_cast<nn::TaskOp>(k.first))) + "/2^" +
                       std::to_string(k.second);
    out[name] = double(TimeoutOf(e).count()) / 1e6;
  }
  return out;
}

}  // namespace acan::runtime
