// The manager role (acan/worker.h: RunManager): makes the job in the space if it is not there
// (its descriptor and grain, the version-0 parameters, the state), stands by for the lease, runs or
// resumes the job with runtime::Manager, and meanwhile samples its /metrics, metrics.csv and stall
// warnings; at the end reads back the model and the audit log of a finished job.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <stop_token>
#include <thread>

#include "acan/worker.h"
#include "common/byte_size.h"
#include "common/kill_point.h"
#include "common/thread_annotations.h"
#include "nn/dataset.h"
#include "nn/model_api_internal.h"
#include "nn/model_stream.h"
#include "nn/plan.h"
#include "nn/row_cache.h"
#include "runtime/api/roles_internal.h"
#include "runtime/api/training.h"
#include "runtime/audit/audit.h"
#include "runtime/core/budget.h"
#include "runtime/core/messages.h"
#include "runtime/manager/grain.h"
#include "runtime/manager/manager.h"
#include "runtime/run/artefacts.h"
#include "runtime/run/supervisor.h"
#include "runtime/view/live_view.h"
#include "runtime/view/serve.h"
#include "runtime/view/stall.h"

namespace acan {

namespace {

using internal::JobLayout;
using internal::PutUsage;

// The end of a job for a manager with a memory budget: the trained model written to
// `model_path` (or, with none, to a scratch file) a shard at a time, each shard read once, then
// hashed and evaluated from the file a band of rows at a time, never held whole. The evaluation
// takes the data in groups that keep two layers' activations within a sixteenth of the budget
// (kEvalChunkRows at most, Evaluate's own chunks).
Status FinishWithinBudget(Space& space, const runtime::Layout& layout, const nn::Plan& plan,
                          int64_t version, const JobConfig& job, const nn::Dataset& train,
                          int64_t memory, const std::string& model_path, ManagerReport* report) {
  const runtime::ScratchFile scratch("model");
  const std::string& path = model_path.empty() ? scratch.path() : model_path;
  const std::vector<int64_t>& widths = plan.widths();
  ACAN_ASSIGN_OR_RETURN(const nn::BandReader rows,
                        runtime::SavedVersionRows(&space, layout, plan, version, path,
                                                  /*scratch=*/model_path.empty()));
  const int64_t band = runtime::ReadBandRows(plan, memory);
  ACAN_ASSIGN_OR_RETURN(report->weights_sha256, nn::StreamedModelSha256(widths, rows, band));
  ACAN_ASSIGN_OR_RETURN(std::optional<nn::Dataset> test, nn::LoadTestDataset(job, train));
  const nn::Dataset& data = test ? *test : train;
  const int64_t widest = *std::max_element(widths.begin(), widths.end());
  const int64_t group = std::clamp<int64_t>(memory / 16 / (2 * widest * int64_t(sizeof(float))), 1,
                                            nn::kEvalChunkRows);
  ACAN_ASSIGN_OR_RETURN(nn::EvalReport r,
                        nn::EvaluateStreamed(widths, data, job, rows, band, group));
  report->evaluation = nn::ToPublicEval(r, test ? "test" : "train", data.classification);
  return Status::Ok();
}

// The budgets a new job's tiles must fit: the job's, and those the handlers waiting for it have
// announced (a handler started with --memory announces itself before the job exists).
Result<std::vector<int64_t>> AnnouncedBudgets(Space& space, const runtime::Layout& layout,
                                              std::vector<int64_t> budgets) {
  ACAN_ASSIGN_OR_RETURN(auto alive, space.ReadAll(layout.AllAlivePattern()));
  for (const Tuple& t : alive) {
    auto a = runtime::DecodeAliveMessage(t.value);
    if (!a.ok() || a->memory <= 0) continue;
    if (const int64_t known = runtime::SmallestBudget(budgets); known == 0 || a->memory < known) {
      spdlog::info("job '{}': {} announced a memory budget of {}", layout.job(), t.key.str(),
                   HumanBytes(double(a->memory)));
    }
    budgets.push_back(a->memory);
  }
  return budgets;
}

}  // namespace

Result<ManagerReport> RunManager(Space& space, const JobConfig& job,
                                 const ManagerOptions& options) {
  ACAN_RETURN_IF_ERROR(ValidateJob(job));
  ACAN_ASSIGN_OR_RETURN(runtime::Layout layout, JobLayout(options.job_id));
  std::shared_ptr<const runtime::AuditSigner> signer;
  if (!options.audit_key_file.empty() || !options.audit_cert_file.empty()) {
    ACAN_ASSIGN_OR_RETURN(
        signer, runtime::AuditSigner::Load(options.audit_key_file, options.audit_cert_file));
  }
  // The kill-point test hook (common/kill_point.h), for the managers it names ("any": all).
  if (const char* target = std::getenv("ACAN_TEST_KILL_MANAGER");
      target != nullptr && (options.name == target || std::string_view(target) == "any")) {
    ArmKillPoints();
  }
  if (options.handlers_read_data) {
    // Handlers load their copy of the data while this manager loads its own (JoinJob).
    ACAN_ASSIGN_OR_RETURN(auto made, space.Read(layout.JobDescriptor()));
    ACAN_ASSIGN_OR_RETURN(auto hinted, space.Read(layout.DataHint()));
    if (!made.has_value() && !hinted.has_value()) {
      ACAN_RETURN_IF_ERROR(space.Put(layout.DataHint(), Value::FromString(ToToml(job))));
    }
  }
  std::string note;
  ACAN_ASSIGN_OR_RETURN(nn::CachedRows rows, nn::LoadDatasetShared(job, options.data_cache, &note));
  if (!note.empty()) spdlog::warn("manager's row cache: {}", note);
  const nn::Dataset& data = rows.data;
  if (options.memory < 0) return Status::InvalidArgument("manager memory must be >= 0");
  const int64_t memory = options.memory > 0 ? options.memory : job.runtime.manager_memory;
  // A new job's initial model: a given one (or a file) whole, a scheme's drawn a row block at a
  // time, never whole (the chain's grain, measured on the model, and a list of layers, which
  // memory budgets do not cover, excepted).
  const bool drawn = !options.init_model && options.init_path.empty() &&
                     !job.model.init.ends_with(".safetensors") &&
                     job.partition.strategy != Strategy::kChain && !nn::IsLayerList(job.model);
  std::optional<nn::Model> init;
  if (!drawn) {
    std::optional<nn::Model> given;
    if (options.init_model) given = nn::FromPublicModel(*options.init_model);
    ACAN_ASSIGN_OR_RETURN(init, runtime::InitialModelFor(job, given, options.init_path));
  }
  // The job as made, its grain included: the one in the space when it is there already (a
  // standby, a resumed job, or another manager that made it first: the oldest descriptor wins).
  JobConfig effective = job;
  ManagerReport report;
  auto adopt = [&]() -> Result<bool> {
    ACAN_ASSIGN_OR_RETURN(auto made, space.Read(layout.JobDescriptor()));
    if (!made.has_value()) return false;
    ACAN_ASSIGN_OR_RETURN(runtime::JobDescriptor d, runtime::DecodeJobDescriptor(made->value));
    ACAN_ASSIGN_OR_RETURN(JobConfig first, ParseJobString(d.job_toml, "the job's descriptor"));
    effective.partition.task_size = first.partition.task_size;
    effective.partition.tile_bands = first.partition.tile_bands;
    report.grain = {};
    if (d.grain_step_ms > 0) {
      report.grain = {first.partition.task_size, d.grain_step_ms, d.grain_move_ms};
    }
    return true;
  };
  ACAN_ASSIGN_OR_RETURN(bool exists, adopt());
  if (!exists && job.partition.strategy == Strategy::kChain && job.partition.task_size == 0 &&
      space.AcknowledgesPuts()) {
    ACAN_ASSIGN_OR_RETURN(runtime::ChainGrain g,
                          runtime::ChooseChainGrain(&space, layout, job, data, *init));
    effective.partition.task_size = g.steps;
    report.grain = {g.steps, g.step_ms, g.move_ms};
  }
  // A tiles job's shards are its tiles: their edge is chosen once, so that every task fits the
  // smallest handler budget with the data a handler holds, and is the job's as made.
  const bool tiles = job.partition.strategy == Strategy::kTiles;
  // The job's budgets, cycled over its handlers when their number is known (one entry a handler:
  // the bands' shares follow how many handlers each budget has), and those announced.
  std::vector<int64_t> listed = job.runtime.handler_memory;
  for (int64_t h = int64_t(listed.size()); h < options.handlers && !listed.empty(); ++h)
    listed.push_back(listed[h % job.runtime.handler_memory.size()]);
  ACAN_ASSIGN_OR_RETURN(const std::vector<int64_t> budgets,
                        AnnouncedBudgets(space, layout, std::move(listed)));
  const int64_t smallest = runtime::SmallestBudget(budgets);
  const int64_t data_bytes =
      options.handlers_read_data
          ? int64_t(sizeof(float)) * int64_t(data.Features().size() + data.Targets().size())
          : 0;
  if (!exists && (smallest > 0 || (tiles && job.partition.task_size == 0))) {
    const int64_t start = runtime::InitialTaskSize(job.model.layers, tiles, job.train.batch);
    if (tiles && job.partition.task_size == 0 && job.partition.tile_bands.empty()) {
      // Budgets that differ: tiles cut in bands, each band's for its budget.
      ACAN_ASSIGN_OR_RETURN(
          effective.partition.tile_bands,
          runtime::BandsForBudgets(job, job.train.batch, start, budgets, data_bytes, memory));
    }
    ACAN_ASSIGN_OR_RETURN(runtime::TaskFit fit,
                          runtime::FitTasks(effective, job.train.batch, job.partition.task_size,
                                            start, smallest, data_bytes));
    if (tiles) effective.partition.task_size = fit.task_size;
    if (!effective.partition.tile_bands.empty()) {
      std::string bands;
      int64_t shares = 0;
      for (const TileBand& b : effective.partition.tile_bands) shares += b.share;
      for (const TileBand& b : effective.partition.tile_bands) {
        bands +=
            fmt::format("{}tiles of {} for {} ({:.0f}% of each width)", bands.empty() ? "" : ", ",
                        b.edge, b.budget > 0 ? HumanBytes(double(b.budget)) : "any budget",
                        100.0 * double(b.share) / double(shares));
      }
      spdlog::info("job '{}': tiles cut in bands: {}", layout.job(), bands);
    } else if (smallest > 0) {
      spdlog::info(
          "job '{}': tiles of {}; its largest task, '{}', holds {} of the smallest "
          "handler budget, {}",
          layout.job(), fit.task_size, fit.largest_task, HumanBytes(double(fit.largest_bytes)),
          HumanBytes(double(smallest)));
    }
  }
  runtime::JobDescriptor descriptor;
  descriptor.job_toml = ToToml(effective);
  descriptor.local_inputs = options.handlers_read_data;
  descriptor.grain_step_ms = report.grain.step_ms;
  descriptor.grain_move_ms = report.grain.move_ms;
  if (descriptor.local_inputs) descriptor.data_sha256 = rows.sha256;
  if (init) {
    ACAN_RETURN_IF_ERROR(
        runtime::Manager::InitJob(&space, layout, effective, *init, &descriptor, signer));
  } else {
    ACAN_ASSIGN_OR_RETURN(
        nn::InitialWeights weights,
        nn::InitialWeights::Create(job.model.layers, job.model.init, job.train.seed));
    ACAN_RETURN_IF_ERROR(
        runtime::Manager::InitJob(&space, layout, effective, weights, memory, &descriptor, signer));
  }
  (void)space.Erase(layout.DataHint());  // the descriptor says it all now
  // Another manager may have made the job first with its own measurement: its grain is the job's.
  ACAN_RETURN_IF_ERROR(adopt().status());
  report.tile_bands = effective.partition.tile_bands;

  runtime::RunOptions run = runtime::RunOptionsFromJob(effective);
  if (options.handlers > 0) run.handlers = options.handlers;
  run.adapt_task_size = runtime::AdaptsTaskSize(effective);
  run.lease = options.lease;
  runtime::ManagerSettings mo = runtime::ManagerSettingsFor(run, 0);
  mo.owner = options.name;
  mo.audit_signer = signer;
  mo.memory = memory;
  mo.handler_data_bytes = data_bytes;
  const int64_t steps_per_epoch =
      nn::Batcher(&data, nn::Plan::StepBatch(effective, run.task_size, data.rows), false, 0)
          .BatchesPerEpoch();
  // metrics.csv: sampled after a step at most every half second, and after the last.
  std::vector<runtime::MetricsRow> metrics;
  std::map<int, std::pair<int64_t, int64_t>> by_handler;  // id -> tasks, work
  std::vector<std::map<int, std::pair<int64_t, int64_t>>> handlers_at_row;
  std::optional<Clock::time_point> active_at;
  Clock::time_point last_row{};
  int64_t last_samples = 0;
  Clock::time_point live_last_at{};  // the last /metrics sample
  int64_t live_last_samples = 0;
  // /metrics: a sample after each step (the progress and the controller as the manager has
  // them), the task times by class from the reports.
  std::shared_ptr<runtime::LiveView> view;
  std::vector<std::unique_ptr<obs::HttpServer>> servers;
  std::map<std::string, LatencyHistogram> task_latency;  // the manager's thread alone
  if (options.metrics_port >= 0) {
    view = std::make_shared<runtime::LiveView>(
        obs::Labels{{"job", options.job_id}, {"role", "manager"}, {"manager", options.name}},
        "manager");
    std::string url, unused;
    ACAN_ASSIGN_OR_RETURN(servers,
                          runtime::ServeLiveView(view, options.metrics_port, -1, &url, &unused));
    if (options.on_serving) options.on_serving(url);
  }
  mo.on_task_done = [&](const std::string& task, int handler, int64_t exec_ns, int64_t work,
                        double) {
    auto& [tasks, done] = by_handler[handler];
    ++tasks;
    done += work;
    if (view) {
      task_latency[runtime::Layout::TaskClass(task)].Record(
          uint64_t(std::max<int64_t>(exec_ns, 0)));
    }
  };
  // A job that makes no progress says so (what this manager has in flight, what the space holds),
  // as an in-process run does: the floor is 30 s, or 8 x the longest task timeout.
  runtime::StallWatch stall(std::chrono::seconds(30));
  struct {
    Mutex mu;
    runtime::FlightStatus status GUARDED_BY(mu);
  } flight;
  mo.on_flight = [&](const runtime::FlightStatus& f) {
    MutexLock lock(flight.mu);
    flight.status = f;
  };
  std::atomic<bool> watching{false};
  // From taking the lease until the steps a predecessor had in flight are rebuilt (no flight
  // status yet: what it is doing is the recovery).
  std::atomic<bool> recovering{false};
  std::jthread stall_reports([&](std::stop_token done) {
    while (!done.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (!watching.load()) continue;
      const std::optional<double> stalled = stall.Due();
      if (!stalled) continue;
      runtime::FlightStatus f;
      {
        MutexLock lock(flight.mu);
        f = flight.status;
      }
      const SpaceStats in_space = space.Stats();
      const std::string doing =
          recovering.load()
              ? std::string("this manager is still rebuilding the steps in flight from the space")
              : fmt::format(
                    "steps {}..{} in flight, {} tasks sent and not done, {} held back by "
                    "the pouch",
                    f.next_step, f.admitted - 1, f.tasks_sent, f.tasks_held);
      spdlog::warn(
          "acan: manager {}: the job is stalled: no step completed for {:.1f} s: {}; the space "
          "holds {} tuples, {} bytes",
          options.name, *stalled, doing, in_space.tuples, in_space.bytes);
    }
  });
  mo.on_step = [&](const runtime::Progress& p, const runtime::ControllerSnapshot& c) {
    double longest_ms = 0;
    for (const auto& [cls, ms] : c.timeouts_ms) longest_ms = std::max(longest_ms, ms);
    stall.OnStep(p.next_step, std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double, std::milli>(longest_ms)));
    if (p.finished) report.applied_last_step = true;
    const auto now = Clock::now();
    if (!options.metrics_csv.empty() && active_at &&
        (p.finished || now - last_row >= std::chrono::milliseconds(500))) {
      if (last_row < *active_at) last_row = *active_at;  // samples_per_s since it became active
      runtime::MetricsRow row = runtime::RunMetrics(p, c, *active_at, &last_row, &last_samples);
      row.manager_crashes = p.manager_takeovers;
      metrics.push_back(std::move(row));
      handlers_at_row.push_back(by_handler);
    }
    // At most every half second (as metrics.csv's rows), not after every step: a sample copies
    // the progress and asks the space for its figures.
    if (view && active_at && (p.finished || now - live_last_at >= std::chrono::milliseconds(500))) {
      if (live_last_at < *active_at) live_last_at = *active_at;
      runtime::LiveSample live;
      live.row = runtime::RunMetrics(p, c, *active_at, &live_last_at, &live_last_samples);
      live.row.manager_crashes = p.manager_takeovers;
      live.progress = p;
      live.controller = c;
      live.handler_times_known = false;  // only what the reports say: tasks and work
      for (const auto& [id, counts] : by_handler) {
        runtime::HandlerFigures r;
        r.id = id;
        r.tasks = counts.first;
        r.work = counts.second;
        live.handlers.push_back(r);
      }
      live.space = space.Stats();
      live.task_latency = task_latency;
      live.finished = p.finished;
      view->OnSample(live);
    }
    if (options.on_progress) {
      options.on_progress(runtime::ToTrainProgress(p, steps_per_epoch, effective.train.epochs));
    }
  };
  mo.on_active = [&report, &active_at, &options, &stall, &watching, &recovering] {
    report.was_active = true;
    active_at = Clock::now();
    stall.OnStep(0);  // the clock starts when it takes the job
    recovering.store(true);
    watching.store(true);
    if (options.on_active) options.on_active();
  };
  mo.on_recovered = [&recovering](std::chrono::nanoseconds) { recovering.store(false); };

  std::atomic<bool> stop{false};
  std::stop_callback on_stop(options.stop, [&stop] { stop.store(true); });
  for (;;) {
    runtime::Manager manager(&space, layout, &effective, &data, mo);
    Status s = manager.Run(stop);
    if (s.ok()) break;
    if (stop.load()) break;   // stopped (Cancelled), as if killed
    if (s.IsUnavailable()) {  // lost the lease (refused at a write): a standby again
      watching.store(false);
      spdlog::warn("manager {}: {}; standing by again", options.name, s.ToString());
      continue;
    }
    return s;
  }
  stall_reports.request_stop();
  stall_reports.join();
  if (active_at) report.active_s = std::chrono::duration<double>(Clock::now() - *active_at).count();
  PutUsage(space, layout, fmt::format("m{}", getpid()));
  if (report.applied_last_step && !options.metrics_csv.empty()) {
    // A column for every handler seen, 0 in rows before its first report.
    std::vector<int> ids;
    for (const auto& [id, counts] : by_handler) ids.push_back(id);
    for (size_t r = 0; r < metrics.size(); ++r) {
      for (int id : ids) {
        auto it = handlers_at_row[r].find(id);
        metrics[r].handler_tasks.push_back(it == handlers_at_row[r].end() ? 0 : it->second.first);
        metrics[r].handler_work.push_back(it == handlers_at_row[r].end() ? 0 : it->second.second);
        metrics[r].handler_speeds.push_back(1);  // no injected slow-down across processes
      }
    }
    ACAN_RETURN_IF_ERROR(runtime::WriteMetricsCsv(options.metrics_csv, metrics, ids));
  }
  ACAN_ASSIGN_OR_RETURN(runtime::Progress p, runtime::Manager::ReadProgress(&space, layout));
  report.job_finished = p.finished;
  report.progress = runtime::ToTrainProgress(p, steps_per_epoch, effective.train.epochs);
  if (p.finished) {
    ACAN_ASSIGN_OR_RETURN(nn::Plan plan, nn::Plan::Create(effective, p.task_size, data.rows));
    const bool write = report.applied_last_step && !options.model_path.empty();
    if (memory > 0) {
      ACAN_RETURN_IF_ERROR(FinishWithinBudget(space, layout, plan, p.total_steps, effective, data,
                                              memory, write ? options.model_path : "", &report));
    } else {
      ACAN_ASSIGN_OR_RETURN(nn::Model model,
                            runtime::ReadModel(&space, layout, plan, p.total_steps));
      report.weights_sha256 = nn::ModelSha256(model);
      if (write) ACAN_RETURN_IF_ERROR(nn::SaveModel(options.model_path, model));
      report.model = nn::ToPublicModel(model);
    }
    ACAN_ASSIGN_OR_RETURN(report.audit, runtime::ReadAuditChain(&space, layout));
  }
  return report;
}

Result<ManagerReport> RunManager(std::string_view space_uri, const JobConfig& job,
                                 const ManagerOptions& options) {
  ACAN_ASSIGN_OR_RETURN(SpaceOptions space_options, JobSpaceOptions(options.job_id));
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<Space> space, OpenSpace(space_uri, space_options));
  return RunManager(*space, job, options);
}

}  // namespace acan
