// A handler: a processor that takes pouches of tasks matching its capabilities from the space,
// reads their inputs from the space, runs the kernels and puts the outputs and a done report
// back. While it runs a task it holds a claim tuple (its incarnation and a lease end a few
// expected task times ahead, renewed while a slow task runs), so the manager can tell a slow
// task (a live claim: wait) from a lost one (no claim, a lapsed one, or one of an incarnation
// that has since restarted: send again) long before a generous timeout would. It keeps no state the
// space does not also hold, so killing one loses only the tasks in its hands, which the manager
// sends again when their deadlines pass. One Handler runs on one thread; its HandlerStats may be
// read from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "acan/space.h"
#include "nn/task.h"
#include "runtime/core/layout.h"
#include "runtime/core/messages.h"
#include "runtime/core/records.h"
#include "runtime/state/buffer_pool.h"
#include "runtime/state/env.h"
#include "runtime/state/liveness.h"
#include "runtime/state/local_inputs.h"
#include "runtime/view/trace.h"

namespace acan::runtime {

struct HandlerStats {
  std::atomic<int64_t> tasks{0};    // tasks run to completion and reported
  std::atomic<int64_t> busy_ns{0};  // time spent running tasks (stretched by speed)
  // Of the tasks' time in hand: their kernels' own (without a slow-down's wait), and the rest
  // outside the kernel and the wait (the claim, the reads, the writes and the report). With
  // `work`, how fast the processor runs at its slow-down, whatever the runtime around it does.
  std::atomic<int64_t> kernel_ns{0};
  std::atomic<int64_t> io_ns{0};
  std::atomic<int64_t> work{0};     // work done: floats each task reads and writes (deterministic)
  std::atomic<int64_t> lost_ns{0};  // work lost in crashes
  // Time spent waiting for a task with none in hand (the takes' waits), added as each wait ends:
  // it only grows, unlike the run's time less busy_ns, which drops when a long task reports.
  std::atomic<int64_t> idle_ns{0};
  std::atomic<int64_t> crashes{0};
  std::atomic<int64_t> missing_inputs{0};    // tasks not run for a missing input (reported)
  std::atomic<int64_t> bad_tuples{0};        // undecodable task tuples
  std::atomic<int64_t> reused{0};            // resent tasks reported done from outputs in the space
  std::atomic<int64_t> refused{0};           // tasks refused: over the memory budget
  std::atomic<int64_t> peak_held{0};         // bytes held for a task at most (HeldFor)
  std::atomic<int64_t> memory_budget{0};     // its budget (0: none)
  std::atomic<double> speed{1.0};            // current slow-down factor (1 = full speed)
  std::atomic<int64_t> first_task_at_ns{0};  // Clock time its first task completed; 0: none yet
};

struct HandlerSettings {
  int id = 0;
  // This run of the handler: a restarted handler is a new incarnation, and claims made by an
  // older one are known to be abandoned.
  int64_t incarnation = 0;
  // Task types this handler runs; empty means every type (SIMD).
  std::vector<nn::TaskType> capabilities;
  // How many tasks to take at once; read before every take, so a controller may change it.
  const std::atomic<int>* pouch = nullptr;  // null: 1
  // How often a blocked take wakes to look at `stop`.
  std::chrono::milliseconds poll{50};
  // Where output buffers come from and go back to; null: fresh buffers every time.
  std::shared_ptr<BufferPool> buffers;
  // Where each task execution is recorded as a slice; null: not traced.
  TraceRecorder* trace = nullptr;
  // The clock and the kernels (a SlowedEnv for a slow processor); null: Env::Default().
  const Env* env = nullptr;
  // Asked when a take finds nothing (at most once a `poll`): true ends Run (the job is over).
  // Null: never.
  std::function<bool()> until;
  // Makes the step inputs a task names by reference (runtime/state/local_inputs.h); null: this
  // handler has no copy of the data, and reports such inputs missing.
  LocalInputs* local_inputs = nullptr;
  // Called once a task's report is in the space, with its kernel's time (0: done from outputs
  // already there) and the slow-down it ran at: what an observer of redos sees. Null: nothing.
  std::function<void(const std::string& task_key, int64_t exec_ns, double speed)> on_reported;
  // What this handler may hold of acan's data, in bytes (0: no budget): a task whose inputs and
  // outputs, with `data_bytes`, would pass it is refused (reported to the manager with why), never
  // run into an out-of-memory death.
  int64_t memory = 0;
  // A job cut in tile bands with budgets: the first size class it takes (HandlerSizeClass: it takes
  // that class's tasks and every later one's, its own first), and how many the job has. -1: every
  // task.
  int size_class = -1;
  int size_classes = 0;
  // Bytes this handler holds whatever the task: the data set it makes its inputs from.
  int64_t data_bytes = 0;
};

// A handler's report from its counters now (idle_ratio left 0: it needs the run's wall time).
HandlerFigures ReportOf(int id, const HandlerStats& stats);

class Handler {
 public:
  // The shortest claim lease: covers the time from taking a task to reporting it, at least.
  static constexpr std::chrono::milliseconds kMinClaim{10};
  // The claim of an op's first task here, before any hint of how long it takes (its reads over a
  // network may take longer than kMinClaim): a death then is still announced at once by a
  // supervisor; only an unsupervised one is found this much later.
  static constexpr std::chrono::milliseconds kFirstClaim{200};

  Handler(Space* space, Layout layout, HandlerSettings options, HandlerStats* stats);

  // Announces this incarnation (<job>.alive.h<id>), replacing the previous one's.
  Status Announce();

  // Runs until `stop` is set or the space is closed. A crash (stop set by a fault injector)
  // abandons the pouch in hand: its tasks are lost, as on a real processor.
  void Run(const std::atomic<bool>& stop);

  using AbandonedTask = runtime::AbandonedTask;
  // After Run returned because of `stop`: the tasks it had begun and not finished.
  const std::vector<AbandonedTask>& abandoned() const { return abandoned_; }

 private:
  // What became of a task: done (or dropped as undecodable or stale), lost (stop was set once it
  // had begun: nothing is reported), or not started (stop was set first: put it back).
  enum class Outcome { kDone, kLost, kNotStarted };
  // `decoded`: the task's message, or why it does not decode. `pre_claimed`: ClaimPouch claimed it.
  Outcome RunTask(const Tuple& task, const Result<TaskMessage>& decoded, bool pre_claimed,
                  const std::atomic<bool>& stop);
  Outcome RunTask(const TaskMessage& task, bool pre_claimed, const std::atomic<bool>& stop);
  // How long a task of `op` is expected to be in hand here, now (0: no figure yet).
  std::chrono::nanoseconds InHand(int op) const;
  // Claims the tasks of a pouch that wait behind others (RunTask claims each as it starts it) at
  // once where the wait may come near the manager's deadline, each for four times what the tasks
  // up to it are expected to take: a task waiting in the pouch is held, not lost, and the manager
  // must see that at its deadline. True for each one claimed.
  std::vector<bool> ClaimPouch(const std::vector<Result<TaskMessage>>& pouch);
  bool AlreadyDone(const TaskMessage& task);
  // Puts a claim on `task_key` lasting `lease` (replacing this handler's previous one).
  Status PutClaim(const Key& claim_key, std::chrono::nanoseconds lease, bool replace);
  // The patterns of the tasks it takes; `exact`: of its own size class alone, when it takes a
  // later one too (else none).
  std::vector<Pattern> Patterns(bool exact) const;

  Space* space_;
  Layout layout_;
  HandlerSettings options_;
  int64_t workspace_;  // WorkspaceBytes(options_.memory)
  HandlerStats* stats_;
  std::vector<AbandonedTask> abandoned_;
  const Env* env_;
  // Per task op, smoothed, hints for claims: the kernel's time, and the rest of a task's time in
  // hand (reading inputs, writing outputs and the report).
  std::map<int, double> exec_ns_;
  std::map<int, double> io_ns_;
};

}  // namespace acan::runtime
