#include "runtime/manager/manager.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_set>

#include "acan/job.h"
#include "common/byte_size.h"
#include "nn/executor.h"
#include "nn/model.h"
#include "runtime/core/messages.h"
#include "runtime/core/step_rules.h"
#include "runtime/manager/probe.h"
#include "runtime/state/confirmed_put.h"
#include "runtime/state/step_cleanup.h"

namespace acan::runtime {

// The shortest manager turn a trace records (runtime/view/trace.h).
constexpr auto kTraceMinSlice = std::chrono::microseconds(200);

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

Manager::Manager(Space* space, Layout layout, const JobConfig* job, const nn::Dataset* data,
                 ManagerSettings options)
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
        // A tiles job's shards are its tiles: their edge is set up once (InitJob).
        c.adapt_task_size =
            options_.adapt_task_size && job_->partition.strategy != Strategy::kTiles;
        return c;
      }()) {
  if (job_->partition.strategy == Strategy::kTiles) options_.adapt_task_size = false;
  batcher_ = std::make_unique<nn::Batcher>(
      data_, nn::Plan::StepBatch(*job_, options_.task_size, data_->rows), job_->data.shuffle,
      job_->train.seed);
  total_steps_ = batcher_->BatchesPerEpoch() * job_->train.epochs;
  versions_.set_hold_limit(AuditHoldLimit());
}

Manager::~Manager() = default;

int64_t Manager::AuditHoldLimit() const {
  return options_.memory > 0 ? options_.memory / 32 : INT64_MAX;
}

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

Clock::time_point Manager::NextWake() const {
  return watch_.NextWake(active_, std::min(lease_.renew_at(), env_->Now() + milliseconds(100)));
}

// The probe holds every shard at once: within a memory budget, only while they are a quarter of it.
bool Manager::ProbeFits() const {
  if (options_.memory <= 0) return true;
  int64_t bytes = 0;
  for (const nn::ShardSpec& s : plan_->shards()) {
    bytes += s.Size() * int64_t(sizeof(float)) * (s.momentum_key.empty() ? 1 : 2);
  }
  if (bytes <= options_.memory / 4) return true;
  spdlog::info("manager {}: no probe: the state ({}) is over a quarter of the budget ({})",
               options_.owner, HumanBytes(double(bytes)), HumanBytes(double(options_.memory)));
  return false;
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
  if (progress_.finished) {  // a predecessor applied the last step: nothing is in flight
    // It may have died before its job_end was in the chain: ending the chain is what is left of
    // its work, so it is part of this recovery. Once it has ended, nothing may follow: the state
    // is not read again for records that would be dropped.
    ACAN_ASSIGN_OR_RETURN(const bool ended, AuditChainEnded(raw_space_, layout_));
    if (!ended) {
      ACAN_RETURN_IF_ERROR(AuditLease());
      ACAN_RETURN_IF_ERROR(AuditEnd());
    }
    if (options_.on_recovered) options_.on_recovered(env_->Now() - active_at);
    return Status::Ok();
  }
  ACAN_RETURN_IF_ERROR(AuditLease());
  if (options_.probe && progress_.task_ns.empty() && ProbeFits()) {
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
  while (MayAdmit(static_cast<int64_t>(active_.size()), next_admit_, total_steps_, versions_.Min(),
                  options_.window)) {
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
