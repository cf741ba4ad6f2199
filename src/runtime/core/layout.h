// Where a job's tuples live in the space: the one place that builds every key and pattern of a
// job and parses them back (LevelDB's filename.h). Every key starts with the job's token, so
// several jobs can share one space and a handler's pattern names exactly the tasks it may run:
//
// clang-format off
//   <job>.task.<type>.<task key>     a task to run (type: forward|activation|loss|backward|update)
//   <job>.task.<type>.[z.]*b.<task key>   a task of size class c (c tokens "z"): a job cut in
//                                    tile bands with budgets (budget.h); class 0 the largest
//                                    budget's. "<type>.z.z.>" is every class from 2 on: what a
//                                    handler whose budget holds class 2 may run, in one pattern.
//   <job>.t.<tensor key>             a step's tensor (inputs, activations, gradients, metrics)
//   <job>.p.<state key>.v<version>   a parameter or velocity shard at a version
//   <job>.u.<state key>.s<step>      an update's proposed next version, applied by the manager
//   <job>.done.<task key>            a handler's report that a task ran
//   <job>.done.restarted.h<id>       handler <id> came back or died: its older claims are dead
//   <job>.claim.<task key>.h<id>     handler <id> is running the task (incarnation, lease end)
//   <job>.alive.h<id>                the current incarnation of handler <id>
//   <job>.step.s<step>               the step is open: its tensors may be written (removed first
//                                    when the step is cleaned up)
//   <job>.m.state                    the manager's progress (restart point)
//   <job>.m.lease                    a cell (not a tuple): who manages the job, until when
//   <job>.m.init                     a cell: which manager is setting up a new job, until when
//   <job>.m.job                      the job file and how handlers get their inputs (a joining
//                                    process needs only the space and the job id)
//   <job>.m.data                     the job file, put before the manager loads its data, so that
//                                    handlers load their copy meanwhile
//   <job>.usage.<process>            a role process's traffic through the space, put as it exits
//   <job>.audit.a<seq>               a cell: a record of the job's audit log (runtime/audit/audit.h)
// clang-format on
//
// Task and tensor keys are "<verb>.s<step>[.<tag><n>...]" (nn::Plan); state keys have no step.
// Handlers write only task outputs (t, u, done, claims, alive); parameters (p) are written by the
// manager alone, after a compare-and-set on the shard's version. Immutable; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "acan/key.h"
#include "nn/task.h"

namespace acan::runtime {

enum class KeyKind {
  kTask,
  kTensor,
  kState,
  kProposal,
  kDone,
  kRestartNotice,
  kClaim,
  kAlive,
  kStepOpen,
  kManagerState,
  kLease,
  kJobDescriptor,
  kDataHint,
  kUsage,
};

// A key of a job, taken apart. Fields that the kind has no use for keep their defaults.
struct ParsedKey {
  KeyKind kind = KeyKind::kTask;
  std::optional<nn::TaskType> task_type;  // kTask
  std::string task_key;                   // kTask, kDone, kClaim: "mb.s12.m0"
  std::string name;      // kTensor: the tensor key; kState, kProposal: the shard key
  int64_t step = -1;     // of the task or tensor key, a proposal, a step marker (-1: none)
  int64_t version = -1;  // kState
  int handler = -1;      // kClaim, kAlive, kRestartNotice
  int size_class = -1;   // kTask: its size class (TaskClassOf in budget.h; -1: any handler's)
};

class Layout {
 public:
  // REQUIRES: `job` is a valid key (one or more tokens).
  explicit Layout(std::string job);
  const std::string& job() const { return job_; }

  // `size_class` >= 0: a task of that size class (budget.h: 0 the largest budget's), and the
  // patterns of the tasks of that class and every later (smaller) one, or with `exact` of that
  // class alone; -1: no class (any handler's; the patterns: every task).
  Key Task(nn::TaskType type, std::string_view task_key, int size_class = -1) const;
  Pattern TaskPattern(nn::TaskType type, int size_class = -1, bool exact = false) const;
  Pattern AnyTaskPattern(int size_class = -1, bool exact = false) const;
  Key Tensor(std::string_view key) const;
  Key State(std::string_view key, int64_t version) const;
  Pattern StatePattern(std::string_view key) const;
  Pattern AllStatesPattern() const;  // every version of every shard of the job
  Key Proposal(std::string_view key, int64_t step) const;
  Pattern AllProposalsPattern() const;  // every proposal of the job
  // Where a step's task writes output `out`: the step tensor, or for a parameter or velocity
  // shard the proposal of its next version.
  Key Output(std::string_view out, int64_t step) const;
  Key Done(std::string_view task_key) const;
  Pattern DonePattern() const;
  // A restarted (or dead) handler's notice, sent where the manager waits for done reports. No
  // task key has the verb "restarted", so it cannot be mistaken for one.
  Key RestartNotice(int handler) const;
  Key Claim(std::string_view task_key, int handler) const;
  Pattern ClaimPattern(std::string_view task_key) const;
  Pattern AllClaimsPattern() const;  // every claim of the job
  // Present from a step's admission until its clean-up begins: a handler whose outputs land
  // after it is gone takes them back, so nothing of a finished step stays behind.
  Key StepOpen(int64_t step) const;
  Key Alive(int handler) const;
  Pattern AllAlivePattern() const;  // every handler's alive tuple
  Key ManagerState() const;
  Key Lease() const;
  // What the manager puts fenced by its lease (the parameter versions and its state), the lease
  // itself and the job's descriptor: SpaceOptions::fenced of every space of the job
  // (acan::JobSpaceOptions). Over NATS they live in the job's fenced stream, where only a manager
  // writes or deletes, so that a handler can remove none of what the job is remade from.
  std::vector<Pattern> FencedKeys() const;
  Key InitGuard() const;  // a cell: which manager sets up a new job (Manager::InitJob)
  Key JobDescriptor() const;
  Key DataHint() const;
  // REQUIRES: `process` is one key token ("h3-i2", "m1234").
  Key Usage(std::string_view process) const;
  Key AuditRecord(int64_t seq) const;  // a cell: record `seq` of the job's audit log (audit.h)
  Pattern UsagePattern() const;

  // Takes apart any key the builders above make; InvalidArgument naming the key when it is not
  // one of this job's.
  Result<ParsedKey> Parse(const Key& key) const;

  // The step of a task or tensor key ("mb.s12.m0" -> 12), -1 when it has none.
  static int64_t StepOf(std::string_view task_or_tensor_key);
  // A task key without its step token ("mb.s12.m0" -> "mb.m0"): the same task in every step.
  static std::string TaskClass(std::string_view task_key);

 private:
  Key Make(std::string text) const;
  Pattern MakePattern(std::string text) const;

  std::string job_;
  Key job_key_;
};

}  // namespace acan::runtime
