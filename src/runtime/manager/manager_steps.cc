// The manager's steps: admitting a step (its inputs and tasks), rebuilding one a predecessor had
// in flight, releasing tasks as their inputs come to exist, applying updates exactly once, and
// finishing a step (its metrics, the saved state, the clean-up).
#include <fmt/format.h>
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_set>

#include "acan/job.h"
#include "nn/executor.h"
#include "nn/model.h"
#include "runtime/core/messages.h"
#include "runtime/core/step_rules.h"
#include "runtime/manager/manager.h"
#include "runtime/manager/probe.h"
#include "runtime/state/confirmed_put.h"
#include "runtime/state/step_cleanup.h"

namespace acan::runtime {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// ---- dataflow ----

std::vector<nn::KeyedTensor> Manager::InputsOf(const nn::Plan& plan, int64_t step, int64_t rows) {
  const nn::Batch batch = batcher_->Get(step);
  return plan.StepInputs(step, rows, batch.x, batch.t);
}

Status Manager::Admit(int64_t step) {
  const bool recovering = recover_steps_ > 0;
  if (recovering) --recover_steps_;
  if (options_.adapt_task_size && controller_.task_size() != plan_->task_size()) {
    ACAN_ASSIGN_OR_RETURN(plan_, PlanFor(controller_.task_size()));
    progress_.task_size = plan_->task_size();
  }
  const int64_t rows = batcher_->BatchRows(step);
  // Open the step before anything of it exists (a recovered step may be open already).
  std::optional<Tuple> open;
  if (recovering) {
    ACAN_ASSIGN_OR_RETURN(open, space_->Read(layout_.StepOpen(step)));
  }
  if (!open.has_value()) {
    ACAN_RETURN_IF_ERROR(PutConfirmed(space_, layout_.StepOpen(step), Value()));
  }
  std::vector<std::string> inputs = plan_->StepInputKeys(step, rows);
  // With local inputs each handler makes them from its copy of the data: none is made here.
  if (!local_inputs_) {
    for (auto& [key, tensor] : InputsOf(*plan_, step, rows)) {
      if (recovering) {
        ACAN_ASSIGN_OR_RETURN(const bool there, space_->Contains(layout_.Tensor(key)));
        if (there) continue;
      }
      ACAN_RETURN_IF_ERROR(space_->Put(layout_.Tensor(key), Value::FromVector(std::move(tensor))));
    }
  }
  ActiveStep& st = active_[step] =
      StepFlow::Build(plan_, step, rows, std::move(inputs), true, job_->partition.tile_bands,
                      options_.handler_data_bytes);
  for (size_t i = 0; i < st.tasks.size(); ++i) task_index_[st.tasks[i].spec.key] = {step, i};
  if (recovering) ACAN_RETURN_IF_ERROR(Recover(st));
  for (size_t i = 0; i < st.tasks.size(); ++i) {
    if (!st.tasks[i].dispatched && Ready(st, st.tasks[i])) newly_ready_.emplace_back(step, i);
  }
  return Release();
}

// A previous manager got this far: what is already in the space need not run again. First find
// the tasks whose outputs all exist (done) or that are still queued, then release what they feed.
Status Manager::Recover(ActiveStep& st) {
  if (!queued_at_start_.has_value()) {  // once per incarnation: only a predecessor's tasks count
    queued_at_start_.emplace();
    ACAN_ASSIGN_OR_RETURN(auto tasks, space_->ReadAll(layout_.AnyTaskPattern()));
    for (const Tuple& q : tasks) queued_at_start_->insert(q.key.str());
  }
  const std::unordered_set<std::string>& queued = *queued_at_start_;
  for (TaskRun& t : st.tasks) {
    bool done = true;
    for (const std::string& out : t.spec.outputs) {
      if (nn::Plan::IsStateKey(out) && versions_.Current(out) > st.step) {
        continue;  // applied by the previous manager
      }
      // Whether it is there, not its bytes: a tampered output is refused where it is read (by
      // the task that reads it, or by the update that applies a proposal).
      ACAN_ASSIGN_OR_RETURN(const bool there, space_->Contains(layout_.Output(out, st.step)));
      done = done && there;
    }
    bool held = queued.count(layout_.Task(t.spec.type, t.spec.key, t.size_class).str()) > 0;
    if (!done && !held) {  // a live handler may be running it right now
      ACAN_ASSIGN_OR_RETURN(ClaimState claim, liveness_.ClaimOf(t.spec.key));
      held = claim == ClaimState::kAlive;
    }
    if (watch_.OnRecovered(t, done, held, env_->Now())) dispatcher_.AddInFlight(t.size_class);
  }
  for (TaskRun& t : st.tasks) {
    if (!t.done) continue;
    ++st.done;
    for (const std::string& out : t.spec.outputs) {
      if (!nn::Plan::IsStateKey(out)) {
        (void)st.Provide(out);  // what becomes ready is released below, with the rest
        continue;
      }
      if (versions_.Current(out) != st.step) continue;
      Status applied = ApplyUpdate(out, st.step);
      if (const char* why = RedoReason(applied, out, st.step)) {
        ACAN_RETURN_IF_ERROR(SendAgain(st, t, why));  // not counted as completed: nothing to undo
        break;
      }
      ACAN_RETURN_IF_ERROR(applied);
    }
  }
  return Status::Ok();
}

// Ready to send: runtime/core/step_rules.h decides from the versions the store holds.
bool Manager::Ready(const ActiveStep& st, const TaskRun& t) const {
  return ReadyToSend(st, t, options_.window,
                     [this](const std::string& shard) { return versions_.Current(shard); });
}

Status Manager::MarkAvailable(ActiveStep& st, const std::string& tensor) {
  for (size_t i : st.Provide(tensor)) {
    if (!st.tasks[i].dispatched && Ready(st, st.tasks[i])) newly_ready_.emplace_back(st.step, i);
  }
  return Status::Ok();
}

// Exactly once: the version store writes version step + 1 only from version step, and only while
// this manager holds the lease.
Status Manager::ApplyUpdate(const std::string& key, int64_t step) {
  ACAN_ASSIGN_OR_RETURN(VersionStore::Outcome outcome,
                        versions_.Apply(key, step, [this] { return lease_.Keep(); }));
  if (outcome == VersionStore::Outcome::kGap) progress_.gaps++;  // cannot happen: see Ready()
  if (outcome == VersionStore::Outcome::kRepeat) progress_.repeats++;
  return Status::Ok();
}

// Once step `st` is complete, every task of it (and of every earlier step) is done, and a later
// step t reads a version >= t - W + 1 >= step + 2 - W: older versions can go, their buffers back
// to the pool. Not before: until the step is complete, one of its tasks may have to run again
// (an output of it was lost), reading the very versions it read the first time.
void Manager::DropStaleVersions(const ActiveStep& st) {
  for (const auto& [shard, version] : versions_.versions()) versions_.DropStale(shard, st.step);
}

Status Manager::DispatchReady() {
  for (auto& [step, st] : active_) {
    for (size_t i = 0; i < st.tasks.size(); ++i) {
      if (!st.tasks[i].dispatched && Ready(st, st.tasks[i])) newly_ready_.emplace_back(step, i);
    }
  }
  return Release();
}

// Sends (or queues) the tasks that became ready, biggest first: when a few large tasks and many
// small ones become ready together (a step's updates), the large ones start on different
// handlers and the small ones fill in around them.
Status Manager::Release() {
  Dispatcher::BiggestFirst(&newly_ready_, [&](const TaskRef& r) { return TaskAt(r).work; });
  std::vector<TaskRef> ready;
  ready.swap(newly_ready_);
  for (auto [step, i] : ready) {
    ActiveStep& st = active_.at(step);
    if (!st.tasks[i].dispatched) ACAN_RETURN_IF_ERROR(Dispatch(st, st.tasks[i], nullptr));
  }
  return Status::Ok();
}

Status Manager::CleanupStep(const ActiveStep& st) {
  // The step is saved as applied already: what could not be removed is left behind (and logged),
  // not a reason to stop; a successor's CleanupLeftStep tries again only for the last step.
  Status removed = RemoveStep(space_, layout_, st, !local_inputs_);
  if (!removed.ok()) spdlog::warn("manager {}: {}", options_.owner, removed.ToString());
  return Status::Ok();
}

// A predecessor that died between saving step next_step - 1 as applied and the end of its
// clean-up left some of it behind. Every earlier step was cleaned up before that step was saved,
// so this one step is all there can be.
Status Manager::CleanupLeftStep() {
  const int64_t step = progress_.next_step - 1;
  if (step < 0) return Status::Ok();
  const int64_t rows = batcher_->BatchRows(step);
  return CleanupStep(StepFlow::Build(plan_, step, rows, plan_->StepInputKeys(step, rows),
                                     /*encode=*/false, job_->partition.tile_bands,
                                     options_.handler_data_bytes));
}

Status Manager::FinalizeSteps() {
  while (!active_.empty()) {
    ActiveStep& st = active_.begin()->second;
    if (st.done < st.tasks.size()) break;
    const int64_t epoch = st.step / batcher_->BatchesPerEpoch();
    StepMetrics metrics;
    bool lost = false;
    for (const std::string& k : st.plan->MetricKeys(st.step, st.rows)) {
      ACAN_ASSIGN_OR_RETURN(auto m, ReadOutput(layout_.Tensor(k)));
      if (!m.has_value()) {  // lost on its way into the space: its task runs again
        const std::optional<size_t> producer = st.ProducerOf(k);
        if (!producer.has_value()) return Status::DataLoss("no task writes metrics '" + k + "'");
        ACAN_RETURN_IF_ERROR(RunAgain(st, st.tasks[*producer], "lost-output"));
        lost = true;
        continue;
      }
      Status added = metrics.Add(m->value.As<float>(), st.rows);
      if (!added.ok()) return Status::DataLoss("metrics '" + k + "': " + added.message());
    }
    if (lost) break;
    FinishStep(&progress_, st.step, st.rows, batcher_->BatchesPerEpoch(), metrics);
    // A version is the number of updates applied to its shard: counted from the versions, so
    // that a step applied partly by a predecessor (and perhaps saved by it) counts once.
    progress_.versions_applied = versions_.Applied();
    if (audit_) {
      AuditBatch& b = audit_batch_;
      if (b.first_step < 0) b.first_step = st.step;
      b.last_step = st.step;
      for (WrittenVersion& w : versions_.TakeWritten()) {
        b.from.emplace(w.shard, w.version);
        WrittenVersion& last = b.last[w.shard];
        b.held -= int64_t(last.value.size());
        last = std::move(w);
        if (b.held + int64_t(last.value.size()) > AuditHoldLimit()) {
          last.Hash();
        } else {
          b.held += int64_t(last.value.size());
        }
      }
      if ((st.step + 1) % kAuditStepsPerRecord == 0 || st.step + 1 == total_steps_) {
        // The previous record is written before this one is made (versions a manager wrote
        // after its last record are in its successor's lease record, as the versions found).
        ACAN_RETURN_IF_ERROR(audit_->WaitWritten(audited_step_ticket_));
        std::vector<WrittenVersion> last;
        for (auto& [shard, v] : b.last) last.push_back(std::move(v));
        audited_step_ticket_ =
            audit_->AppendVersions("versions", {{"steps", {b.first_step, b.last_step}}},
                                   std::move(last), true, std::move(b.from));
        b = AuditBatch();
      }
    }
    ACAN_RETURN_IF_ERROR(SaveState());
    DropStaleVersions(st);
    ACAN_RETURN_IF_ERROR(CleanupStep(st));
    for (const TaskRun& t : st.tasks) task_index_.erase(t.spec.key);
    const int64_t finished_step = st.step;
    const nn::Plan* plan = st.plan;
    active_.erase(active_.begin());
    // Within a budget, the heap's free pages go back to the kernel once a step: glibc returns
    // only its top, and a step's proposals, freed between what stays, left the 4 MiB manager of
    // the 2048 x 2048 job holding 2.6 MiB of free heap (1.5 in use; mallinfo2) besides its data.
    if (options_.memory > 0) malloc_trim(0);
    ReportFlight();
    if (options_.on_step) options_.on_step(progress_, controller_.Snapshot());
    if (options_.on_epoch_end && (finished_step + 1) % batcher_->BatchesPerEpoch() == 0) {
      ACAN_ASSIGN_OR_RETURN(nn::Model model, ReadModel(space_, layout_, *plan, finished_step + 1));
      options_.on_epoch_end(epoch, model);
    }
  }
  return Status::Ok();
}

}  // namespace acan::runtime
