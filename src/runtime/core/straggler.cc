#include "runtime/core/straggler.h"

#include <algorithm>

namespace acan::runtime {

void StragglerWatch::Observe(int handler, const nn::TaskSpec& task, int64_t exec_ns) {
  if (handler < 0 || exec_ns <= 0) return;
  auto [it, fresh] = smoothed_ns_[Controller::ClassOf(task)].emplace(handler, double(exec_ns));
  if (!fresh) it->second += kSmoothing * (double(exec_ns) - it->second);
}

std::optional<double> StragglerWatch::ExpectedNs(int handler, const nn::TaskSpec& task) const {
  auto c = smoothed_ns_.find(Controller::ClassOf(task));
  if (c == smoothed_ns_.end()) return std::nullopt;
  auto h = c->second.find(handler);
  if (h == c->second.end()) return std::nullopt;
  return h->second;
}

std::optional<std::pair<int, double>> StragglerWatch::Fastest(const nn::TaskSpec& task,
                                                              int except) const {
  auto c = smoothed_ns_.find(Controller::ClassOf(task));
  if (c == smoothed_ns_.end()) return std::nullopt;
  std::optional<std::pair<int, double>> best;
  for (const auto& [handler, ns] : c->second) {
    if (handler != except && (!best || ns < best->second)) best = {handler, ns};
  }
  return best;
}

bool StragglerWatch::WorthACopy(int claimant, const nn::TaskSpec& task, double elapsed_ns) const {
  const auto fastest = Fastest(task, claimant);
  if (!fastest || elapsed_ns < fastest->second) return false;
  const auto own = ExpectedNs(claimant, task);
  const double expected = own ? *own : kUnknownFactor * fastest->second;
  return expected - elapsed_ns > kMargin * fastest->second;
}

std::optional<double> StragglerWatch::WorthACopyUntilNs(const nn::TaskSpec& task) const {
  const auto fastest = Fastest(task, -1);
  if (!fastest) return std::nullopt;
  // A claimant's fastest other handler is never faster than the fastest of all, and one never
  // seen is taken to need kUnknownFactor times it (WorthACopy).
  double slowest = kUnknownFactor * fastest->second;
  for (const auto& [handler, ns] : smoothed_ns_.at(Controller::ClassOf(task))) {
    slowest = std::max(slowest, ns);
  }
  return slowest - kMargin * fastest->second;
}

}  // namespace acan::runtime
