// Where a job's tuples live in the space. Every key starts with the job's token, so several
// jobs can share one space and a handler's pattern names exactly the tasks it may run:
//
// clang-format off
//   <job>.task.<type>.<task key>     a task to run (type: forward|activation|loss|backward|update)
//   <job>.t.<tensor key>             a step's tensor (inputs, activations, gradients, metrics)
//   <job>.p.<state key>.v<version>   a parameter or velocity shard at a version
//   <job>.u.<state key>.s<step>      an update's proposed next version, applied by the manager
//   <job>.done.<task key>            a handler's report that a task ran
//   <job>.claim.<task key>.h<id>     handler <id> is running the task (incarnation, lease end)
//   <job>.alive.h<id>                the current incarnation of handler <id>
//   <job>.step.s<step>               the step is open: its tensors may be written (removed first
//                                    when the step is cleaned up)
//   <job>.m.state                    the manager's progress (restart point)
//   <job>.m.lease                    the single lease token: who manages the job, until when
// clang-format on
//
// Handlers write only task outputs (t, u, done); parameters (p) are written by the manager
// alone, after a compare-and-set on the shard's version. Plain functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "nn/plan.h"
#include "nn/task.h"

namespace acan::runtime {

class Layout {
 public:
  explicit Layout(std::string job) : job_(std::move(job)) {}
  const std::string& job() const { return job_; }

  std::string Task(nn::TaskType type, std::string_view task_key) const {
    return job_ + ".task." + std::string(nn::ToString(type)) + "." + std::string(task_key);
  }
  std::string TaskPattern(nn::TaskType type) const {
    return job_ + ".task." + std::string(nn::ToString(type)) + ".>";
  }
  std::string AnyTaskPattern() const { return job_ + ".task.>"; }
  std::string Tensor(std::string_view key) const { return job_ + ".t." + std::string(key); }
  std::string State(std::string_view key, int64_t version) const {
    return job_ + ".p." + std::string(key) + ".v" + std::to_string(version);
  }
  std::string StatePattern(std::string_view key) const {
    return job_ + ".p." + std::string(key) + ".*";
  }
  std::string Proposal(std::string_view key, int64_t step) const {
    return job_ + ".u." + std::string(key) + ".s" + std::to_string(step);
  }
  // Where a step's task writes output `out`: the step tensor, or for a parameter or velocity
  // shard the proposal of its next version.
  std::string Output(std::string_view out, int64_t step) const {
    return nn::Plan::IsStateKey(out) ? Proposal(out, step) : Tensor(out);
  }
  std::string Done(std::string_view task_key) const {
    return job_ + ".done." + std::string(task_key);
  }
  std::string DonePattern() const { return job_ + ".done.>"; }
  // A restarted handler's notice, sent where the manager waits for done reports. No task key
  // has the verb "restarted", so it cannot be mistaken for one.
  std::string RestartNotice(int handler) const {
    return job_ + ".done.restarted.h" + std::to_string(handler);
  }
  bool IsRestartNotice(std::string_view task_key) const {
    return task_key.starts_with("restarted.");
  }
  // The task key of a done tuple's key.
  std::string_view TaskKeyOfDone(std::string_view done_key) const {
    return done_key.substr(job_.size() + 6);
  }
  std::string Claim(std::string_view task_key, int handler) const {
    return job_ + ".claim." + std::string(task_key) + ".h" + std::to_string(handler);
  }
  std::string ClaimPattern(std::string_view task_key) const {
    return job_ + ".claim." + std::string(task_key) + ".*";
  }
  // Present from a step's admission until its clean-up begins: a handler whose outputs land
  // after it is gone takes them back, so nothing of a finished step stays behind.
  std::string StepOpen(int64_t step) const { return job_ + ".step.s" + std::to_string(step); }
  std::string Alive(int handler) const { return job_ + ".alive.h" + std::to_string(handler); }
  std::string ManagerState() const { return job_ + ".m.state"; }
  std::string Lease() const { return job_ + ".m.lease"; }

 private:
  std::string job_;
};

}  // namespace acan::runtime
