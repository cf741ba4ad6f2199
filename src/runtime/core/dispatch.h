// The manager's pouch on the sending side: at most `pouch` tasks are out at once (sent and not yet
// done); a fresh task that finds the pouch full is held back until a done report makes room,
// oldest first. Retransmissions are not counted here: a lost task's slot was never given back.
// A job whose tiles are cut in bands (runtime/core/budget.h) has a pouch per band: the tasks only
// the largest budgets can run never fill the pouch while the other handlers wait with nothing.
// Tasks that become ready together are released biggest first, so when a few large tasks and
// many small ones are ready at once (a step's updates) the large ones start on different handlers
// and the small ones fill in around them. Not thread-safe: one manager owns one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace acan::runtime {

// A task of a step in flight: (step, index in the step's tasks).
using TaskRef = std::pair<int64_t, size_t>;

class Dispatcher {
 public:
  int64_t in_flight() const { return in_flight_; }  // in all bands
  size_t held() const { return held_; }

  // A fresh task of `band` (-1: none): true when it may go now (it is counted in flight), false
  // when it is held back.
  bool Offer(TaskRef task, int64_t pouch, int band = -1);
  // The held tasks that fit in `pouch` now, each band's oldest first, each counted in flight.
  std::vector<TaskRef> TakeHeld(int64_t pouch);
  // A task of `band` counted in flight without an Offer (found running by a recovering manager,
  // or sent again after its result was lost).
  void AddInFlight(int band = -1);
  // A task of `band` in flight completed.
  void OnDone(int band = -1);

  // Orders tasks that became ready together biggest first (by `work`), equal ones as they came.
  static void BiggestFirst(std::vector<TaskRef>* ready,
                           const std::function<int64_t(const TaskRef&)>& work);

 private:
  struct Band {
    int64_t in_flight = 0;
    std::deque<TaskRef> held;
  };
  std::map<int, Band> bands_;
  int64_t in_flight_ = 0;
  size_t held_ = 0;
};

}  // namespace acan::runtime
