#include "runtime/core/dispatch.h"

#include <algorithm>

namespace acan::runtime {

bool Dispatcher::Offer(TaskRef task, int64_t pouch) {
  if (in_flight_ >= pouch) {
    held_.push_back(task);
    return false;
  }
  ++in_flight_;
  return true;
}

std::vector<TaskRef> Dispatcher::TakeHeld(int64_t pouch) {
  std::vector<TaskRef> out;
  while (!held_.empty() && in_flight_ < pouch) {
    out.push_back(held_.front());
    held_.pop_front();
    ++in_flight_;
  }
  return out;
}

void Dispatcher::BiggestFirst(std::vector<TaskRef>* ready,
                              const std::function<int64_t(const TaskRef&)>& work) {
  std::stable_sort(ready->begin(), ready->end(),
                   [&](const TaskRef& a, const TaskRef& b) { return work(a) > work(b); });
}

}  // namespace acan::runtime
