// FaultSpace: a space wrapper that drops, duplicates and delays the puts of chosen keys at
// seeded rates, as an unreliable network or a crashing peer would. Used by the tests and the
// chaos experiments (LevelDB's fault-injection Env, for a tuple space). Reads and takes pass
// through. Thread-safe; the counters may be read while it runs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <queue>
#include <random>
#include <thread>
#include <vector>

#include "acan/space.h"
#include "space/space_wrapper.h"

namespace acan {

struct FaultOptions {
  std::vector<std::string> patterns;  // keys whose puts may be hit; empty: every key
  double drop = 0;                    // probability a put is lost (it still reports OK)
  double duplicate = 0;               // probability a put is stored twice
  double delay = 0;                   // probability a put is stored only after `delay_by`
  std::chrono::milliseconds delay_by{5};
  uint64_t seed = 1;
};

struct FaultCounts {
  std::atomic<int64_t> dropped{0};
  std::atomic<int64_t> duplicated{0};
  std::atomic<int64_t> delayed{0};
};

class FaultSpace final : public SpaceWrapper {
 public:
  // REQUIRES: options' patterns are valid patterns.
  FaultSpace(std::unique_ptr<Space> inner, FaultOptions options,
             std::shared_ptr<FaultCounts> counts = std::make_shared<FaultCounts>());
  ~FaultSpace() override;

  using Space::Put;
  Status Put(Key key, Value value, Deadline deadline) override;
  void Close() override;

  const FaultCounts& counts() const { return *counts_; }

 private:
  struct Delayed {
    Clock::time_point at;
    Key key;
    Value value;
    bool operator>(const Delayed& o) const { return at > o.at; }
  };
  void DeliverDelayed();

  std::unique_ptr<Space> owned_;
  FaultOptions options_;
  std::vector<Pattern> patterns_;
  std::shared_ptr<FaultCounts> counts_;
  std::mutex mu_;
  std::mt19937_64 rng_;                                                         // GUARDED_BY(mu_)
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<>> delayed_;  // GUARDED_BY(mu_)
  std::condition_variable delayed_cv_;
  bool closing_ = false;  // GUARDED_BY(mu_)
  std::thread delivery_;
};

}  // namespace acan
