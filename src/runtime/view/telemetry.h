// Telemetry: what a run's threads report while it goes (the latest progress and controller state,
// task times by class, crash-to-recovery times, each manager incarnation's recovery, the steps'
// completion times) and what the run reads back from it (the metrics rows, stall reports, the
// chaos calibration). Times come from an Env, so a test drives them. Thread-safe: every method
// takes one lock.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"
#include "runtime/core/controller.h"
#include "runtime/core/progress.h"
#include "runtime/core/records.h"
#include "runtime/state/env.h"
#include "runtime/view/stall.h"

namespace acan::runtime {

struct RecoveryStats {
  // Each manager incarnation's recovery (lease taken -> steps in flight rebuilt and their ready
  // tasks sent) and the space calls it took.
  std::vector<double> manager_recovery_ms;
  std::vector<int64_t> manager_recovery_calls;
  std::vector<double> handler_ms;    // crash -> the lost task's retransmission completes
  std::vector<double> lost_task_ms;  // execution time of those retransmissions
  std::vector<double> manager_ms;    // crash -> the next step completes
  std::vector<double> task_ms;       // execution time of completed tasks (a sample)
  // The same per class of task: its key without the step ("mb.m0", "upd.l1.w"), the same task in
  // every step.
  std::map<std::string, std::vector<double>> task_ms_by_class;
  // The same times over the handler's slow-down when it ran them: at full speed.
  std::map<std::string, std::vector<double>> task_ms_by_class_at_full_speed;
  std::vector<std::string> lost_classes;  // the class of each lost task, as handler_ms
  std::vector<double> lost_speeds;  // the slow-down its redo ran at, as handler_ms (1: not said)
  int64_t lost_tasks = 0;           // tasks crashes lost (each counted once)
  int64_t lost_not_redone = 0;      // of them, those whose redo was not seen (yet)
};

class Telemetry {
 public:
  // REQUIRES: `env` outlives it.
  explicit Telemetry(const Env* env = Env::Default());

  // A step completed (on the manager's thread): its progress and the controller's state.
  void OnStep(const Progress& p, const ControllerSnapshot& c);
  // A task completed for the first time, after `exec_ns` of execution at slow-down `speed`.
  void OnTaskDone(const std::string& task_key, int64_t exec_ns, double speed = 1.0);
  // ... and its `work` (floats read and written) credited to the handler whose report was taken:
  // what each handler did that the job used, a speculative copy that came second left out.
  void OnUsefulWork(int handler, int64_t work);
  // A handler put the report of `task_key` (its kernel's `exec_ns`, at slow-down `speed`): when
  // a crash lost it, its redo is done now, whether or not a manager reads the report.
  void OnReported(const std::string& task_key, int64_t exec_ns, double speed);
  // A handler crashed at `at`, losing these tasks: their redo's completion is timed from `at`.
  void OnHandlerCrash(const std::vector<AbandonedTask>& lost, Clock::time_point at);
  // The active manager crashed now: the next step's completion is timed from now.
  void OnManagerCrash();
  // Calls `hook` (on the manager's thread) when the n-th step completes.
  void SetStepHook(int64_t n, std::function<void()> hook);
  void OnActive(int slot);
  void OnFlight(const FlightStatus& f);
  void OnRecovered(std::chrono::nanoseconds took, int64_t calls);

  // The median time between the first `n` + 1 step completions, once there are that many.
  std::optional<double> MedianStepS(int64_t n) const;
  // A stall report without the space's census and the crash counts, which others know.
  StallReport Stall(Clock::time_point run_start) const;
  Clock::time_point last_step_at() const;
  std::pair<Progress, ControllerSnapshot> Latest() const;
  RecoveryStats recovery() const;
  // Every first completion's time, by class of task (all of them, not a sample).
  std::map<std::string, LatencyHistogram> TaskLatency() const;
  // The work credited to each of handlers 0..n-1 so far.
  std::vector<int64_t> UsefulWork(size_t n) const;

 private:
  const Env* env_;
  mutable Mutex mu_;
  Progress progress_ GUARDED_BY(mu_);
  ControllerSnapshot controller_ GUARDED_BY(mu_);
  RecoveryStats recovery_ GUARDED_BY(mu_);
  std::map<std::string, LatencyHistogram> task_latency_ GUARDED_BY(mu_);
  std::map<int, int64_t> useful_work_ GUARDED_BY(mu_);  // by handler
  std::unordered_map<std::string, Clock::time_point> lost_ GUARDED_BY(mu_);
  struct Report {
    Clock::time_point at;
    int64_t exec_ns = 0;
    double speed = 1;
  };
  // A redo of `key`, lost at `lost_at`, reported: recovery_'s figures for it.
  void RecordRedoLocked(const std::string& key, Clock::time_point lost_at, const Report& redo)
      REQUIRES(mu_);
  static constexpr size_t kReportsKept = 65536;
  // Each task's last report (OnReported).
  std::unordered_map<std::string, Report> reported_ GUARDED_BY(mu_);
  std::vector<Clock::time_point> manager_crashes_ GUARDED_BY(mu_);
  Clock::time_point last_step_at_ GUARDED_BY(mu_);
  // Of the first steps (the chaos calibration).
  std::vector<Clock::time_point> step_times_ GUARDED_BY(mu_);
  int64_t incarnations_ GUARDED_BY(mu_) = 0;
  int active_slot_ GUARDED_BY(mu_) = -1;
  FlightStatus flight_ GUARDED_BY(mu_);
  int64_t step_hook_at_ GUARDED_BY(mu_) = 0;
  std::function<void()> step_hook_ GUARDED_BY(mu_);
};

}  // namespace acan::runtime
