// The public roles (acan/worker.h) over the runtime's Handler and Manager.
#include "acan/worker.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <stop_token>
#include <thread>

#include "common/kill_point.h"
#include "nn/dataset.h"
#include "nn/model_api_internal.h"
#include "nn/plan.h"
#include "nn/row_cache.h"
#include "runtime/api/training.h"
#include "runtime/audit/audit.h"
#include "runtime/handler/handler.h"
#include "runtime/manager/grain.h"
#include "runtime/manager/manager.h"
#include "runtime/run/artefacts.h"
#include "runtime/run/supervisor.h"
#include "runtime/state/liveness.h"
#include "runtime/state/local_inputs.h"
#include "runtime/view/live_view.h"
#include "runtime/view/stall.h"

namespace {
// spdlog's registry (a function-local static of libspdlog) made while the program is still one
// thread, for RunJob, RunManager and RunHandler alike: threads that log first at once would
// otherwise all make it, which ThreadSanitizer cannot see synchronised inside the uninstrumented
// library (ApiTest.StopTokensEndTheRolesEarly under TSan).
[[maybe_unused]] const spdlog::logger* const kLoggerAtLoad = spdlog::default_logger_raw();
}  // namespace

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

// What handler processes need to make the job's step inputs themselves: the job read back from
// its descriptor and their own copy of its training rows, checked against the manager's.
struct LocalData {
  JobConfig job;
  nn::Dataset data;
  std::unique_ptr<runtime::LocalInputs> inputs;
};

// The training rows of the job in `toml` (a descriptor's or a data hint's) and their SHA-256,
// through the row cache in `cache` (none when empty).
Result<nn::CachedRows> LoadOwnCopy(const std::string& toml, const runtime::Layout& layout,
                                   const std::string& cache) {
  ACAN_ASSIGN_OR_RETURN(JobConfig job,
                        ParseJobString(toml, "the descriptor of job '" + layout.job() + "'"));
  std::string note;
  auto rows = nn::LoadDatasetShared(job, cache, &note);
  if (!note.empty()) spdlog::warn("handler's row cache: {}", note);
  if (!rows.ok()) {
    return Status(rows.status().code(),
                  fmt::format("job '{}' has each handler read its training rows from its own copy "
                              "of the data, and this one cannot: {}",
                              layout.job(), rows.status().message()));
  }
  return rows;
}

// Waits (until `stop`) for the job to exist in the space, and loads the data when its handlers
// make their inputs: null for a job whose inputs are in the space. The data is loaded as soon as
// the manager's hint (<job>.m.data) is there, while the manager loads its own, and checked once
// the descriptor gives the manager's hash.
Result<std::unique_ptr<LocalData>> JoinJob(Space& space, const runtime::Layout& layout,
                                           const std::stop_token& stop,
                                           std::chrono::milliseconds poll,
                                           const std::string& cache) {
  std::optional<Tuple> descriptor;
  std::optional<nn::CachedRows> early;  // from the hint
  for (;;) {
    ACAN_ASSIGN_OR_RETURN(descriptor, space.Read(layout.JobDescriptor()));
    if (descriptor.has_value()) break;
    Result<std::optional<Tuple>> state = space.Read(layout.ManagerState());
    if (!state.ok()) return state.status();
    if (state->has_value()) {
      // A manager puts the descriptor before the state: look again, for one put since the look
      // above. None now: the job was made without one, its inputs are in the space.
      ACAN_ASSIGN_OR_RETURN(descriptor, space.Read(layout.JobDescriptor()));
      if (descriptor.has_value()) break;
      return std::unique_ptr<LocalData>();
    }
    if (stop.stop_requested()) return std::unique_ptr<LocalData>();
    if (!early) {
      ACAN_ASSIGN_OR_RETURN(auto hint, space.Read(layout.DataHint()));
      if (hint.has_value()) {
        ACAN_ASSIGN_OR_RETURN(early,
                              LoadOwnCopy(std::string(hint->value.AsString()), layout, cache));
        continue;
      }
    }
    std::this_thread::sleep_for(poll);
  }
  ACAN_ASSIGN_OR_RETURN(runtime::JobDescriptor d, runtime::DecodeJobDescriptor(descriptor->value));
  if (!d.local_inputs) return std::unique_ptr<LocalData>();
  auto local = std::make_unique<LocalData>();
  ACAN_ASSIGN_OR_RETURN(local->job,
                        ParseJobString(d.job_toml, "the descriptor of job '" + layout.job() + "'"));
  // The hint's rows are the descriptor's unless the job was made by another manager with other
  // data: then they are loaded again from the descriptor.
  if (!early || early->sha256 != d.data_sha256) {
    ACAN_ASSIGN_OR_RETURN(early, LoadOwnCopy(d.job_toml, layout, cache));
  }
  if (early->sha256 != d.data_sha256) {
    return Status::FailedPrecondition(fmt::format(
        "this handler's copy of job '{}''s training data differs from its manager's (SHA-256 {} "
        "here, {} there): every handler needs the same data files",
        layout.job(), early->sha256.substr(0, 16), d.data_sha256.substr(0, 16)));
  }
  local->data = std::move(early->data);
  local->inputs = std::make_unique<runtime::LocalInputs>(&local->job, &local->data);
  return local;
}

// What this process moved through the space, for the supervisor's account of the run's traffic
// (<job>.usage.<process>: value bytes put, value bytes returned, calls).
void PutUsage(Space& space, const runtime::Layout& layout, const std::string& process) {
  const SpaceStats stats = space.Stats();
  int64_t calls = 0;
  for (uint64_t n : stats.calls) calls += static_cast<int64_t>(n);
  (void)space.Put(layout.Usage(process),
                  Value::FromVector(std::vector<int64_t>{int64_t(stats.bytes_put),
                                                         int64_t(stats.bytes_returned), calls}));
}

}  // namespace

Result<HandlerReport> RunHandler(Space& space, std::string_view job_id,
                                 const HandlerOptions& options) {
  ACAN_ASSIGN_OR_RETURN(runtime::Layout layout, JobLayout(job_id));
  if (options.id < 0) return Status::InvalidArgument("handler id must be >= 0");
  if (options.pouch < 1) return Status::InvalidArgument("handler pouch must be >= 1");
  if (!(options.slowdown >= 1.0)) {
    return Status::InvalidArgument(
        fmt::format("handler slowdown must be >= 1, not {}", options.slowdown));
  }
  runtime::HandlerOptions ho;
  ho.id = options.id;
  for (const std::string& name : options.task_types) {
    ACAN_ASSIGN_OR_RETURN(nn::TaskType type, nn::ParseTaskType(name));
    ho.capabilities.push_back(type);
  }
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<LocalData> local,
                        JoinJob(space, layout, options.stop, options.poll, options.data_cache));
  if (local) ho.local_inputs = local->inputs.get();
  std::atomic<int> pouch{options.pouch};
  ho.pouch = &pouch;
  ho.poll = options.poll;
  const std::atomic<double> fixed_speed{options.slowdown};
  runtime::SlowedEnv slowed(runtime::Env::Default(),
                            options.speed != nullptr ? options.speed : &fixed_speed);
  if (options.slowdown > 1.0 || options.speed != nullptr) ho.env = &slowed;
  ACAN_ASSIGN_OR_RETURN(ho.incarnation, NextIncarnation(space, layout, options.id));
  // The kill-point test hook (common/kill_point.h), for the handler it names.
  if (const char* target = std::getenv("ACAN_TEST_KILL_HANDLER");
      target != nullptr && std::to_string(options.id) == target) {
    ArmKillPoints();
  }
  std::atomic<bool> stop{false};
  std::stop_callback on_stop(options.stop, [&stop] { stop.store(true); });
  ho.until = [&] { return JobFinished(space, layout); };
  runtime::HandlerStats stats;
  const auto start = Clock::now();
  // /metrics: read from the handler's counters at each scrape.
  std::vector<std::unique_ptr<obs::HttpServer>> servers;
  if (options.metrics_port >= 0) {
    auto view = std::make_shared<runtime::LiveView>(
        obs::Labels{{"job", std::string(job_id)},
                    {"role", "handler"},
                    {"incarnation", std::to_string(ho.incarnation)}},
        "handler");
    const std::atomic<double>* speed_now = options.speed != nullptr ? options.speed : &fixed_speed;
    view->SetSource([&stats, &space, speed_now, start, id = options.id] {
      runtime::LiveSample s;
      s.row.t_s = std::chrono::duration<double>(Clock::now() - start).count();
      runtime::HandlerReport r = runtime::ReportOf(id, stats);
      r.speed = speed_now->load();  // the slow-down the process runs at (stats' is the slot's)
      s.handlers.push_back(r);
      s.space = space.Stats();
      return s;
    });
    std::string url, unused;
    ACAN_ASSIGN_OR_RETURN(servers,
                          runtime::ServeLiveView(view, options.metrics_port, -1, &url, &unused));
    if (options.on_serving) options.on_serving(url);
  }
  runtime::Handler handler(&space, layout, ho, &stats);
  ACAN_RETURN_IF_ERROR(handler.Announce());
  if (options.on_joined) options.on_joined(ho.incarnation);
  handler.Run(stop);
  PutUsage(space, layout, fmt::format("h{}-i{}", options.id, ho.incarnation));
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

Result<SpaceOptions> JobSpaceOptions(std::string_view job_id) {
  ACAN_ASSIGN_OR_RETURN(runtime::Layout layout, JobLayout(job_id));
  SpaceOptions options;
  options.fenced = layout.FencedKeys();
  return options;
}

Result<HandlerReport> RunHandler(std::string_view space_uri, std::string_view job_id,
                                 const HandlerOptions& options) {
  ACAN_ASSIGN_OR_RETURN(SpaceOptions space_options, JobSpaceOptions(job_id));
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<Space> space, OpenSpace(space_uri, space_options));
  return RunHandler(*space, job_id, options);
}

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
  std::optional<nn::Model> given;
  if (options.init_model) given = nn::FromPublicModel(*options.init_model);
  ACAN_ASSIGN_OR_RETURN(nn::Model init, runtime::InitialModelFor(job, given, options.init_path));
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
                          runtime::ChooseChainGrain(&space, layout, job, data, init));
    effective.partition.task_size = g.steps;
    report.grain = {g.steps, g.step_ms, g.move_ms};
  }
  runtime::JobDescriptor descriptor;
  descriptor.job_toml = ToToml(effective);
  descriptor.local_inputs = options.handlers_read_data;
  descriptor.grain_step_ms = report.grain.step_ms;
  descriptor.grain_move_ms = report.grain.move_ms;
  if (descriptor.local_inputs) descriptor.data_sha256 = rows.sha256;
  ACAN_RETURN_IF_ERROR(
      runtime::Manager::InitJob(&space, layout, effective, init, &descriptor, signer));
  (void)space.Erase(layout.DataHint());  // the descriptor says it all now
  // Another manager may have made the job first with its own measurement: its grain is the job's.
  ACAN_RETURN_IF_ERROR(adopt().status());

  runtime::RunOptions run = runtime::RunOptionsFromJob(effective);
  if (options.handlers > 0) run.handlers = options.handlers;
  run.adapt_task_size = runtime::AdaptsTaskSize(effective);
  run.lease = options.lease;
  runtime::ManagerOptions mo = runtime::ManagerOptionsFor(run, 0);
  mo.owner = options.name;
  mo.audit_signer = signer;
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
  std::mutex flight_mu;
  runtime::FlightStatus flight;  // GUARDED_BY(flight_mu)
  mo.on_flight = [&](const runtime::FlightStatus& f) {
    std::lock_guard lock(flight_mu);
    flight = f;
  };
  std::atomic<bool> watching{false};
  std::jthread stall_reports([&](std::stop_token done) {
    while (!done.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (!watching.load()) continue;
      const std::optional<double> stalled = stall.Due();
      if (!stalled) continue;
      runtime::FlightStatus f;
      {
        std::lock_guard lock(flight_mu);
        f = flight;
      }
      const SpaceStats in_space = space.Stats();
      spdlog::warn(
          "acan: manager {}: the job is stalled: no step completed for {:.1f} s: steps {}..{} in "
          "flight, {} tasks sent and not done, {} held back by the pouch; the space holds {} "
          "tuples, {} bytes",
          options.name, *stalled, f.next_step, f.admitted - 1, f.tasks_sent, f.tasks_held,
          in_space.tuples, in_space.bytes);
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
        runtime::HandlerReport r;
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
  mo.on_active = [&report, &active_at, &options, &stall, &watching] {
    report.was_active = true;
    active_at = Clock::now();
    stall.OnStep(0);  // the clock starts when it takes the job
    watching.store(true);
    if (options.on_active) options.on_active();
  };

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
    ACAN_ASSIGN_OR_RETURN(nn::Model model, runtime::ReadModel(&space, layout, plan, p.total_steps));
    report.model = nn::ToPublicModel(model);
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
