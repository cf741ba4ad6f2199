// The manager's tasks: sending them (and again), what a report means, lost inputs and outputs,
// and the loops that carry out TaskWatch's decisions on deadlines, restart notices and stragglers.
#include <fmt/format.h>
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

Status Manager::Dispatch(ActiveStep& st, TaskRun& t, const char* reason) {
  if (reason == nullptr) {
    t.dispatched = true;  // owned by the pouch from now on, sent or held back
    const TaskRef ref{st.step, static_cast<size_t>(&t - st.tasks.data())};
    if (!dispatcher_.Offer(ref, controller_.pouch(), t.size_class)) return Status::Ok();
  }
  return Send(st, t, reason);
}

Status Manager::SendQueued() {
  for (const TaskRef& ref : dispatcher_.TakeHeld(controller_.pouch())) {
    ACAN_RETURN_IF_ERROR(Send(active_.at(ref.first), TaskAt(ref), nullptr));
  }
  return Status::Ok();
}

Status Manager::Send(ActiveStep& st, TaskRun& t, const char* reason, bool speculative) {
  ++t.attempt;
  // Every copy of a task reads what the first one read, so that a task run again (its output was
  // lost) makes the same bytes: an update the version it advances, any other task the newest
  // version when it was first sent (no newer than its own step's, which stays until the step is
  // complete). A task made ready again by a new manager resolves them afresh.
  if (t.input_keys.empty()) {
    t.input_keys.reserve(t.spec.inputs.size());
    for (const std::string& in : t.spec.inputs) {
      if (local_inputs_ && std::find(st.inputs.begin(), st.inputs.end(), in) != st.inputs.end()) {
        t.input_keys.push_back(LocalInputs::Ref(st.plan->task_size(), in));
      } else if (!nn::Plan::IsStateKey(in)) {
        t.input_keys.push_back(layout_.Tensor(in).str());
      } else {
        const int64_t v = VersionToRead(t.spec.type, st.step, versions_.Current(in));
        t.input_keys.push_back(layout_.State(in, v).str());
      }
    }
  }
  const std::vector<std::string>& input_keys = t.input_keys;
  t.dispatched = true;
  const nanoseconds timeout = watch_.OnSent(t, env_->Now());
  if (speculative) {
    progress_.speculated++;
    if (options_.trace) {
      options_.trace->Instant(TraceRecorder::kManagerLane, "speculate " + t.spec.key, "speculate",
                              fmt::format(R"({{"attempt":{}}})", t.attempt));
    }
  } else {
    progress_.dispatched++;
  }
  if (reason) {
    // Sent again: whatever lost the task (or its outputs) may have taken the step's marker with
    // it (a purge of the tuples, a server that restarted without them), and a handler that finds
    // no marker takes its outputs back as a late copy's. The marker comes back first.
    ACAN_ASSIGN_OR_RETURN(auto open, space_->Read(layout_.StepOpen(st.step)));
    if (!open.has_value()) {
      spdlog::warn("manager {}: step {}'s marker is gone from the space: put again", options_.owner,
                   st.step);
      ACAN_RETURN_IF_ERROR(PutConfirmed(space_, layout_.StepOpen(st.step), Value()));
    }
    progress_.retransmitted++;
    progress_.retransmit_reasons[reason]++;
    spdlog::debug("manager {}: sending {} again (attempt {}): {}", options_.owner, t.spec.key,
                  t.attempt, reason);
    if (options_.trace) {
      options_.trace->Instant(TraceRecorder::kManagerLane, "retransmit " + t.spec.key, "retransmit",
                              fmt::format(R"({{"reason":"{}","attempt":{}}})", reason, t.attempt));
    }
  }
  return space_->Put(layout_.Task(t.spec.type, t.spec.key, t.size_class),
                     EncodeTaskMessage(t.attempt, input_keys, t.encoded_spec,
                                       std::chrono::nanoseconds(timeout).count()));
}

Status Manager::OnDone(const Tuple& tuple) {
  auto parsed = layout_.Parse(tuple.key);
  if (parsed.ok() && parsed->kind == KeyKind::kRestartNotice) {
    ACAN_RETURN_IF_ERROR(AuditHandler(parsed->handler));
    return CheckClaimsNow();
  }
  if (!parsed.ok() || parsed->kind != KeyKind::kDone) {
    spdlog::warn("manager: ignoring tuple '{}': not a done report", tuple.key.str());
    return Status::Ok();
  }
  const std::string& task_key = parsed->task_key;
  auto msg = DecodeDoneMessage(tuple.value);
  if (!msg.ok()) {
    spdlog::warn("manager: ignoring done tuple '{}': {}", tuple.key.str(), msg.status().ToString());
    return Status::Ok();
  }
  if (audit_ && msg->handler >= 0 && handlers_seen_.insert(msg->handler).second) {
    audit_->Append("handler_joined", {{"handler", msg->handler}, {"first_report", task_key}});
  }
  auto it = task_index_.find(task_key);
  ActiveStep* st_in_flight = it == task_index_.end() ? nullptr : &active_.at(it->second.first);
  TaskRun* in_flight = st_in_flight ? &st_in_flight->tasks[it->second.second] : nullptr;
  if (in_flight && TimesItsHandler(*msg)) watch_.OnReport(*in_flight, msg->handler, msg->exec_ns);
  switch (MeaningOf(in_flight, *msg)) {
    case ReportMeaning::kLate:
    case ReportMeaning::kDuplicate:
      progress_.duplicates_discarded++;
      return Status::Ok();
    case ReportMeaning::kStaleMissing:
      return Status::Ok();
    case ReportMeaning::kMissingInputs:
      return OnMissingInputs(*st_in_flight, *in_flight, msg->missing);
    case ReportMeaning::kRefused: {
      // Its handler cannot hold it: another may. A task no live handler will take ends the job
      // with why, never a loop (the tiles were cut for the budgets known at set-up).
      if (++in_flight->refusals > kMaxRefusals) {
        return Status::ResourceExhausted(fmt::format(
            "task '{}' was refused {} times in a row, last by handler {}: {}; no live handler's "
            "memory budget holds it (give the handlers more memory, or start the job with the "
            "smallest budget among them so that its tiles are cut to fit)",
            task_key, in_flight->refusals, msg->handler, msg->refused));
      }
      if (refusing_handlers_.insert(msg->handler).second) {
        spdlog::warn("manager: handler {} refused task '{}': {}; sent again", msg->handler,
                     task_key, msg->refused);
      }
      return Dispatch(*st_in_flight, *in_flight, "refused");
    }
    case ReportMeaning::kFailed:
      return Status::FailedPrecondition(
          fmt::format("task '{}' failed on handler {}: {}", task_key, msg->handler, msg->error));
    case ReportMeaning::kFirst:
      break;
  }
  ActiveStep& st = *st_in_flight;
  TaskRun& t = *in_flight;
  t.done = true;
  ++st.done;
  dispatcher_.OnDone(t.size_class);
  if (options_.on_task_done) {
    options_.on_task_done(t.spec.key, msg->handler, msg->exec_ns, t.work, msg->speed);
  }
  progress_.completed++;
  progress_.by_type[std::string(nn::ToString(t.spec.type))]++;
  progress_.useful_task_s += double(msg->exec_ns) / 1e9;
  watch_.OnDone(t, env_->Now());
  for (const std::string& out : t.spec.outputs) {
    if (nn::Plan::IsStateKey(out)) {
      Status applied = ApplyUpdate(out, st.step);
      if (const char* why = RedoReason(applied, out, st.step)) return RunAgain(st, t, why);
      ACAN_RETURN_IF_ERROR(applied);
    } else {
      ACAN_RETURN_IF_ERROR(MarkAvailable(st, out));
    }
  }
  return Status::Ok();
}

// A handler could not run `t`: inputs it was sent to read are not in the space. What landed late
// is there now; a step input is made again from the batch; a tensor another task wrote is made
// again by running that task again, `t` waiting for it as at the start (docs/architecture.md). A
// version of a shard has no other copy: its loss ends the job with an error, never a loop.
Status Manager::OnMissingInputs(ActiveStep& st, TaskRun& t, const std::vector<std::string>& keys) {
  const size_t self = static_cast<size_t>(&t - st.tasks.data());
  bool waits = false;
  for (const std::string& text : keys) {
    if (LocalInputs::IsRef(text)) {
      return Status::FailedPrecondition(
          fmt::format("task '{}': a handler has no local copy of the data to make input '{}' from",
                      t.spec.key, text));
    }
    auto key = Key::Parse(text);
    auto parsed = key.ok() ? layout_.Parse(*key) : Result<ParsedKey>(key.status());
    if (!parsed.ok()) {
      return Status::DataLoss(
          fmt::format("task '{}' reports a missing input '{}', not a key of '{}'", t.spec.key, text,
                      layout_.job()));
    }
    bool present = false;
    if (parsed->kind == KeyKind::kState) {
      ACAN_ASSIGN_OR_RETURN(present, space_->Contains(*key));
    } else {
      ACAN_ASSIGN_OR_RETURN(auto output, ReadOutput(*key));
      present = output.has_value();
    }
    if (present) continue;  // it landed late: sending the task again is enough
    if (parsed->kind == KeyKind::kState) {
      // Every copy reads the version its first copy read, kept until the step is complete:
      // sending it again would find it missing again.
      return Status::DataLoss(fmt::format(
          "version {} of shard '{}' is gone from the space (task '{}' could not read it); the "
          "model's state has no other copy, so job '{}' cannot go on",
          parsed->version, parsed->name, t.spec.key, layout_.job()));
    }
    if (parsed->kind != KeyKind::kTensor) {
      return Status::DataLoss(
          fmt::format("task '{}' reports a missing input '{}'", t.spec.key, text));
    }
    if (std::find(st.inputs.begin(), st.inputs.end(), parsed->name) != st.inputs.end()) {
      const nn::Batch batch = batcher_->Get(st.step);
      ACAN_ASSIGN_OR_RETURN(std::vector<float> tensor,
                            st.plan->StepInput(st.step, st.rows, parsed->name, batch.x, batch.t));
      progress_.inputs_restored++;
      ACAN_RETURN_IF_ERROR(space_->Put(*key, Value::FromVector(std::move(tensor))));
      continue;
    }
    const std::optional<size_t> producer = st.ProducerOf(parsed->name);
    if (!producer.has_value()) {
      return Status::DataLoss(fmt::format("task '{}' of step {} reads '{}', which no task writes",
                                          t.spec.key, st.step, parsed->name));
    }
    st.Await(parsed->name, self);
    waits = true;
    ACAN_RETURN_IF_ERROR(RunAgain(st, st.tasks[*producer], "lost-output"));
  }
  if (!waits) return Dispatch(st, t, "lost-input");
  // Sent again, as a fresh task, once what it waits for is back.
  t.dispatched = false;
  dispatcher_.OnDone(t.size_class);
  return Status::Ok();
}

Result<std::optional<Tuple>> Manager::ReadOutput(const Key& key) {
  auto read = space_->Read(key);
  if (read.ok() || !IsTampered(read.status())) return read;
  RecordTampering(key, read.status());
  (void)space_->Take(key, 1, Deadline::Now());  // refused again, and gone
  return std::optional<Tuple>();
}

// A task that completed is needed again: an output of it was lost.
Status Manager::RunAgain(ActiveStep& st, TaskRun& t, const char* reason) {
  if (!t.done) return Status::Ok();  // already running again, or waiting to
  progress_.completed--;
  return SendAgain(st, t, reason);
}

Status Manager::SendAgain(ActiveStep& st, TaskRun& t, const char* reason) {
  t.done = false;
  --st.done;
  dispatcher_.AddInFlight(t.size_class);
  return Dispatch(st, t, reason);
}

const char* Manager::RedoReason(const Status& applied, const std::string& shard, int64_t step) {
  if (applied.IsNotFound()) return "lost-result";
  if (!IsTampered(applied)) return nullptr;
  RecordTampering(layout_.Proposal(shard, step), applied);
  return "tampered-result";
}

// A handler came back from a crash: whatever its earlier incarnation held is lost. Look at the
// claims of every task in flight now instead of waiting for their deadlines.
Status Manager::CheckClaimsNow() {
  ACAN_ASSIGN_OR_RETURN(auto claims, liveness_.AllClaims());
  for (auto& [step, st] : active_) {
    for (TaskRun& t : st.tasks) {
      auto found = claims.find(t.spec.key);
      if (found == claims.end()) continue;
      const Decision d = TaskWatch::OnRestartNotice(t, found->second);
      if (d.kind != Decision::Kind::kResend) continue;
      // Its claims go, so the next notice does not send the new copy again while it waits in
      // the space.
      liveness_.DropClaims(t.spec.key);
      ACAN_RETURN_IF_ERROR(Dispatch(st, t, d.reason));
    }
  }
  return Status::Ok();
}

Status Manager::LookUp(Look look, const TaskRun& t, Seen* seen) {
  switch (look) {
    case Look::kQueued: {
      ACAN_ASSIGN_OR_RETURN(auto queued,
                            space_->Read(layout_.Task(t.spec.type, t.spec.key, t.size_class)));
      seen->queued = queued.has_value();
      return Status::Ok();
    }
    case Look::kClaim: {
      ACAN_ASSIGN_OR_RETURN(seen->claim, liveness_.ClaimOf(t.spec.key));
      return Status::Ok();
    }
    case Look::kReported: {
      ACAN_ASSIGN_OR_RETURN(auto reported, space_->Read(layout_.Done(t.spec.key)));
      seen->reported = reported.has_value();
      return Status::Ok();
    }
    case Look::kIdle: {
      ACAN_ASSIGN_OR_RETURN(auto queued, space_->Read(layout_.AnyTaskPattern()));
      seen->idle = !queued.has_value();
      return Status::Ok();
    }
    case Look::kClaimants: {
      ACAN_ASSIGN_OR_RETURN(seen->claimants, liveness_.LiveClaimants(t.spec.key));
      return Status::Ok();
    }
  }
  return Status::Internal("unknown look");
}

// The loop of the deadlines: the watch decides, this carries out what it asks (looks in the
// space, a retransmission).
Status Manager::CheckDeadlines() {
  const auto now = env_->Now();
  for (const TaskRef& ref : watch_.Due(active_, now)) {
    ActiveStep& st = active_.at(ref.first);
    TaskRun& t = st.tasks[ref.second];
    Seen seen;
    Decision d = watch_.OnDeadline(t, seen, now);
    while (d.kind == Decision::Kind::kLook) {
      ACAN_RETURN_IF_ERROR(LookUp(d.look, t, &seen));
      d = watch_.OnDeadline(t, seen, now);
    }
    if (d.kind == Decision::Kind::kExtend) progress_.deadlines_extended++;
    if (d.kind != Decision::Kind::kResend) continue;
    liveness_.DropClaims(t.spec.key);
    ACAN_RETURN_IF_ERROR(Dispatch(st, t, d.reason));
  }
  return Status::Ok();
}

// A task of the oldest step in flight (what the window waits on) held by a live handler that
// will take far longer than the fastest other one gets one copy, while nothing is queued (some
// handler is idle): the first copy done counts, the other's report is a duplicate.
Status Manager::CheckStragglers() {
  if (!options_.speculate || active_.empty()) return Status::Ok();
  const auto now = env_->Now();
  ActiveStep& st = active_.begin()->second;
  std::optional<bool> idle;  // looked at once a turn, when a task is due for a look
  for (TaskRun& t : st.tasks) {
    Decision d = watch_.OnStragglerTick(t, now);
    if (d.kind != Decision::Kind::kLook) continue;
    Seen seen;
    seen.idle = idle;
    while ((d = watch_.OnStragglerSeen(t, seen, now)).kind == Decision::Kind::kLook) {
      ACAN_RETURN_IF_ERROR(LookUp(d.look, t, &seen));
    }
    idle = seen.idle;
    if (d.kind == Decision::Kind::kSpeculate) {
      ACAN_RETURN_IF_ERROR(Send(st, t, nullptr, /*speculative=*/true));
    }
  }
  return Status::Ok();
}

}  // namespace acan::runtime
