#include "runtime/core/dispatch.h"

#include <algorithm>

namespace acan::runtime {

bool Dispatcher::Offer(TaskRef task, int64_t pouch, int band) {
  Band& b = bands_[band];
  if (b.in_flight >= pouch) {
    b.held.push_back(task);
    ++held_;
    return false;
  }
  ++b.in_flight;
  ++in_flight_;
  return true;
}

std::vector<TaskRef> Dispatcher::TakeHeld(int64_t pouch) {
  std::vector<TaskRef> out;
  for (auto& [band, b] : bands_) {
    while (!b.held.empty() && b.in_flight < pouch) {
      out.push_back(b.held.front());
      b.held.pop_front();
      --held_;
      ++b.in_flight;
      ++in_flight_;
    }
  }
  return out;
}

void Dispatcher::AddInFlight(int band) {
  ++bands_[band].in_flight;
  ++in_flight_;
}

void Dispatcher::OnDone(int band) {
  --bands_[band].in_flight;
  --in_flight_;
}

void Dispatcher::BiggestFirst(std::vector<TaskRef>* ready,
                              const std::function<int64_t(const TaskRef&)>& work) {
  std::stable_sort(ready->begin(), ready->end(),
                   [&](const TaskRef& a, const TaskRef& b) { return work(a) > work(b); });
}

}  // namespace acan::runtime
