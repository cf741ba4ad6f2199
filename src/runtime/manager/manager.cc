#include "runtime/manager/manager.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_set>

#include "acan/job.h"
#include "nn/executor.h"
#include "nn/model.h"
#include "runtime/core/messages.h"
#include "runtime/manager/probe.h"
#include "runtime/state/confirmed_put.h"

namespace acan::runtime {

// The shortest manager turn a trace records (runtime/view/trace.h).
constexpr auto kTraceMinSlice = std::chrono::microseconds(200);

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

Manager::Manager(Space* space, Layout layout, const JobConfig* job, const nn::Dataset* data,
                 ManagerOptions options)
    : raw_space_(space),
      layout_(std::move(layout)),
      job_(job),
      data_(data),
      options_(std::move(options)),
      env_(options_.env ? options_.env : Env::Default()),
      lease_(raw_space_, layout_.Lease(), options_.owner, options_.lease, env_),
      fenced_(raw_space_, &lease_, layout_.FencedKeys()),
      versions_(space_, &layout_, options_.window),
      liveness_(space_, &layout_, env_),
      controller_([&] {
        ControllerOptions c = options_.controller;
        c.adapt_task_size = options_.adapt_task_size;
        return c;
      }()) {
  batcher_ = std::make_unique<nn::Batcher>(
      data_, nn::Plan::StepBatch(*job_, options_.task_size, data_->rows), job_->data.shuffle,
      job_->train.seed);
  total_steps_ = batcher_->BatchesPerEpoch() * job_->train.epochs;
}

Manager::~Manager() = default;

Manager::TaskRun& Manager::TaskAt(const TaskRef& ref) {
  return active_.at(ref.first).tasks[ref.second];
}

Result<const nn::Plan*> Manager::PlanFor(int64_t task_size) {
  auto it = plans_.find(task_size);
  if (it == plans_.end()) {
    ACAN_ASSIGN_OR_RETURN(nn::Plan plan, nn::Plan::Create(*job_, task_size, data_->rows));
    it = plans_.emplace(task_size, std::move(plan)).first;
  }
  return &it->second;
}

Status Manager::InitJob(Space* space, const Layout& layout, const JobConfig& job,
                        const nn::Model& init, const JobDescriptor* descriptor,
                        std::shared_ptr<const AuditSigner> signer, const Env* env) {
  if (env == nullptr) env = Env::Default();
  // Managers that start together all see a new job: the one that swaps the guard cell first sets
  // it up, the others wait for its state tuple. A guard whose holder did not finish within its
  // time (it died) is taken over, and the job set up again (copies of the same bytes).
  constexpr auto kSetUpTime = std::chrono::seconds(30);
  const Key guard = layout.InitGuard();
  for (;;) {
    ACAN_ASSIGN_OR_RETURN(auto existing, space->Read(layout.ManagerState()));
    if (existing.has_value()) return Status::Ok();  // resuming a job already in the space
    ACAN_ASSIGN_OR_RETURN(Cell cell, space->ReadCell(guard));
    const int64_t now_ms = env->WallNs() / 1000000;
    auto held = cell.revision == 0 ? Result<LeaseMessage>(Status::NotFound(""))
                                   : DecodeLeaseMessage(cell.value);
    if (!held.ok() || held->expires_ms < now_ms) {
      auto swapped = space->SwapCell(
          guard,
          EncodeLeaseMessage({"set-up", now_ms + std::chrono::milliseconds(kSetUpTime).count()}),
          cell.revision, env->DeadlineAfter(kSetUpTime));
      if (swapped.ok()) break;
      if (swapped.status().code() != StatusCode::kFailedPrecondition &&
          !swapped.status().IsUnavailable()) {
        return swapped.status();
      }
      continue;
    }
    env->SleepUntil(env->Now() + std::chrono::milliseconds(20));
  }
  if (descriptor != nullptr) {
    ACAN_ASSIGN_OR_RETURN(auto old, space->ReadAll(layout.JobDescriptor()));
    if (old.empty()) {
      ACAN_RETURN_IF_ERROR(
          PutConfirmed(space, layout.JobDescriptor(), EncodeJobDescriptor(*descriptor)));
    }
  }
  ACAN_ASSIGN_OR_RETURN(nn::Plan plan, nn::Plan::Create(job));
  for (auto& [key, tensor] : plan.InitialState(init)) {
    ACAN_RETURN_IF_ERROR(
        PutConfirmed(space, layout.State(key, 0), Value::FromVector(std::move(tensor))));
  }
  {
    AuditLog audit(space, &layout, "job set-up", std::move(signer));
    audit.Append("job_start", {{"job", layout.job()},
                               {"config_sha256", ValueSha256(Value::FromString(ToToml(job)))},
                               {"initial_model_sha256", nn::ModelSha256(init)}});
    ACAN_RETURN_IF_ERROR(audit.Flush());
  }
  Progress p;
  ACAN_RETURN_IF_ERROR(PutConfirmed(space, layout.ManagerState(), Value::FromString(p.ToJson())));
  ACAN_RETURN_IF_ERROR(Lease::PutFree(space, layout.Lease()));
  // Set up: the guard lapses now (a later job of the same id takes it at once).
  (void)Lease::FreeIfHeldBy(space, guard, "set-up");
  return Status::Ok();
}

Result<Progress> Manager::ReadProgress(Space* space, const Layout& layout) {
  ACAN_ASSIGN_OR_RETURN(auto all, space->ReadAll(layout.ManagerState()));
  if (all.empty()) return Status::NotFound("no manager state for job '" + layout.job() + "'");
  std::optional<Progress> newest;
  for (const Tuple& t : all) {
    ACAN_ASSIGN_OR_RETURN(Progress p, Progress::FromJson(t.value.AsString()));
    if (!newest || p.next_step > newest->next_step) newest = std::move(p);
  }
  return *newest;
}

// ---- state ----

Status Manager::LoadState() {
  ACAN_ASSIGN_OR_RETURN(progress_, ReadProgress(space_, layout_));
  // How the job was made decides where its step inputs come from, for every incarnation.
  ACAN_ASSIGN_OR_RETURN(auto descriptor, space_->Read(layout_.JobDescriptor()));
  if (descriptor.has_value()) {
    ACAN_ASSIGN_OR_RETURN(JobDescriptor d, DecodeJobDescriptor(descriptor->value));
    local_inputs_ = d.local_inputs;
  }
  progress_.total_steps = total_steps_;
  int64_t task_size = progress_.task_size > 0 ? progress_.task_size : options_.task_size;
  if (options_.adapt_task_size && progress_.task_size <= 0) {
    task_size = InitialTaskSize(job_->model.layers, job_->partition.strategy == Strategy::kTiles,
                                job_->train.batch);
  }
  ACAN_ASSIGN_OR_RETURN(plan_, PlanFor(task_size));
  progress_.task_size = plan_->task_size();
  if (options_.adapt_task_size) {
    ControllerOptions c = controller_.options();
    c.task_size = plan_->task_size();
    c.max_task_size = job_->partition.strategy == Strategy::kTiles
                          ? *std::max_element(job_->model.layers.begin(), job_->model.layers.end())
                          : job_->train.batch;
    controller_ = Controller(c);
  }
  std::vector<std::string> shards;
  for (const nn::ShardSpec& s : plan_->shards()) {
    for (const std::string& key : {s.key, s.momentum_key}) {
      if (!key.empty()) shards.push_back(key);
    }
  }
  ACAN_RETURN_IF_ERROR(versions_.Load(shards, progress_.next_step));
  next_admit_ = progress_.next_step;
  // A previous manager may have admitted up to `window` + 1 steps, and its handlers may have run
  // their tasks since: look at what is in the space before sending any of them again. Always,
  // even before the first step is saved: an incarnation that redid a step from scratch could
  // never finish one under crashes that come faster than a step.
  recover_steps_ = options_.window + 1;
  controller_.Seed(progress_.task_ns);
  if (lease_.took_over()) {
    progress_.manager_takeovers++;
    if (!progress_.finished) {
      spdlog::info("manager {}: took over the job at step {} (take-over {})", options_.owner,
                   progress_.next_step, progress_.manager_takeovers);
    }
  }
  return Status::Ok();
}

// The new state goes in before the old one comes out, so a crash between the two leaves two
// states, never none; ReadProgress takes the one furthest along.
Status Manager::SaveState() {
  progress_.task_ns = controller_.MeanTaskNs();
  ACAN_ASSIGN_OR_RETURN(auto old, space_->ReadAll(layout_.ManagerState()));
  ACAN_RETURN_IF_ERROR(
      PutConfirmed(space_, layout_.ManagerState(), Value::FromString(progress_.ToJson())));
  if (!old.empty()) {
    // The oldest are the ones read above (only the active manager writes the state).
    auto taken = space_->Take(layout_.ManagerState(), old.size(), Deadline::Now());
    if (!taken.ok() && !taken.status().IsTimeout()) return taken.status();
  }
  return Status::Ok();
}

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
        ACAN_ASSIGN_OR_RETURN(auto t, space_->Read(layout_.Tensor(key)));
        if (t.has_value()) continue;
      }
      ACAN_RETURN_IF_ERROR(space_->Put(layout_.Tensor(key), Value::FromVector(std::move(tensor))));
    }
  }
  ActiveStep& st = active_[step] = StepFlow::Build(plan_, step, rows, std::move(inputs));
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
      ACAN_ASSIGN_OR_RETURN(auto p, ReadOutput(layout_.Output(out, st.step)));
      done = done && p.has_value();
    }
    bool held = queued.count(layout_.Task(t.spec.type, t.spec.key).str()) > 0;
    if (!done && !held) {  // a live handler may be running it right now
      ACAN_ASSIGN_OR_RETURN(ClaimState claim, liveness_.ClaimOf(t.spec.key));
      held = claim == ClaimState::kAlive;
    }
    if (watch_.OnRecovered(t, done, held, env_->Now())) dispatcher_.AddInFlight();
  }
  for (TaskRun& t : st.tasks) {
    if (!t.done) continue;
    ++st.done;
    for (const std::string& out : t.spec.outputs) {
      if (!nn::Plan::IsStateKey(out)) {
        (void)st.Provide(out);  // what becomes ready is released below, with the rest
      } else if (versions_.Current(out) == st.step) {
        ACAN_RETURN_IF_ERROR(ApplyUpdate(out, st.step));
      }
    }
  }
  return Status::Ok();
}

// Ready to send: its step tensors exist, and the versions it reads do: an update reads exactly
// the version it advances (some of its shards may be one past it already, when a manager died
// between applying one of its proposals and the next: it runs again on version `step` of all,
// which stays until every shard is in), any other task at least version step - window + 1.
bool Manager::Ready(const ActiveStep& st, const TaskRun& t) const {
  if (t.missing > 0) return false;
  const bool update = t.spec.type == nn::TaskType::kUpdate;
  for (const std::string& in : t.spec.inputs) {
    if (!nn::Plan::IsStateKey(in)) continue;
    const int64_t v = versions_.Current(in);
    if (update ? v != st.step && v != st.step + 1 : v < st.step - options_.window + 1) return false;
  }
  return true;
}

Status Manager::Dispatch(ActiveStep& st, TaskRun& t, const char* reason) {
  if (reason == nullptr) {
    t.dispatched = true;  // owned by the pouch from now on, sent or held back
    const TaskRef ref{st.step, static_cast<size_t>(&t - st.tasks.data())};
    if (!dispatcher_.Offer(ref, controller_.pouch())) return Status::Ok();
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
        const int64_t v = t.spec.type == nn::TaskType::kUpdate
                              ? st.step
                              : std::min(versions_.Current(in), st.step);
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
  return space_->Put(layout_.Task(t.spec.type, t.spec.key),
                     EncodeTaskMessage(t.attempt, input_keys, t.encoded_spec,
                                       std::chrono::nanoseconds(timeout).count()));
}

Status Manager::MarkAvailable(ActiveStep& st, const std::string& tensor) {
  for (size_t i : st.Provide(tensor)) {
    if (!st.tasks[i].dispatched && Ready(st, st.tasks[i])) newly_ready_.emplace_back(st.step, i);
  }
  return Status::Ok();
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
  if (it == task_index_.end()) {  // a late duplicate of a finished step
    progress_.duplicates_discarded++;
    return Status::Ok();
  }
  ActiveStep& st = active_.at(it->second.first);
  TaskRun& t = st.tasks[it->second.second];
  // Every copy's time tells how fast its handler is, the copy that came second too.
  if (msg->missing.empty() && msg->error.empty()) {
    watch_.OnReport(t, msg->handler, msg->exec_ns);
  }
  if (t.done) {
    progress_.duplicates_discarded++;
    return Status::Ok();
  }
  if (!msg->missing.empty()) {
    // Only the report of the copy in flight counts: an older copy's is stale.
    if (!t.dispatched || msg->attempt < t.attempt) return Status::Ok();
    return OnMissingInputs(st, t, msg->missing);
  }
  if (!msg->error.empty()) {
    return Status::FailedPrecondition(
        fmt::format("task '{}' failed on handler {}: {}", task_key, msg->handler, msg->error));
  }
  t.done = true;
  ++st.done;
  dispatcher_.OnDone();
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
      if (applied.IsNotFound()) return RunAgain(st, t, "lost-result");  // its result was lost
      if (IsTampered(applied)) {  // its result is not its handler's: made again
        RecordTampering(layout_.Proposal(out, st.step), applied);
        return RunAgain(st, t, "tampered-result");
      }
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
    ACAN_ASSIGN_OR_RETURN(auto present,
                          parsed->kind == KeyKind::kState ? space_->Read(*key) : ReadOutput(*key));
    if (present.has_value()) continue;  // it landed late: sending the task again is enough
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
  dispatcher_.OnDone();
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
  t.done = false;
  --st.done;
  progress_.completed--;
  dispatcher_.AddInFlight();
  return Dispatch(st, t, reason);
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

Status Manager::LookUp(Look look, const ActiveStep& st, const TaskRun& t, Seen* seen) {
  switch (look) {
    case Look::kQueued: {
      ACAN_ASSIGN_OR_RETURN(auto queued, space_->Read(layout_.Task(t.spec.type, t.spec.key)));
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
  (void)st;
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
      ACAN_RETURN_IF_ERROR(LookUp(d.look, st, t, &seen));
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
      ACAN_RETURN_IF_ERROR(LookUp(d.look, st, t, &seen));
    }
    idle = seen.idle;
    if (d.kind == Decision::Kind::kSpeculate) {
      ACAN_RETURN_IF_ERROR(Send(st, t, nullptr, /*speculative=*/true));
    }
  }
  return Status::Ok();
}

Status Manager::CleanupStep(const ActiveStep& st) {
  RemoveStep(space_, layout_, st, !local_inputs_);
  return Status::Ok();
}

// A predecessor that died between saving step next_step - 1 as applied and the end of its
// clean-up left some of it behind. Every earlier step was cleaned up before that step was saved,
// so this one step is all there can be.
Status Manager::CleanupLeftStep() {
  const int64_t step = progress_.next_step - 1;
  if (step < 0) return Status::Ok();
  const int64_t rows = batcher_->BatchRows(step);
  return CleanupStep(
      StepFlow::Build(plan_, step, rows, plan_->StepInputKeys(step, rows), /*encode=*/false));
}

Status Manager::FinalizeSteps() {
  while (!active_.empty()) {
    ActiveStep& st = active_.begin()->second;
    if (st.done < st.tasks.size()) break;
    int64_t epoch = st.step / batcher_->BatchesPerEpoch();
    // Epochs are added as they begin, not all at the start: the state saved at every step holds
    // the epochs so far, not a job's whole count (a million-epoch job saved a million).
    if (progress_.epochs.size() <= size_t(epoch)) progress_.epochs.resize(epoch + 1);
    EpochTotals& e = progress_.epochs.at(epoch);
    double loss_sum = 0;
    int64_t correct = 0;
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
      auto v = m->value.As<float>();
      loss_sum += double(v[0]) * double(st.rows);
      correct += static_cast<int64_t>(v[1]);
    }
    if (lost) break;
    e.loss_sum += loss_sum;
    e.correct += correct;
    e.rows += st.rows;
    progress_.next_step = st.step + 1;
    progress_.finished = progress_.next_step >= total_steps_;
    // A version is the number of updates applied to its shard: counted from the versions, so
    // that a step applied partly by a predecessor (and perhaps saved by it) counts once.
    progress_.versions_applied = versions_.Applied();
    if (audit_) {
      AuditBatch& b = audit_batch_;
      if (b.first_step < 0) b.first_step = st.step;
      b.last_step = st.step;
      for (auto& [shard, version, value] : versions_.TakeWritten()) {
        b.from.emplace(shard, version);
        b.last[shard] = {version, std::move(value)};
      }
      if ((st.step + 1) % kAuditStepsPerRecord == 0 || st.step + 1 == total_steps_) {
        // The previous record is written before this one is made (versions a manager wrote
        // after its last record are in its successor's lease record, as the versions found).
        ACAN_RETURN_IF_ERROR(audit_->WaitWritten(audited_step_ticket_));
        std::vector<std::tuple<std::string, int64_t, Value>> last;
        for (auto& [shard, v] : b.last) last.emplace_back(shard, v.first, std::move(v.second));
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
    ReportFlight();
    if (options_.on_step) options_.on_step(progress_, controller_.Snapshot());
    if (options_.on_epoch_end && (finished_step + 1) % batcher_->BatchesPerEpoch() == 0) {
      ACAN_ASSIGN_OR_RETURN(nn::Model model, ReadModel(space_, layout_, *plan, finished_step + 1));
      options_.on_epoch_end(epoch, model);
    }
  }
  return Status::Ok();
}

Clock::time_point Manager::NextWake() const {
  return watch_.NextWake(active_, std::min(lease_.renew_at(), env_->Now() + milliseconds(100)));
}

// The first manager of a job times one step's tasks (runtime/manager/probe.h), within a quarter of
// its lease.
void Manager::ProbeTasks() {
  const int64_t step = progress_.next_step;
  std::unordered_map<std::string, std::vector<float>> state;
  // The shards' reads are timed too: what a task's trips through the space cost here (nothing
  // to speak of in process; over a network, often more than its kernel).
  double fastest_ns = 0, total_ns = 0, bytes = 0;
  for (const auto& [key, v] : versions_.versions()) {
    const auto before = env_->Now();
    auto t = space_->Read(layout_.State(key, v));
    if (!t.ok() || !t->has_value()) return;
    const double took = double(duration_cast<nanoseconds>(env_->Now() - before).count());
    fastest_ns = state.empty() ? took : std::min(fastest_ns, took);
    total_ns += took;
    bytes += double((*t)->value.size());
    auto f = (*t)->value.As<float>();
    state[key].assign(f.begin(), f.end());
  }
  const double ns_per_byte =
      bytes > 0 ? std::max(0.0, total_ns - double(state.size()) * fastest_ns) / bytes : 0;
  // A task's trips: its take, claim, report and claim removal, a read per input, a write per
  // output, and its floats both ways.
  auto trips_ns = [&](const nn::TaskSpec& task) {
    const double calls = 4.0 + double(task.inputs.size() + task.outputs.size());
    return calls * fastest_ns + double(nn::TaskWork(task)) * sizeof(float) * ns_per_byte;
  };
  const Env& env = *env_;
  ProbeStep(
      *plan_, step, batcher_->Get(step), std::move(state), env, env.Now() + options_.lease / 4,
      [this] { return lease_.Keep().ok(); },
      [&](const nn::TaskSpec& task, nanoseconds took) {
        controller_.Probe(task, took + nanoseconds(static_cast<int64_t>(trips_ns(task))));
      });
}

// A new incarnation (or the first) rebuilds the steps a predecessor may have had in flight from
// what is in the space, reusing every task whose outputs exist, queued or held by a live claim;
// its cost is in proportion to the steps in flight, not to the history of the job.
Status Manager::Run(const std::atomic<bool>& crash) {
  ACAN_RETURN_IF_ERROR(lease_.Acquire(crash));
  const auto active_at = env_->Now();
  if (options_.on_active) options_.on_active();
  ACAN_RETURN_IF_ERROR(LoadState());
  ACAN_RETURN_IF_ERROR(AuditLease());
  if (progress_.finished) {  // a predecessor applied the last step: nothing is in flight
    if (options_.on_recovered) options_.on_recovered(env_->Now() - active_at);
    return Status::Ok();
  }
  if (options_.probe && progress_.task_ns.empty()) {
    ProbeTasks();
    ACAN_RETURN_IF_ERROR(SaveState());  // a successor starts from these timeouts
  }
  ACAN_RETURN_IF_ERROR(CleanupLeftStep());
  ACAN_RETURN_IF_ERROR(AdmitAhead());
  recover_steps_ = 0;  // a predecessor never had more steps in flight than these
  queued_at_start_.reset();
  ACAN_RETURN_IF_ERROR(FinalizeSteps());
  if (options_.on_recovered) options_.on_recovered(env_->Now() - active_at);
  const Pattern done = layout_.DonePattern();
  while (progress_.next_step < total_steps_) {
    if (crash.load()) return Status::Cancelled(options_.owner + " crashed");
    // Renewed here while idle; every write renews it too (FencedSpace).
    ACAN_RETURN_IF_ERROR(lease_.Keep());
    ACAN_RETURN_IF_ERROR(AdmitAhead());
    // NextWake is on the Env's clock; the wait is real time (at most 100 ms, so a test's clock
    // that jumps is seen within that).
    const auto wait = std::clamp<Clock::duration>(NextWake() - env_->Now(), Clock::duration(0),
                                                  milliseconds(100));
    auto dones = space_->Take(done, 256, env_->DeadlineAfter(wait));
    const auto begin = env_->Now();
    if (dones.ok()) {
      for (const Tuple& d : *dones) ACAN_RETURN_IF_ERROR(OnDone(d));
      ACAN_RETURN_IF_ERROR(DispatchReady());
      ACAN_RETURN_IF_ERROR(SendQueued());
    } else if (!dones.status().IsTimeout()) {
      return dones.status();
    }
    const auto dispatched = env_->Now();
    ACAN_RETURN_IF_ERROR(CheckDeadlines());
    ACAN_RETURN_IF_ERROR(CheckStragglers());
    ACAN_RETURN_IF_ERROR(FinalizeSteps());
    if (options_.trace && dones.ok()) {
      // Only slices long enough to see: the manager's turns are most of a trace's events, and
      // recording each cost the flagship run 14% (bench/observe_overhead.sh).
      const auto end = env_->Now();
      if (dispatched - begin >= kTraceMinSlice) {
        options_.trace->Slice(TraceRecorder::kManagerLane, fmt::format("{} done", dones->size()),
                              "manager", begin, dispatched);
      }
      if (end - dispatched >= kTraceMinSlice) {
        options_.trace->Slice(TraceRecorder::kManagerLane, "deadlines, finalize", "manager",
                              dispatched, end);
      }
    }
  }
  return AuditEnd();
}

// Steps in flight, plus one admitted ahead: its inputs are in the space and its tasks built
// before the versions it reads exist, so the step begins the moment they do.
Status Manager::AdmitAhead() {
  bool admitted = false;
  while (static_cast<int64_t>(active_.size()) < options_.window + 1 && next_admit_ < total_steps_ &&
         versions_.Min() >= next_admit_ - options_.window) {
    const auto begin = env_->Now();
    ACAN_RETURN_IF_ERROR(Admit(next_admit_++));
    admitted = true;
    if (options_.trace) {
      options_.trace->Slice(TraceRecorder::kManagerLane, fmt::format("admit s{}", next_admit_ - 1),
                            "manager", begin, env_->Now());
    }
  }
  if (admitted) ReportFlight();
  return Status::Ok();
}

void Manager::ReportFlight() const {
  if (!options_.on_flight) return;
  options_.on_flight(FlightStatus{progress_.next_step, next_admit_, dispatcher_.in_flight(),
                                  static_cast<int64_t>(dispatcher_.held())});
}

}  // namespace acan::runtime
