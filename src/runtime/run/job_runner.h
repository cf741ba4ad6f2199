// RunJob: one training run on a space, in this process: the manager (with a standby), N handler
// threads, and the injected faults of the experiments. It is what `acan train` and the
// experiments call; tests call it with a fault-injecting space.
// Not re-entrant per space: one job token per RunJob at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "acan/job.h"
#include "acan/space.h"
#include "nn/dataset.h"
#include "nn/model.h"
#include "nn/task.h"
#include "runtime/chaos/chaos.h"
#include "runtime/core/controller.h"
#include "runtime/core/progress.h"
#include "runtime/core/records.h"
#include "runtime/view/stall.h"
#include "runtime/view/telemetry.h"
#include "runtime/view/trace.h"

namespace acan::runtime {

struct RunOptions {
  int handlers = 4;
  int64_t window = 1;
  int64_t task_size = -1;  // -1: the job's partition.task_size
  std::string space_uri = "mem:";
  std::string job_token = "job";
  // Per handler (MIMD): the task types it runs; empty or missing means every type (SIMD).
  std::vector<std::vector<nn::TaskType>> capabilities;
  int pouch = 1;  // tasks a handler takes at once (the manager's pouch is the controller's)
  // Bind handler h to the h-th CPU this process may run on, when there is one per handler and no
  // slow-down factor is injected (chaos.speeds other than 1). Off by default: processes that
  // each bind their handlers to the first CPUs would pile up there (`acan train` turns it on).
  bool pin_handlers = false;
  bool adapt_task_size = false;  // let the controller change the task size (not bitwise)
  // Memory budgets in bytes (0 or empty: none), the handlers' cycled over handlers: a handler
  // refuses a task that would pass its own, and a tiles job whose task size is left to the
  // runtime is cut so that every task fits the smallest (runtime/core/budget.h). The manager's
  // (ManagerSettings::memory) keeps the versions its audit holds, and its probe, within it; the
  // in-process run itself holds the data and the model it returns.
  std::vector<int64_t> handler_memory;
  int64_t manager_memory = 0;
  // A copy of a task the window waits on for a faster idle handler when a slow one holds it
  // (runtime/core/straggler.h; off by default: time bought with the slow copy's work).
  bool speculate = false;
  std::chrono::milliseconds lease{500};
  ControllerOptions controller;
  bool standby = true;  // run a standby manager beside the active one
  std::chrono::milliseconds manager_restart_delay{50};
  // Injected speeds and crashes (the experiments); a crashed handler restarts after this delay.
  ChaosOptions chaos;
  std::chrono::milliseconds handler_restart_delay{100};
  // A crashed handler's slot announces the death at once (AnnounceDeath), as a process supervisor
  // would; off, a crash is found only through lapsed claims and the restart notice.
  bool supervise = true;
  // How often a row of the metrics time series is taken.
  std::chrono::milliseconds metrics_interval{500};
  // Called (on the thread that called RunJob) with every row, and what else was sampled with it.
  std::function<void(const LiveSample&)> on_sample;
  // Called on the manager's thread after every completed step.
  std::function<void(const Progress&)> on_progress;
  // Records task executions, retransmissions and crashes (trace.json); null: not traced.
  std::shared_ptr<TraceRecorder> trace;
  // Called on the manager's thread with the model after each epoch (e.g. to evaluate it).
  std::function<void(int64_t epoch, const nn::Model&)> on_epoch_end;
  // A run is stalled when no step has completed for max(stall_floor, 8 x its longest current
  // task timeout): a warning with what is in flight is logged (and given to on_stall), and again
  // each time as long again passes while the stall lasts.
  std::chrono::milliseconds stall_floor{5000};
  std::function<void(const StallReport&)> on_stall;
  // Give up a run stalled this long (0: never): RunJob returns Timeout with the last report.
  std::chrono::milliseconds abort_after_stall{0};
};

// What tests inject into a run, kept apart from the options a user sets.
struct RunHooks {
  // Wraps the opened space (faults are injected this way).
  std::function<std::unique_ptr<Space>(std::unique_ptr<Space>)> wrap_space;
  // The active manager is killed once it has completed this many steps (-1: never).
  int64_t kill_manager_after_step = -1;
  // Every manager is killed once it has been active for this multiple (> 1) of its own recovery
  // time (0: never). A run must still finish: recovery alone moves it forward.
  double kill_manager_after_recovery = 0;
  // Each handler crashes in the middle of every n-th task it runs (0: never), its kernel's result
  // lost: a loss certain to happen, where the chaos schedule's crashes may all land between tasks.
  int64_t crash_in_task_every = 0;
  // Replayable crashes, by count rather than by the clock: incarnation i (from 1) of manager slot
  // m, from the moment it is active, dies at its manager_crash_at(m, i)-th write to the space (a
  // put, before it lands, or a take that removed tuples, after: runtime/chaos/crashable_space.h),
  // and incarnation i of handler h at its handler_crash_at(h, i)-th. 0 (or unset): it does not die.
  std::function<int64_t(int slot, int64_t incarnation)> manager_crash_at;
  std::function<int64_t(int handler, int64_t incarnation)> handler_crash_at;
  // A paused manager: the active one sleeps this long once, after completing step
  // pause_manager_after_step, on its own thread (as if stopped by SIGSTOP), then carries on.
  int64_t pause_manager_after_step = -1;
  std::chrono::milliseconds pause_manager_for{0};

  // Crash points drawn from a seed (CrashPoint): each of the first `max_crashes` incarnations of
  // every manager dies at a write in [1, manager_range], of every handler in [1, handler_range]
  // (a range of 0: that role never dies).
  static RunHooks SeededCrashes(uint64_t seed, int64_t manager_range, int64_t handler_range,
                                int64_t max_crashes);
};

struct RunResult {
  nn::Model model;
  Progress progress;
  double wall_s = 0;
  std::vector<HandlerFigures> handlers;
  int64_t manager_crashes = 0;
  int64_t pouch = 1;
  ControllerSnapshot controller;  // the last active manager's controller
  SpaceStats space;
  Census census;  // resident tuples and bytes by key class: at the end and at their peak
  std::vector<StallReport> stalls;  // every stall warning, in order
  std::vector<MetricsRow> metrics;
  RecoveryStats recovery;
  std::shared_ptr<TraceRecorder> trace;  // RunOptions::trace, filled in (null: not traced)
  std::vector<std::string> audit;        // the job's audit log, one JSON record a line
  // The tile bands the run cut for handler budgets that differ (empty: the job's own cut).
  std::vector<TileBand> tile_bands;
};

Result<RunResult> RunJob(const JobConfig& job, const nn::Dataset& data, const nn::Model& init,
                         const RunOptions& options, const RunHooks& hooks = {});

}  // namespace acan::runtime
