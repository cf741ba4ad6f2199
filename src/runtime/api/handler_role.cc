// The handler role (acan/worker.h: RunHandler): joins a job in its space (loading its own copy of
// the training rows when the job's handlers make their inputs), announces itself under its next
// incarnation, serves its /metrics, runs runtime::Handler until the job is finished or the stop
// token fires, and reports what it did.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>
#include <optional>
#include <stop_token>
#include <thread>

#include "acan/worker.h"
#include "common/byte_size.h"
#include "common/kill_point.h"
#include "nn/dataset.h"
#include "nn/row_cache.h"
#include "runtime/api/roles_internal.h"
#include "runtime/core/budget.h"
#include "runtime/core/messages.h"
#include "runtime/handler/handler.h"
#include "runtime/manager/manager.h"
#include "runtime/state/liveness.h"
#include "runtime/state/local_inputs.h"
#include "runtime/view/live_view.h"
#include "runtime/view/serve.h"

namespace acan {

namespace {

using internal::JobLayout;
using internal::PutUsage;

// The next incarnation of handler `id`: one past the one the space last saw announced.
Result<int64_t> NextIncarnation(Space& space, const runtime::Layout& layout, int id) {
  ACAN_ASSIGN_OR_RETURN(auto alive, space.ReadAll(layout.Alive(id)));
  int64_t last = 0;
  for (const Tuple& t : alive) {
    auto a = runtime::DecodeAliveMessage(t.value);
    if (a.ok()) last = std::max(last, a->incarnation);
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
// the descriptor gives the manager's hash. `bands`: the job's tile bands (what tasks this
// handler may take depends on them).
Result<std::unique_ptr<LocalData>> JoinJob(Space& space, const runtime::Layout& layout,
                                           const std::stop_token& stop,
                                           std::chrono::milliseconds poll, const std::string& cache,
                                           std::vector<TileBand>* bands) {
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
  ACAN_ASSIGN_OR_RETURN(JobConfig job,
                        ParseJobString(d.job_toml, "the descriptor of job '" + layout.job() + "'"));
  *bands = job.partition.tile_bands;
  if (!d.local_inputs) return std::unique_ptr<LocalData>();
  auto local = std::make_unique<LocalData>();
  local->job = std::move(job);
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
  runtime::HandlerSettings ho;
  ho.id = options.id;
  for (const std::string& name : options.task_types) {
    ACAN_ASSIGN_OR_RETURN(nn::TaskType type, nn::ParseTaskType(name));
    ho.capabilities.push_back(type);
  }
  ACAN_ASSIGN_OR_RETURN(ho.incarnation, NextIncarnation(space, layout, options.id));
  if (options.memory > 0) {
    // Its budget announced before the job may exist: a manager that sets the job up after this
    // cuts the tiles to fit it (Announce replaces this tuple once the handler has joined).
    ACAN_RETURN_IF_ERROR(space.Put(layout.Alive(options.id),
                                   runtime::EncodeAliveMessage({ho.incarnation, options.memory})));
    spdlog::info("handler {} (incarnation {}) announced a memory budget of {} to job '{}'",
                 options.id, ho.incarnation, HumanBytes(double(options.memory)), job_id);
  }
  std::vector<TileBand> bands;
  auto joined = JoinJob(space, layout, options.stop, options.poll, options.data_cache, &bands);
  if (!joined.ok()) {
    // It cannot join (its data is not the manager's, or fails to load): a manager making the job
    // after this must not cut its tiles for a budget nobody brings. (A handler stopped before it
    // joins takes its announcement back as it leaves; one killed while it waits leaves it, and
    // the tiles are then cut smaller than they need be, never over a budget.)
    if (options.memory > 0) (void)space.Erase(layout.Alive(options.id));
    return joined.status();
  }
  std::unique_ptr<LocalData> local = std::move(joined).value();
  if (local) {
    ho.local_inputs = local->inputs.get();
    ho.data_bytes = int64_t(sizeof(float)) *
                    int64_t(local->data.Features().size() + local->data.Targets().size());
  }
  ho.memory = options.memory;
  if (ho.memory == 0 && local && !local->job.runtime.handler_memory.empty()) {
    const auto& budgets = local->job.runtime.handler_memory;
    ho.memory = budgets[size_t(options.id) % budgets.size()];
  }
  if (ho.memory < 0) return Status::InvalidArgument("handler memory must be >= 0");
  if (options.on_budget) options.on_budget(ho.memory);
  ho.size_class = runtime::HandlerSizeClass(bands, ho.memory);
  ho.size_classes = runtime::SizeClasses(bands);
  std::atomic<int> pouch{options.pouch};
  ho.pouch = &pouch;
  ho.poll = options.poll;
  const std::atomic<double> fixed_speed{options.slowdown};
  runtime::SlowedEnv slowed(runtime::Env::Default(),
                            options.speed != nullptr ? options.speed : &fixed_speed);
  if (options.slowdown > 1.0 || options.speed != nullptr) ho.env = &slowed;
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
      runtime::HandlerFigures r = runtime::ReportOf(id, stats);
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
  report.memory = ho.memory;
  report.peak_held_bytes = stats.peak_held.load();
  report.refused = stats.refused.load();
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
  ACAN_ASSIGN_OR_RETURN(SpaceOptions space_options, JobSpaceOptions(job_id));
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<Space> space, OpenSpace(space_uri, space_options));
  return RunHandler(*space, job_id, options);
}

}  // namespace acan
