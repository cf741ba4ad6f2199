// The adaptive controller (DESIGN.md section 7): sets each task's timeout, how many tasks the
// manager keeps in flight (the pouch), and, when the job lets it, the task size.
//
// Timeouts: per task class (its op and the log2 of its work, so a bigger task is its own class)
// a smoothed latency and its variance, as TCP keeps them (SRTT, RTTVAR, RFC 6298), give
// timeout = max(floor, multiplier * (SRTT + 4 RTTVAR)); a class without a sample uses the probed
// mean task time times the multiplier, else `initial_timeout`. A retransmission doubles its
// class's timeout until the next sample (Karn's rule).
// Completion rate over a sliding window of dispatch outcomes (done in time = 1, timed out = 0):
// above 90% grow the pouch (then the task size), below 70% shrink the task size (else lengthen
// the timeouts). Every decision is recorded with its inputs.
// Not thread-safe: the manager owns it; Snapshot() copies what others may read.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nn/task.h"

namespace acan::runtime {

struct ControllerOptions {
  std::chrono::milliseconds initial_timeout{2000};
  std::chrono::milliseconds min_timeout{5};
  std::chrono::milliseconds max_timeout{60000};
  // SRTT + 4 RTTVAR is about twice the mean latency, so 2 gives the note's 3-5x the mean task
  // time; live claims keep a slow task from being sent again, so the timeout can stay tight.
  double multiplier = 2.0;
  int handlers = 1;           // the pouch starts at 2-3x this
  int64_t initial_pouch = 0;  // 0: 2.5x handlers
  int64_t max_pouch = 0;      // 0: 8x handlers
  bool adapt_task_size = false;
  int64_t task_size = 0;  // the starting task size (when adapting) or the fixed one
  int64_t min_task_size = 1;
  int64_t max_task_size = 1 << 20;
  size_t window = 64;  // dispatch outcomes in the completion-rate window
};

struct ControllerDecision {
  double t_s = 0;  // seconds since the controller started
  double completion_rate = 0;
  std::string action;  // "grow pouch", "grow task size", "shrink task size", "lengthen timeouts"
  int64_t pouch = 0;
  int64_t task_size = 0;
  double timeout_scale = 1;
};

struct ControllerSnapshot {
  std::map<std::string, double> timeouts_ms;  // by task class
  double mean_timeout_ms = 0;
  int64_t pouch = 0;
  int64_t task_size = 0;
  double completion_rate = 1;
  std::vector<ControllerDecision> decisions;
};

class Controller {
 public:
  explicit Controller(ControllerOptions options = {});

  std::chrono::nanoseconds Timeout(const nn::TaskSpec& task) const;
  // A probe ran this task locally in `elapsed`: seeds its class before any real sample.
  void Probe(const nn::TaskSpec& task, std::chrono::nanoseconds elapsed);
  // A task of this class completed `latency` after it was sent (first attempts only).
  void Observe(const nn::TaskSpec& task, std::chrono::nanoseconds latency);
  // A task's deadline passed: back off its class and count a miss.
  void Backoff(const nn::TaskSpec& task);

  // The mean task time of every class with a sample or a probe ("<op>/2^<bits>" -> ns), kept
  // in the manager's state so that a new manager starts from it instead of probing again.
  std::map<std::string, double> MeanTaskNs() const;
  // Seeds classes as a probe would, from MeanTaskNs() of an earlier controller. Unknown names
  // are ignored.
  void Seed(const std::map<std::string, double>& mean_task_ns);

  int64_t pouch() const { return pouch_; }
  int64_t task_size() const { return task_size_; }
  double completion_rate() const;
  ControllerSnapshot Snapshot() const;
  const ControllerOptions& options() const { return options_; }

  // A task's class: its op and the log2 of its work (a bigger task is a class of its own).
  using ClassKey = std::pair<int, int>;
  static ClassKey ClassOf(const nn::TaskSpec& task);

 private:
  struct Estimate {
    double srtt_ns = 0;
    double rttvar_ns = 0;
    bool has_sample = false;
    double probe_ns = 0;
    double backoff = 1.0;
  };
  static std::string ClassName(const ClassKey& k);
  std::chrono::nanoseconds TimeoutOf(const Estimate& e) const;
  void Record(bool in_time);
  void Decide();

  ControllerOptions options_;
  std::map<ClassKey, Estimate> estimates_;
  std::deque<bool> outcomes_;
  size_t since_decision_ = 0;
  int64_t pouch_;
  int64_t task_size_;
  double timeout_scale_ = 1.0;
  std::vector<ControllerDecision> decisions_;
  std::chrono::steady_clock::time_point start_;
};

// The note's starting task size: a quarter of the L3 cache's worth of the tiles or micro-batch
// rows this model needs (bytes of weights per tile, or of activations per row), for this
// machine's L3 (32 MiB when the system does not say) or a given one (`l3_bytes`).
int64_t InitialTaskSize(const std::vector<int64_t>& widths, bool tiles, int64_t batch);
int64_t InitialTaskSize(const std::vector<int64_t>& widths, bool tiles, int64_t batch,
                        int64_t l3_bytes);

}  // namespace acan::runtime
