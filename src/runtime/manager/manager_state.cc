// The manager's state in the space: a new job's set-up, the state tuple saved after every step
// and read back by a new incarnation.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_set>

#include "acan/job.h"
#include "nn/executor.h"
#include "nn/model.h"
#include "nn/model_stream.h"
#include "runtime/core/messages.h"
#include "runtime/manager/manager.h"
#include "runtime/manager/probe.h"
#include "runtime/state/confirmed_put.h"
#include "runtime/state/step_cleanup.h"

namespace acan::runtime {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {

// How a new job's version-0 state is made, and the hash of its initial model.
struct InitialParameters {
  std::function<Status(const nn::Plan&,
                       const std::function<Status(const std::string&, std::vector<float>)>&)>
      for_each_shard;
  std::function<Result<std::string>(const nn::Plan&)> model_sha256;
};

Status SetUpJob(Space* space, const Layout& layout, const JobConfig& job,
                const InitialParameters& init, const JobDescriptor* descriptor,
                std::shared_ptr<const AuditSigner> signer, const Env* env, int64_t task_size) {
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
  ACAN_ASSIGN_OR_RETURN(nn::Plan plan, nn::Plan::Create(job, task_size));
  ACAN_RETURN_IF_ERROR(
      init.for_each_shard(plan, [&](const std::string& key, std::vector<float> tensor) {
        return PutConfirmed(space, layout.State(key, 0), Value::FromVector(std::move(tensor)));
      }));
  {
    ACAN_ASSIGN_OR_RETURN(std::string model_sha256, init.model_sha256(plan));
    AuditLog audit(space, &layout, "job set-up", std::move(signer));
    audit.Append("job_start", {{"job", layout.job()},
                               {"config_sha256", ValueSha256(Value::FromString(ToToml(job)))},
                               {"initial_model_sha256", model_sha256}});
    ACAN_RETURN_IF_ERROR(audit.Flush());
  }
  Progress p;
  if (job.partition.strategy == Strategy::kTiles) p.task_size = plan.task_size();  // the shards'
  ACAN_RETURN_IF_ERROR(PutConfirmed(space, layout.ManagerState(), Value::FromString(p.ToJson())));
  ACAN_RETURN_IF_ERROR(Lease::PutFree(space, layout.Lease()));
  // Set up: the guard lapses now (a later job of the same id takes it at once).
  (void)Lease::FreeIfHeldBy(space, guard, "set-up");
  return Status::Ok();
}

}  // namespace

Status Manager::InitJob(Space* space, const Layout& layout, const JobConfig& job,
                        const nn::Model& init, const JobDescriptor* descriptor,
                        std::shared_ptr<const AuditSigner> signer, const Env* env,
                        int64_t task_size) {
  InitialParameters params;
  params.for_each_shard = [&](const nn::Plan& plan, const auto& emit) {
    for (auto& [key, tensor] : plan.InitialState(init)) {
      ACAN_RETURN_IF_ERROR(emit(key, std::move(tensor)));
    }
    return Status::Ok();
  };
  params.model_sha256 = [&](const nn::Plan&) -> Result<std::string> {
    return nn::ModelSha256(init);
  };
  return SetUpJob(space, layout, job, params, descriptor, std::move(signer), env, task_size);
}

Status Manager::InitJob(Space* space, const Layout& layout, const JobConfig& job,
                        const nn::InitialWeights& init, int64_t memory,
                        const JobDescriptor* descriptor, std::shared_ptr<const AuditSigner> signer,
                        const Env* env, int64_t task_size) {
  InitialParameters params;
  params.for_each_shard = [&](const nn::Plan& plan, const auto& emit) {
    return plan.ForEachInitialShard(init, emit);
  };
  params.model_sha256 = [&](const nn::Plan& plan) {
    return nn::StreamedModelSha256(plan.widths(), VersionRows(space, layout, plan, 0),
                                   ReadBandRows(plan, memory));
  };
  return SetUpJob(space, layout, job, params, descriptor, std::move(signer), env, task_size);
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
  ACAN_RETURN_IF_ERROR(
      versions_.Load(shards, progress_.next_step, [this] { return lease_.Keep(); }));
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

}  // namespace acan::runtime
