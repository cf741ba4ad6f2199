// The controller: sets each task's timeout from what the manager observes (DESIGN.md section 7).
//
// Per task class (its op and the log2 of its work) it keeps a smoothed latency and its variance,
// as TCP does (SRTT, RTTVAR), and sets the timeout to max(floor, multiplier * (SRTT + 4 RTTVAR)).
// Before a class has a sample its timeout is `initial`. Not thread-safe: the manager owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "nn/task.h"

namespace acan::runtime {

struct ControllerOptions {
  std::chrono::milliseconds initial_timeout{2000};
  std::chrono::milliseconds min_timeout{20};
  std::chrono::milliseconds max_timeout{60000};
  double multiplier = 3.0;  // the design note: 3-5x the mean task time
};

class Controller {
 public:
  explicit Controller(ControllerOptions options = {}) : options_(options) {}

  std::chrono::nanoseconds Timeout(const nn::TaskSpec& task) const;
  // A task of this class completed `latency` after it was sent.
  void Observe(const nn::TaskSpec& task, std::chrono::nanoseconds latency);
  // A retransmission: back off this class's timeout (Karn's rule: no sample from it).
  void Backoff(const nn::TaskSpec& task);

  const ControllerOptions& options() const { return options_; }
  // The current timeout of every class seen, in milliseconds, by class name.
  std::map<std::string, double> TimeoutsMs() const;

 private:
  struct Estimate {
    double srtt_ns = 0;
    double rttvar_ns = 0;
    bool has_sample = false;
    double backoff = 1.0;
  };
  using ClassKey = std::pair<int, int>;  // op, log2(work)
  static ClassKey ClassOf(const nn::TaskSpec& task);
  std::chrono::nanoseconds TimeoutOf(const Estimate& e) const;

  ControllerOptions options_;
  std::map<ClassKey, Estimate> estimates_;
};

}  // namespace acan::runtime
