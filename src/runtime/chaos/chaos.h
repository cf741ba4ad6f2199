// Injected heterogeneity and faults for the experiments (DESIGN.md section 8): per-handler
// slow-down factors that change at random every T seconds, and crashes of handlers and of the
// manager: in every interval of T seconds each of them crashes with probability p, at a moment
// of its own drawn at random in the interval (failures are independent). Seeded, so a schedule can
// be replayed. The schedule runs on its own thread and acts through callbacks; it is stopped by
// Stop().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "acan/job.h"
#include "common/thread_annotations.h"

namespace acan::runtime {

struct ChaosOptions {
  std::vector<double> speeds;    // slow-down factors (1 = full speed), given out at random
  double speed_change_s = 0;     // 0: each handler keeps speeds[i % n]
  double crash_interval_s = 0;   // 0: no crashes
  double crash_probability = 0;  // per handler (and the manager) per interval
  bool crash_manager = false;
  uint64_t seed = 1;
  // The same two intervals in steps (> 0 replaces the seconds): the run first times this many
  // fault-free steps and turns steps into seconds with their median, so that a slower build or
  // a busier machine sees the same regime relative to its work.
  double speed_change_steps = 0;
  double crash_interval_steps = 0;
  int64_t calibration_steps = 8;

  bool relative() const { return speed_change_steps > 0 || crash_interval_steps > 0; }
  // These options with the intervals in seconds, given the median step time.
  ChaosOptions InSeconds(double step_s) const;
  // A job file's [chaos] section (disabled: no faults), its random draws seeded by `seed`.
  static ChaosOptions FromConfig(const ChaosConfig& config, uint64_t seed);
};

// A replayable crash point: the write (CrashableSpace::KillAtWrite) at which incarnation
// `incarnation` of process `who` dies, drawn from [1, range] by (seed, who, incarnation) alone.
int64_t CrashPoint(uint64_t seed, int64_t who, int64_t incarnation, int64_t range);

struct ChaosActions {
  std::function<void(int handler, double speed)> set_speed;
  std::function<void(int handler)> crash_handler;
  std::function<void()> crash_manager;
};

class Chaos {
 public:
  Chaos(ChaosOptions options, int handlers, ChaosActions actions);
  ~Chaos();
  // Gives the initial speeds and starts the schedule's thread.
  void Start();
  void Stop();

 private:
  void Loop();

  ChaosOptions options_;
  int handlers_;
  ChaosActions actions_;
  std::mt19937_64 rng_;
  Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace acan::runtime
