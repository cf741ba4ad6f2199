// The supervisor's slots: what starts and restarts the roles of a run in this process. A
// ManagerSlot runs managers one after another (a crashed one is replaced by a new incarnation with
// no local state); a HandlerSlot runs a handler, crashes it when told (losing what it holds),
// announces the death at once as a process supervisor would from waitpid, and restarts it
// empty-handed after a delay. RunEnd is how the run learns that it is over. Each slot owns one
// thread; its public methods may be called from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <thread>

#include "acan/job.h"
#include "acan/space.h"
#include "common/thread_annotations.h"
#include "nn/dataset.h"
#include "runtime/core/layout.h"
#include "runtime/handler/handler.h"
#include "runtime/manager/manager.h"
#include "runtime/run/job_runner.h"
#include "runtime/state/env.h"
#include "runtime/view/telemetry.h"

namespace acan::runtime {

// How a run ends: the job finished, or something stopped it. The main thread sleeps on it
// (waking only for the metrics), so no thread polls while the handlers compute.
class RunEnd {
 public:
  bool finished() const { return finished_.load(); }
  bool stopped() const { return stopped_.load(); }
  bool over() const { return finished() || stopped(); }
  void Finish() { Set(&finished_); }
  void Stop() { Set(&stopped_); }
  // Wakes the waiter early (e.g. to start the chaos once the calibration steps are done).
  void Poke() { Set(&poked_); }
  // Waits until the run is over, a poke or `until`; true when it is over.
  bool WaitUntil(Clock::time_point until);

 private:
  void Set(std::atomic<bool>* flag);
  // Set under mu_ (so that a waiter cannot miss the notification), read anywhere.
  std::atomic<bool> finished_{false}, stopped_{false}, poked_{false};
  Mutex mu_;
  CondVar cv_;
};

// The options of slot `id`'s managers: the run's manager settings, and the owner name.
ManagerSettings ManagerSettingsFor(const RunOptions& run, int id);

class ManagerSlot {
 public:
  // REQUIRES: every pointer and reference outlives the slot.
  ManagerSlot(int id, Space* space, const Layout& layout, const JobConfig& job,
              const nn::Dataset& data, const RunOptions& options, const RunHooks& hooks,
              Telemetry* telemetry, RunEnd* end, std::atomic<bool>* killed_once);

  void Start();
  void Join();
  // Kills the manager of this slot if it is the active one (a standby has nothing to lose).
  void CrashIfActive() {
    if (active_.load()) crash_.store(true);
  }
  void Stop() { crash_.store(true); }
  int64_t crashes() const { return crashes_.load(); }
  Status status() const;
  bool has_controller() const;
  ControllerSnapshot controller() const;

 private:
  void Loop();

  int id_;
  Space* space_;
  const Layout& layout_;
  const JobConfig& job_;
  const nn::Dataset& data_;
  const RunOptions& options_;
  const RunHooks& hooks_;
  Telemetry* telemetry_;
  RunEnd* end_;
  std::atomic<bool>* killed_once_;  // the test hook kills one manager per run
  std::atomic<bool> crash_{false};
  std::atomic<bool> active_{false};
  std::atomic<int64_t> crashes_{0};
  int64_t active_incarnations_ = 0;  // on the slot's thread only
  bool paused_ = false;              // RunHooks::pause_manager_after_step; on the slot's thread
  mutable Mutex mu_;
  Status status_ GUARDED_BY(mu_);
  ControllerSnapshot controller_ GUARDED_BY(mu_);
  bool has_controller_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

class HandlerSlot {
 public:
  // REQUIRES: every pointer and reference outlives the slot. `env` is the processor's (the
  // slot slows it down by stats().speed).
  HandlerSlot(Space* space, const Layout& layout, HandlerSettings options, const RunOptions& run,
              Telemetry* telemetry, const Env* env = Env::Default());

  // Binds the handler's thread to one CPU (before Start).
  void PinTo(int cpu) { cpu_ = cpu; }
  // Each incarnation dies at its `point(incarnation)`-th write to the space (0: it does not):
  // RunHooks' replayable crashes. Before Start.
  void CrashAtWrite(std::function<int64_t(int64_t incarnation)> point) {
    crash_at_write_ = std::move(point);
  }
  void Start();
  // The injected crash: from this moment the handler's work is lost. Its supervisor (this slot,
  // on the caller's thread) sees it at once and says so; the thread itself notices when its
  // kernel returns (a kernel cannot be interrupted) and throws the result away.
  void Crash();
  void Stop();
  void Join();
  HandlerStats& stats() { return stats_; }
  // The current incarnation (0 before the first).
  int64_t incarnation();

  // One incarnation on the caller's thread: announces it, runs until crashed or stopped, and
  // does what a supervisor does after a crash. False when the slot is done (stopped, or the
  // space closed). Start() runs these on the slot's thread, with the restart delay between.
  bool RunIncarnation();

 private:
  void Loop();
  // The dead incarnation's claims on tasks of steps that were cleaned up meanwhile.
  void DropClaimsOfClosedSteps(const std::vector<Handler::AbandonedTask>& abandoned);

  Space* space_;
  const Layout& layout_;
  HandlerSettings options_;
  const RunOptions& run_;
  Telemetry* telemetry_;
  HandlerStats stats_;
  SlowedEnv env_;  // the processor, slowed down by stats_.speed
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  Mutex crash_mu_;
  int64_t incarnation_ GUARDED_BY(crash_mu_) = 0;
  Clock::time_point crashed_at_ GUARDED_BY(crash_mu_);
  int cpu_ = -1;
  std::function<int64_t(int64_t)> crash_at_write_;
  std::thread thread_;
};

}  // namespace acan::runtime
