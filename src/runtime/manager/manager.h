// The manager: turns the partition plan into task tuples as their inputs come to exist, tracks a
// deadline per outstanding task, sends a task again when its deadline passes, discards late and
// duplicate results, and applies each update exactly once (DESIGN.md sections 4 and 5).
//
// Exactly-once updates: a parameter shard lives in the space as <job>.p.<shard>.v<version>. An
// update task of step s is dispatched only when the shard is at version s; the handler proposes
// the next value, and the manager alone writes version s + 1, and only if the shard is still at
// s (a compare-and-set), so a duplicate can never apply twice. With window W, steps s..s+W-1 run
// at once and a step's gradients read any version >= s - W + 1.
//
// Restartable: everything the manager needs is in the space (the state tuple, the versions, the
// step tensors and the queued tasks), so a new manager, in this process or another, resumes from
// there. A lease (a cell swapped by revision) makes sure one manager is active; a standby waits
// until it lapses.
// One Manager runs on one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "acan/space.h"
#include "nn/dataset.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "runtime/audit/audit.h"
#include "runtime/core/controller.h"
#include "runtime/core/dataflow.h"
#include "runtime/core/dispatch.h"
#include "runtime/core/layout.h"
#include "runtime/core/progress.h"
#include "runtime/core/records.h"
#include "runtime/core/straggler.h"
#include "runtime/core/task_watch.h"
#include "runtime/state/env.h"
#include "runtime/state/fenced_space.h"
#include "runtime/state/lease.h"
#include "runtime/state/liveness.h"
#include "runtime/state/local_inputs.h"
#include "runtime/state/version_store.h"
#include "runtime/view/trace.h"

namespace acan::runtime {

struct ManagerSettings {
  std::string owner = "manager";  // this manager's name in the lease
  // Signs every audit record this manager writes (a secure deployment's manager key); none: the
  // records are hash-chained only.
  std::shared_ptr<const AuditSigner> audit_signer;
  int64_t window = 1;
  int64_t task_size = -1;  // -1: the job's partition.task_size
  // Let the controller change the task size between steps (results then differ in the last
  // bits from a fixed-size run; keep it off where bitwise equality matters).
  bool adapt_task_size = false;
  bool probe = true;  // time one step's tasks locally to set the first timeouts
  // The manager's memory budget for the job's data (common/byte_size.h; 0: none). With one, it
  // never holds the model: the versions an audit record names are hashed as they are written
  // once a 32nd of the budget is held for each of the store, the record being made and the one
  // being written, the final model is hashed in bands of rows within a sixteenth of it, and the
  // probe (which holds every shard) is left out when the state passes a quarter of it.
  int64_t memory = 0;
  // Bytes of data each handler holds besides its tasks (it makes the step inputs from its own copy
  // of the data set): counted when a task's tile band is found (TaskBand), as the cut counted it.
  int64_t handler_data_bytes = 0;
  // Send a copy of a task the window waits on to a faster idle handler when a slow one holds it
  // (runtime/core/straggler.h). Off (the default: the slow copy's work is thrown away), the window
  // waits for a slow handler's task as long as its claim is live.
  bool speculate = false;
  std::chrono::milliseconds lease{1000};
  ControllerOptions controller;
  // Called after each completed step with the progress so far (on the manager's thread).
  std::function<void(const Progress&, const ControllerSnapshot&)> on_step;
  // Called after the last step of each epoch is applied, with the model at that point.
  std::function<void(int64_t epoch, const nn::Model& model)> on_epoch_end;
  // Called when this manager holds the lease and starts (or resumes) the job.
  std::function<void()> on_active;
  // Called once the steps in flight are rebuilt from the space and their ready tasks sent, with
  // the time since the lease was taken: the recovery an incarnation must outlive to progress.
  std::function<void(std::chrono::nanoseconds)> on_recovered;
  // Called when steps are admitted or finished (on the manager's thread).
  std::function<void(const FlightStatus&)> on_flight;
  // Called when a task completes for the first time (on the manager's thread).
  // `handler` ran it at slow-down `speed` (1: full speed); `work` is nn::TaskWork of its spec.
  std::function<void(const std::string& task_key, int handler, int64_t exec_ns, int64_t work,
                     double speed)>
      on_task_done;
  // Where retransmissions and take-overs are recorded; null: not traced.
  TraceRecorder* trace = nullptr;
  // The clock of deadlines, task times, the lease and claims; null: Env::Default(). A test's
  // ManualEnv forces every deadline path without sleeping.
  const Env* env = nullptr;
};

class Manager {
 public:
  // REQUIRES: `space`, `job` and `data` outlive the manager.
  Manager(Space* space, Layout layout, const JobConfig* job, const nn::Dataset* data,
          ManagerSettings options);
  ~Manager();

  // Puts the initial state of a new job (version-0 shards, the state tuple, a free lease) unless
  // the job's state tuple is already there. Call once before the first manager runs.
  // With `descriptor`, its tuple goes in first: how a process joining the job finds it, and
  // whether the job's handlers make its step inputs from their own copy of the data
  // (runtime/state/local_inputs.h) instead of reading them from the space.
  // The job's audit log (runtime/audit/audit.h) starts here, with a job_start record.
  // With `signer`, its records are signed (a secure deployment's manager key). Its clock and
  // waits are `env`'s (null: Env::Default()). `task_size` is the run's (-1: the job's): the tiles
  // strategy's shards are its tiles, so a tiles job is set up with its tile edge for good (in the
  // state tuple, which every incarnation reads) and the controller never changes it.
  static Status InitJob(Space* space, const Layout& layout, const JobConfig& job,
                        const nn::Model& init, const JobDescriptor* descriptor = nullptr,
                        std::shared_ptr<const AuditSigner> signer = nullptr,
                        const Env* env = nullptr, int64_t task_size = -1);
  // The same with the job's initial model drawn a shard at a time, never whole (a manager with a
  // memory budget: the job_start record's hash is read back in bands that fit `memory`, 0: none).
  static Status InitJob(Space* space, const Layout& layout, const JobConfig& job,
                        const nn::InitialWeights& init, int64_t memory,
                        const JobDescriptor* descriptor = nullptr,
                        std::shared_ptr<const AuditSigner> signer = nullptr,
                        const Env* env = nullptr, int64_t task_size = -1);

  // Waits for the lease (as a standby), then runs or resumes the job until every step has been
  // applied. Returns Cancelled when `crash` is set: the manager stops at once, as if killed,
  // leaving its lease to lapse. Unavailable when it loses its lease to another manager.
  Status Run(const std::atomic<bool>& crash);

  ControllerSnapshot ControllerState() const { return controller_.Snapshot(); }

  // The job's progress as stored in the space (readable by anyone, e.g. after the run).
  static Result<Progress> ReadProgress(Space* space, const Layout& layout);

 private:
  using TaskRun = StepTask;
  using ActiveStep = StepFlow;

  Status LoadState();
  Status SaveState();
  Status AdmitAhead();
  Status Admit(int64_t step);
  // Step `step`'s input tensors (its mini-batch, as `plan` splits it), made from the data.
  std::vector<nn::KeyedTensor> InputsOf(const nn::Plan& plan, int64_t step, int64_t rows);
  void ReportFlight() const;
  Status Recover(ActiveStep& st);
  // Sends a fresh task when the pouch has room, else queues it; retransmissions (a reason)
  // always go at once.
  Status Dispatch(ActiveStep& st, TaskRun& task, const char* reason);
  // `speculative`: a copy for a faster handler (CheckStragglers), not a retransmission.
  Status Send(ActiveStep& st, TaskRun& task, const char* reason, bool speculative = false);
  Status SendQueued();
  void ProbeTasks();
  bool Ready(const ActiveStep& st, const TaskRun& task) const;
  Status OnDone(const Tuple& done);
  Status OnMissingInputs(ActiveStep& st, TaskRun& t, const std::vector<std::string>& keys);
  Status RunAgain(ActiveStep& st, TaskRun& t, const char* reason);
  // Sends `t` again, no longer done (RunAgain, less the count of completed tasks).
  Status SendAgain(ActiveStep& st, TaskRun& t, const char* reason);
  // Why an update whose proposal could not be applied (`applied`) is made again: its proposal
  // lost since it was seen, or not its handler's bytes (recorded as tampering); null otherwise.
  const char* RedoReason(const Status& applied, const std::string& shard, int64_t step);
  // A handler's output, or none when it is not in the space, or is there with bytes that are not
  // its writer's (IsTampered): then it is taken out, logged and recorded as a `tampering` audit
  // record, and made again like a lost one.
  Result<std::optional<Tuple>> ReadOutput(const Key& key);
  void RecordTampering(const Key& key, const Status& status);
  Status ApplyUpdate(const std::string& key, int64_t step);
  void DropStaleVersions(const ActiveStep& st);
  TaskRun& TaskAt(const TaskRef& ref);
  Status MarkAvailable(ActiveStep& st, const std::string& tensor);
  Status DispatchReady();
  Status Release();
  Status CheckDeadlines();
  Status CheckClaimsNow();
  Status CheckStragglers();
  // Finds out in the space what `watch_` asked about task `t`, into `seen`.
  Status LookUp(Look look, const TaskRun& t, Seen* seen);
  Status FinalizeSteps();
  Status CleanupStep(const ActiveStep& st);
  Status CleanupLeftStep();
  Clock::time_point NextWake() const;
  Result<const nn::Plan*> PlanFor(int64_t task_size);

  // The audit log's records of this incarnation: the lease it took, each step's versions, the
  // handlers it hears of, the job's end. Made when it takes the lease.
  Status AuditLease();
  Status AuditHandler(int handler);
  Status AuditEnd();
  std::unique_ptr<AuditLog> audit_;
  // One versions record covers kAuditStepsPerRecord steps (and one ends at the last step), with
  // the last version of each shard's content SHA-256: a record a step was the log's, and the
  // space's, memory growing by a kilobyte a step (13 MB a minute in process), and hashing every
  // version of every step was the model's bytes each step (the flagship run: 1 MB a step, 1.3x).
  static constexpr int64_t kAuditStepsPerRecord = 64;
  struct AuditBatch {
    int64_t first_step = -1, last_step = -1;
    std::map<std::string, int64_t> from;         // shard -> its first version in the batch
    std::map<std::string, WrittenVersion> last;  // shard -> its last version
    int64_t held = 0;                            // the bytes of the contents in `last`
  };
  // The bytes of version contents the audit may hold at once (ManagerSettings::memory).
  int64_t AuditHoldLimit() const;
  // Whether the probe's copy of every shard fits the budget (ManagerSettings::memory).
  bool ProbeFits() const;
  AuditBatch audit_batch_;
  int64_t audited_step_ticket_ = 0;  // the last versions record: written before the next is made
  std::set<int> handlers_seen_;
  std::set<int> refusing_handlers_;  // handlers whose refusal was logged (once each)
  // Refusals in a row after which a task no live handler holds ends the job.
  static constexpr int kMaxRefusals = 64;

  Space* raw_space_;  // the lease's
  Layout layout_;
  const JobConfig* job_;
  const nn::Dataset* data_;
  ManagerSettings options_;
  const Env* env_;  // deadlines, task times and the lease are on its clock
  Lease lease_;
  // Everything else goes through the fence: no write without the lease
  // (runtime/state/fenced_space.h).
  FencedSpace fenced_;
  Space* space_ = &fenced_;
  VersionStore versions_;
  Liveness liveness_;
  Dispatcher dispatcher_;
  Controller controller_;
  StragglerWatch stragglers_;
  TaskWatch watch_{&controller_, &stragglers_, options_.speculate};  // the decisions on tasks
  std::unique_ptr<nn::Batcher> batcher_;
  std::map<int64_t, nn::Plan> plans_;  // by task size
  const nn::Plan* plan_ = nullptr;     // the plan new steps use
  int64_t total_steps_ = 0;
  bool local_inputs_ = false;  // the job's descriptor says handlers make the step inputs

  Progress progress_;  // persisted in the state tuple
  std::map<int64_t, ActiveStep> active_;
  std::unordered_map<std::string, TaskRef> task_index_;  // task key -> step, index
  int64_t next_admit_ = 0;
  std::vector<TaskRef> newly_ready_;  // ready, to be released biggest first
  int64_t recover_steps_ = 0;         // steps still to admit with a look at what is already done
  // The task tuples in the space when this incarnation began recovering (its predecessor's).
  std::optional<std::unordered_set<std::string>> queued_at_start_;
};

}  // namespace acan::runtime
