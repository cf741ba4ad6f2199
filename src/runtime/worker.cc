// The public roles (acan/worker.h) over the runtime's Handler and Manager.
#include "acan/worker.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <stop_token>

#include "nn/dataset.h"
#include "nn/model_api_internal.h"
#include "nn/plan.h"
#include "runtime/handler.h"
#include "runtime/liveness.h"
#include "runtime/manager.h"
#include "runtime/supervisor.h"
#include "runtime/training.h"

namespace acan {

namespace {

Result<runtime::Layout> JobLayout(std::string_view job_id) {
  auto token = Key::Parse(job_id);
  if (!token.ok()) {
    return Status::InvalidArgument(
        fmt::format("job id '{}': {}", job_id, token.status().message()));
  }
  return runtime::Layout(token->str());
}

// The next incarnation of handler `id`: one past the one the space last saw announced.
Result<int64_t> NextIncarnation(Space& space, const runtime::Layout& layout, int id) {
  ACAN_ASSIGN_OR_RETURN(auto alive, space.ReadAll(layout.Alive(id)));
  int64_t last = 0;
  for (const Tuple& t : alive) {
    auto v = t.value.As<int64_t>();
    if (v.size() == 1) last = std::max(last, v[0]);
  }
  return last + 1;
}

// True once the job's stored progress says its last step is applied.
bool JobFinished(Space& space, const runtime::Layout& layout) {
  auto p = runtime::Manager::ReadProgress(&space, layout);
  return p.ok() && p->finished;
}

}  // namespace

Result<HandlerReport> RunHandler(Space& space, std::string_view job_id,
                                 const HandlerOptions& options) {
  ACAN_ASSIGN_OR_RETURN(runtime::Layout layout, JobLayout(job_id));
  if (options.id < 0) return Status::InvalidArgument("handler id must be >= 0");
  if (options.pouch < 1) return Status::InvalidArgument("handler pouch must be >= 1");
  runtime::HandlerOptions ho;
  ho.id = options.id;
  for (const std::string& name : options.task_types) {
    ACAN_ASSIGN_OR_RETURN(nn::TaskType type, nn::ParseTaskType(name));
    ho.capabilities.push_back(type);
  }
  std::atomic<int> pouch{options.pouch};
  ho.pouch = &pouch;
  ho.poll = options.poll;
  ACAN_ASSIGN_OR_RETURN(ho.incarnation, NextIncarnation(space, layout, options.id));
  std::atomic<bool> stop{false};
  std::stop_callback on_stop(options.stop, [&stop] { stop.store(true); });
  ho.until = [&] { return JobFinished(space, layout); };
  runtime::HandlerStats stats;
  const auto start = Clock::now();
  runtime::Handler handler(&space, layout, ho, &stats);
  ACAN_RETURN_IF_ERROR(handler.Announce());
  handler.Run(stop);
  HandlerReport report;
  report.id = options.id;
  report.incarnation = ho.incarnation;
  report.tasks = stats.tasks.load();
  report.work = stats.work.load();
  report.busy_s = double(stats.busy_ns.load()) / 1e9;
  report.reused = stats.reused.load();
  report.missing_inputs = stats.missing_inputs.load();
  report.bad_tuples = stats.bad_tuples.load();
  if (int64_t at = stats.first_task_at_ns.load(); at != 0) {
    report.first_task_s =
        std::chrono::duration<double>(Clock::time_point(Clock::duration(at)) - start).count();
  }
  report.job_finished = JobFinished(space, layout);
  if (!report.job_finished) {
    // Leaving before the end: say so, so that the manager sends what it held at once.
    (void)runtime::AnnounceDeath(&space, layout, options.id, ho.incarnation);
  }
  return report;
}

Result<HandlerReport> RunHandler(std::string_view space_uri, std::string_view job_id,
                                 const HandlerOptions& options) {
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<Space> space, OpenSpace(space_uri));
  return RunHandler(*space, job_id, options);
}

Result<ManagerReport> RunManager(Space& space, const JobConfig& job,
                                 const ManagerOptions& options) {
  ACAN_RETURN_IF_ERROR(ValidateJob(job));
  ACAN_ASSIGN_OR_RETURN(runtime::Layout layout, JobLayout(options.job_id));
  // spdlog's registry before any thread of ours may log (see RunJob).
  (void)spdlog::default_logger_raw();
  ACAN_ASSIGN_OR_RETURN(nn::Dataset data, nn::LoadDataset(job));
  std::optional<nn::Model> given;
  if (options.init_model) given = nn::FromPublicModel(*options.init_model);
  ACAN_ASSIGN_OR_RETURN(nn::Model init, runtime::InitialModelFor(job, given, options.init_path));
  ACAN_RETURN_IF_ERROR(runtime::Manager::InitJob(&space, layout, job, init));

  runtime::RunOptions run = runtime::RunOptionsFromJob(job);
  if (options.handlers > 0) run.handlers = options.handlers;
  run.adapt_task_size = runtime::AdaptsTaskSize(job);
  run.lease = options.lease;
  runtime::ManagerOptions mo = runtime::ManagerOptionsFor(run, 0);
  mo.owner = options.name;
  const int64_t steps_per_epoch =
      nn::Batcher(&data, nn::Plan::StepBatch(job, run.task_size, data.rows), false, 0)
          .BatchesPerEpoch();
  if (options.on_progress) {
    mo.on_step = [&](const runtime::Progress& p, const runtime::ControllerSnapshot&) {
      options.on_progress(runtime::ToTrainProgress(p, steps_per_epoch, job.train.epochs));
    };
  }
  ManagerReport report;
  mo.on_active = [&report] { report.was_active = true; };

  std::atomic<bool> stop{false};
  std::stop_callback on_stop(options.stop, [&stop] { stop.store(true); });
  for (;;) {
    runtime::Manager manager(&space, layout, &job, &data, mo);
    Status s = manager.Run(stop);
    if (s.ok()) break;
    if (stop.load()) break;           // stopped (Cancelled), as if killed
    if (s.IsUnavailable()) continue;  // lost the lease: a standby again
    return s;
  }
  ACAN_ASSIGN_OR_RETURN(runtime::Progress p, runtime::Manager::ReadProgress(&space, layout));
  report.job_finished = p.finished;
  report.progress = runtime::ToTrainProgress(p, steps_per_epoch, job.train.epochs);
  if (p.finished) {
    ACAN_ASSIGN_OR_RETURN(nn::Plan plan, nn::Plan::Create(job, p.task_size, data.rows));
    ACAN_ASSIGN_OR_RETURN(nn::Model model, runtime::ReadModel(&space, layout, plan, p.total_steps));
    report.model = nn::ToPublicModel(model);
  }
  return report;
}

Result<ManagerReport> RunManager(std::string_view space_uri, const JobConfig& job,
                                 const ManagerOptions& options) {
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<Space> space, OpenSpace(space_uri));
  return RunManager(*space, job, options);
}

}  // namespace acan
