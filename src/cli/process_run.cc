// `acan train --processes N`: the supervisor of a run made of processes (DESIGN.md section 9a).
// It opens the run's spaces (for nats:local, starting the server), watches the job's puts at the
// server (the exactly-once account, what the kills cost, the dashboard, a stall), has a
// ProcessSupervisor start and restart the role processes, drives the chaos's kills and speeds
// (ChaosSchedule), and adds what only it knows to the finishing manager's summary.json.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "acan/space.h"
#include "acan/worker.h"
#include "cli/process_chaos.h"
#include "cli/process_supervisor.h"
#include "cli/roles.h"
#include "cli/run_support.h"
#include "common/child_process.h"
#include "nn/plan.h"
#include "nn/row_cache.h"
#include "runtime/audit/audit.h"
#include "runtime/chaos/chaos_account.h"
#include "runtime/core/layout.h"
#include "runtime/core/progress.h"
#include "runtime/run/artefacts.h"
#include "runtime/state/lease.h"
#include "runtime/state/liveness.h"
#include "runtime/state/local_inputs.h"
#include "runtime/testing/version_oracle.h"
#include "runtime/view/live_view.h"
#include "runtime/view/process_view.h"
#include "runtime/view/serve.h"
#include "runtime/view/stall.h"
#include "space/nats/nats_space.h"

namespace acan::cli {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr const char* kJobId = "job";
// Handlers leave on their own once the job is finished; ones still there this long after are
// told to.
constexpr auto kLeaveAfterFinish = 30s;
constexpr std::chrono::milliseconds kSupervisorLeaveWithin = 15s;

// `uri` with the parameter `kv` ("key=value") added.
std::string WithParam(const std::string& uri, const std::string& kv) {
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + kv;
}

// The spaces of a run. The supervisor's own calls (death notices, the lease, the dashboard's
// resident counts) go on a connection of their own: the watch receives every put of the job, and
// a request's answer must not wait behind that stream. (Most of the 51 ms from a kill to its
// notice in the full robustness experiment is the kernel reaping the process:
// docs/benchmarks.md.)
struct RunSpaces {
  std::string uri;        // the supervisor's: for nats:local with its server's dir
  std::string child_uri;  // what the children connect to: for nats:local, the server's address
  std::unique_ptr<Space> watched;   // the watch's (and nats:local's server's)
  std::unique_ptr<Space> commands;  // the supervisor's calls, as a manager

  // Each process in its role: in a secure deployment (secure=DIR) it presents the role's
  // credentials; without one the role is what it does (a handler takes by deleting, never
  // purges, as its permissions would require).
  std::string AsRole(std::string_view role) const {
    return WithParam(child_uri, fmt::format("role={}", role));
  }
  nats::NatsSpace* nats() const { return dynamic_cast<nats::NatsSpace*>(watched.get()); }
  nats::LocalNatsServer* local_server() const { return nats() ? nats()->server() : nullptr; }
};

// The supervisor's URI: the run's space (--space, else the job's), which other processes must
// reach; for nats:local with its server's directory in the run's, and a manager's role unless it
// names one.
Result<std::string> SupervisorUri(const ProcessRunArgs& a, const std::string& job_uri) {
  std::string uri = a.space.empty() ? job_uri : a.space;
  if (uri.starts_with("mem:")) {
    return Status::InvalidArgument(fmt::format(
        "--processes needs a space that other processes reach (nats://host:port or nats:local), "
        "not '{}'",
        uri));
  }
  // nats:local: this process starts the server (in the run directory) and the children connect
  // to it by its address.
  if (uri == "nats:local" || uri.starts_with("nats:local?")) {
    uri = WithParam(uri, "dir=" + (fs::absolute(a.out) / "nats").string());
  }
  // In a secure deployment the supervisor makes the streams and watches every put: a manager's
  // rights (its children get their own roles).
  if (uri.find("role=") == std::string::npos) uri = WithParam(uri, "role=manager");
  return uri;
}

Result<RunSpaces> OpenRunSpaces(const std::string& uri) {
  RunSpaces spaces;
  spaces.uri = uri;
  const SpaceOptions job_space = JobSpaceOptions(kJobId).value();
  ACAN_ASSIGN_OR_RETURN(spaces.watched, OpenSpace(uri, job_space));
  spaces.child_uri = uri;
  if (const nats::LocalNatsServer* server = spaces.local_server()) {
    spaces.child_uri = server->url();
    if (size_t q = uri.find('?'); q != std::string::npos) {
      // Keep the stream options; `dir` belonged to the server, `role` is each process's own.
      std::string params;
      std::string_view rest = std::string_view(uri).substr(q + 1);
      while (!rest.empty()) {
        std::string_view kv = rest.substr(0, rest.find('&'));
        if (!kv.starts_with("dir=") && !kv.starts_with("role=")) {
          params += (params.empty() ? "?" : "&") + std::string(kv);
        }
        rest.remove_prefix(std::min(rest.size(), kv.size() + 1));
      }
      spaces.child_uri += params;
    }
  }
  // The supervisor's death notices and lease reads are a manager's.
  ACAN_ASSIGN_OR_RETURN(spaces.commands, OpenSpace(spaces.AsRole("manager"), job_space));
  return spaces;
}

// A private row cache directory for the run's children, removed with its files when the run
// ends. Fill loads the job's rows into it; a machine where no temporary directory can be made
// leaves it empty, and each child holds its own copy as without one.
class RowCacheDir {
 public:
  RowCacheDir() = default;
  RowCacheDir(const RowCacheDir&) = delete;
  RowCacheDir& operator=(const RowCacheDir&) = delete;
  ~RowCacheDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

  Status Fill(const JobConfig& job) {
    std::string templ = (fs::temp_directory_path() / "acan-rows-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) {
      spdlog::warn("no row cache for the run's processes: cannot create {} ({})", templ,
                   std::strerror(errno));
      return Status::Ok();
    }
    path_ = templ;
    std::string note;
    ACAN_ASSIGN_OR_RETURN(nn::CachedRows loaded, nn::LoadDatasetShared(job, path_, &note));
    if (!note.empty()) spdlog::warn("the run's row cache: {}", note);
    return Status::Ok();
  }

 private:
  std::string path_;
};

// What the supervisor learns from the job's puts as they reach the server, apart from the
// processes that make them: the exactly-once account (runtime/testing/version_oracle.h), what
// the kills cost (runtime/chaos/chaos_account.h), the dashboard's view of the job, and whether it
// makes progress (the manager's state is put after every step).
struct JobWatch {
  JobWatch(const JobConfig& job, const runtime::Layout& layout)
      : layout(layout), oracle(kJobId, job.runtime.window), account(layout) {}

  void OnPut(const Key& key, const Value& value) {
    oracle.OnPut(key, value);
    account.OnPut(key, value);
    if (shown) shown->OnPut(key, value);
    if (key != layout.ManagerState()) return;
    auto p = runtime::Progress::FromJson(value.AsString());
    if (!p.ok()) return;
    double longest_ns = 0;
    for (const auto& [cls, ns] : p->task_ns) longest_ns = std::max(longest_ns, ns);
    // A timeout is a few times a task's mean time.
    stall.OnStep(p->next_step, std::chrono::nanoseconds(int64_t(4 * longest_ns)));
  }

  // Subscribes to what the accounts read (tasks, claims, reports, proposals, versions, the
  // manager's progress), and not to the tensors between tasks: a step's gradients are a third of
  // the bytes the job puts, and the server would send the supervisor a copy of each (the
  // flagship over 2 processes: 5.9 MB a step to the supervisor with them, 3.9 without; off the
  // step's path, so the wall time is the same within noise, but the server's work is less). One
  // subscription a class: libnats delivers each on its own thread, so the accounts do not rely
  // on the order across classes (a claim seen after its task's report is ignored).
  Status Subscribe(nats::NatsSpace* space) {
    for (const Pattern& what :
         {layout.AnyTaskPattern(), layout.AllClaimsPattern(), layout.DonePattern(),
          layout.AllProposalsPattern(), layout.AllStatesPattern(),
          Pattern::Exactly(layout.ManagerState())}) {
      ACAN_RETURN_IF_ERROR(space->WatchPuts(
          what, [this](const Key& key, const Value& value) { OnPut(key, value); }));
    }
    return Status::Ok();
  }

  const runtime::Layout& layout;
  runtime::VersionOracle oracle;
  runtime::ChaosAccount account;
  runtime::StallWatch stall{std::chrono::seconds(30)};
  std::unique_ptr<runtime::ProcessView> shown;  // with a dashboard or /metrics
};

// The supervisor's /metrics and dashboard (ports < 0: none): the job as `watch` sees it.
Result<std::vector<std::unique_ptr<obs::HttpServer>>> ServeJobView(const ProcessRunArgs& a,
                                                                   const JobConfig& job,
                                                                   const RunSpaces& spaces,
                                                                   JobWatch& watch) {
  std::vector<std::unique_ptr<obs::HttpServer>> servers;
  if (a.metrics_port < 0 && a.dashboard_port < 0) return servers;
  auto view = std::make_shared<runtime::LiveView>(
      obs::Labels{{"job", kJobId}, {"role", "supervisor"}},
      fmt::format("acan: {} over {} handler processes", a.config, a.handlers),
      nlohmann::json{{"strategy", std::string(ToString(job.partition.strategy))},
                     {"handler processes", a.handlers},
                     {"space", spaces.child_uri}});
  watch.shown = std::make_unique<runtime::ProcessView>(watch.layout, view, a.handlers);
  watch.shown->SetResident([commands = spaces.commands.get()] {
    const SpaceStats stats = commands->Stats();  // the server's count of the stream
    return std::pair<int64_t, int64_t>(int64_t(stats.tuples), int64_t(stats.bytes));
  });
  std::string metrics_url, dashboard_url;
  ACAN_ASSIGN_OR_RETURN(servers, runtime::ServeLiveView(view, a.metrics_port, a.dashboard_port,
                                                        &metrics_url, &dashboard_url));
  if (!metrics_url.empty()) fmt::print(stderr, "acan: metrics at {}\n", metrics_url);
  if (!dashboard_url.empty()) fmt::print(stderr, "acan: dashboard at {}\n", dashboard_url);
  return servers;
}

// Permission refusals in a secure deployment are the server's to see: the supervisor of a private
// server reads its log and records each in the job's audit log, until destroyed.
class RefusalRecorder {
 public:
  static Result<std::unique_ptr<RefusalRecorder>> Start(const RunSpaces& spaces,
                                                        const runtime::Layout& layout) {
    const std::string dir = SecureDirOf(spaces.uri);
    ACAN_ASSIGN_OR_RETURN(auto signer,
                          runtime::AuditSigner::Load((fs::path(dir) / "manager-key.pem").string(),
                                                     (fs::path(dir) / "manager.pem").string()));
    auto recorder = std::unique_ptr<RefusalRecorder>(new RefusalRecorder(
        std::make_unique<runtime::AuditLog>(spaces.commands.get(), &layout, "supervisor", signer)));
    recorder->reader_ = std::jthread(
        [log = spaces.local_server()->store_dir() + "/nats-server.log",
         audit = recorder->audit_.get()](std::stop_token stop) { Follow(log, audit, stop); });
    return recorder;
  }

 private:
  explicit RefusalRecorder(std::unique_ptr<runtime::AuditLog> audit) : audit_(std::move(audit)) {}

  static void Follow(const std::string& log, runtime::AuditLog* audit, std::stop_token stop) {
    std::ifstream in;
    std::string line;
    while (!stop.stop_requested()) {
      if (!in.is_open()) in.open(log);
      while (in.is_open() && std::getline(in, line)) {
        if (line.find("Violation") == std::string::npos) continue;
        // "[pid] date time [ERR] addr - cid:N - "client" - Publish Violation - User "handler", ..."
        const size_t what = line.find(" - ", line.find("[ERR]"));
        audit->Append("permission_refused",
                      {{"server_log", what == std::string::npos ? line : line.substr(what + 3)}});
      }
      in.clear();  // at the end for now: wait for more
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  std::unique_ptr<runtime::AuditLog> audit_;
  std::jthread reader_;  // last: stopped and joined before the audit log goes
};

// What a role process is started with: this executable's `manager` or `handler` command.
struct RoleCommands {
  const ProcessRunArgs& args;
  const RunSpaces& spaces;
  const ChaosSchedule& chaos;
  std::string exe = SelfExecutable();
  std::string cache;  // the row cache directory ("": none)

  std::vector<std::string> operator()(const RoleProcess& p) const {
    std::vector<std::string> line;
    if (p.role == Role::kManager) {
      line = {
          exe,     "manager", args.config, "--space",    spaces.AsRole("manager"),      "--job-id",
          kJobId,  "--name",  p.name,      "--handlers", std::to_string(args.handlers), "--out",
          args.out};
      if (args.quiet) line.push_back("--quiet");  // else the active one prints the progress
    } else {
      line = {exe,      "handler", "--space", spaces.AsRole("handler"),
              "--job",  kJobId,    "--id",    std::to_string(p.id),
              "--quiet"};
      if (!args.chaos.speeds.empty()) {
        line.insert(line.end(), {"--slowdown", fmt::format("{}", chaos.Speed(p.id))});
      }
    }
    if (args.metrics_port >= 0) line.insert(line.end(), {"--metrics-port", "0"});
    if (!cache.empty()) line.insert(line.end(), {"--data-cache", cache});
    return line;
  }
};

// Acts on what the chaos says is due `t_s` into the run: the handlers' new speeds and the kills.
// The active manager is the one the lease names now, and is spared once the job is finished (it
// writes the artefacts next, and no one else would).
void ChaosTurn(double t_s, ChaosSchedule& chaos, ProcessSupervisor& supervisor, JobWatch& watch,
               Space& commands, int* handler_kills, int* manager_kills) {
  const ChaosSchedule::Due due = chaos.At(t_s);
  for (size_t h = 0; h < due.speeds.size(); ++h) supervisor.SetSpeed(int(h), due.speeds[h]);
  if (watch.shown && !due.speeds.empty()) watch.shown->SetSpeeds(due.speeds);
  const int handlers = static_cast<int>(supervisor.processes().size()) - 2;
  for (int target : due.targets) {
    if (target < handlers) {
      if (!supervisor.Kill(supervisor.handler(target))) continue;
      watch.account.OnHandlerKilled(target);
      ++*handler_kills;
    } else {
      if (watch.account.job_finished()) continue;
      auto lease = commands.ReadCell(watch.layout.Lease());
      if (!lease.ok() || lease->revision == 0) continue;
      auto m = runtime::DecodeLeaseMessage(lease->value);
      if (!m.ok()) continue;
      RoleProcess* active = nullptr;
      for (int i = 0; i < 2; ++i) {
        if (supervisor.manager(i).name == m->owner) active = &supervisor.manager(i);
      }
      if (active == nullptr || !supervisor.Kill(*active)) continue;
      watch.account.OnManagerKilled();
      ++*manager_kills;
    }
    if (watch.shown) watch.shown->SetCrashes(*handler_kills, *manager_kills);
  }
}

// A job that makes no progress says so, with what the space holds and which processes run.
void ReportStall(JobWatch& watch, Space& commands, const ProcessSupervisor& supervisor) {
  const std::optional<double> stalled = watch.stall.Due();
  if (!stalled) return;
  const SpaceStats in_space = commands.Stats();
  std::string alive;
  for (const RoleProcess& p : supervisor.processes()) {
    alive +=
        fmt::format("{}{} {}", alive.empty() ? "" : ", ", p.name, p.pid > 0 ? "running" : "down");
  }
  fmt::print(stderr,
             "acan: the job is stalled: no step completed for {:.1f} s (step {} next); the space "
             "holds {} tuples, {} bytes; processes: {}\n",
             *stalled, watch.stall.next_step(), in_space.tuples, in_space.bytes, alive);
}

// What only the supervisor knows, added to the finishing manager's summary.json (read back
// through its schema, runtime/core/summary.h, and written whole again): the processes and their
// restarts, the kills and what they cost, the traffic, the oracle's verdict.
Status CompleteSummary(const ProcessRunArgs& a, const JobConfig& job, const RunSpaces& spaces,
                       JobWatch& watch, const ProcessSupervisor& supervisor, double wall_s,
                       int handler_kills, int manager_kills) {
  const std::string summary_path = (fs::path(a.out) / "summary.json").string();
  Result<runtime::RunSummary> read = runtime::ReadSummary(summary_path);
  if (!read.ok()) {
    return Status::DataLoss(
        fmt::format("the finishing manager's summary: {}", read.status().message()));
  }
  runtime::RunSummary& summary = *read;
  runtime::SummaryProcesses& procs = summary.processes.emplace();
  procs.handlers = a.handlers;
  procs.managers = 2;
  for (const RoleProcess& p : supervisor.processes()) {
    procs.restarts[p.name] = p.restarts;
    (p.role == Role::kHandler ? procs.handler_restarts : procs.manager_restarts) += p.restarts;
  }
  procs.space = spaces.child_uri;
  summary.wall_s = wall_s;
  // The tasks' times by class, read from the reports at the server: a fault-free run's are the
  // baseline the experiments judge a run under kills by.
  const runtime::ChaosAccount& account = watch.account;
  runtime::SummaryRecovery& recovery =
      summary.recovery.emplace(runtime::RecoverySummary(account.recovery()));
  if (a.chaos.interval_s > 0) {
    summary.crashes = runtime::SummaryCrashes{.handlers = handler_kills,
                                              .manager = manager_kills,
                                              .by = "SIGKILL",
                                              .interval_s = a.chaos.interval_s,
                                              .probability = a.chaos.probability,
                                              .seed = a.chaos.seed,
                                              .speeds = a.chaos.speeds,
                                              .lost_tasks = account.lost_tasks(),
                                              .lost_not_redone = account.lost_not_redone()};
    recovery.lost = account.lost_trace();
    const LatencyHistogram lag = account.watch_lag();
    recovery.watch_lag_ms =
        runtime::SummaryWatchLag{lag.QuantileNs(0.5) / 1e6, lag.QuantileNs(0.99) / 1e6};
    summary.compute = runtime::SummaryCompute{
        .extra_compute_ratio = account.extra_compute_ratio(),
        .measured =
            "kernel time of every report and of killed handlers' tasks in hand, over the "
            "first report of each task"};
  }
  // What the role processes moved through the server: each puts its account as it exits (one
  // killed by a signal cannot, so this counts the processes that ended on their own).
  Space& commands = *spaces.commands;
  int64_t bytes_put = 0, bytes_returned = 0, calls = 0, reports = 0;
  for (const Tuple& t : commands.ReadAll(watch.layout.UsagePattern()).value_or({})) {
    auto v = t.value.As<int64_t>();
    if (v.size() != 3) continue;
    bytes_put += v[0];
    bytes_returned += v[1];
    calls += v[2];
    ++reports;
  }
  (void)commands.Erase(watch.layout.UsagePattern());
  const double steps = std::max<double>(1, double(summary.steps));
  summary.traffic =
      runtime::SummaryTraffic{.processes_reporting = reports,
                              .value_bytes_put = bytes_put,
                              .value_bytes_returned = bytes_returned,
                              .value_bytes_per_step = double(bytes_put + bytes_returned) / steps,
                              .space_calls = calls,
                              .space_calls_per_step = double(calls) / steps};
  if (reports > 0) {
    // The parameters (and velocities) read once and their new values written once.
    const double least =
        2 * double(nn::Plan::Parameters(job)) * sizeof(float) * (job.train.momentum > 0 ? 2 : 1);
    summary.traffic->minimum_bytes_per_step = least;
    summary.traffic->per_step_over_minimum = summary.traffic->value_bytes_per_step / least;
  }
  auto stats = spaces.watched->Stats();
  summary.space_at_end = runtime::SummarySpaceAtEnd{int64_t(stats.tuples), int64_t(stats.bytes)};
  if (const nats::NatsSpace* watched = spaces.nats()) {
    // The shards of the job as its manager made it: a tiles job's are its tiles, whose edge the
    // manager chose (the descriptor's task size); the other strategies' are the tensors.
    // with its tile bands, if it cut them for budgets that differ.
    int64_t task_size = -1;
    JobConfig made_job = job;
    if (auto made = spaces.watched->Read(watch.layout.JobDescriptor()); made.ok() && *made) {
      if (auto d = runtime::DecodeJobDescriptor((*made)->value); d.ok()) {
        if (auto as_made = ParseJobString(d->job_toml, "the job's descriptor"); as_made.ok()) {
          task_size = as_made->partition.task_size;
          made_job.partition.tile_bands = as_made->partition.tile_bands;
        }
      }
    }
    Status verdict = watch.oracle.CheckJob(made_job, task_size, 0, summary.steps);
    const uint64_t dropped = watched->watch_dropped(), chunked = watched->watch_chunked();
    if (verdict.ok() && (dropped > 0 || chunked > 0)) {
      verdict = Status::Unavailable(
          fmt::format("the account is incomplete: {} puts dropped, {} chunked values unseen",
                      dropped, chunked));
    }
    summary.oracle = runtime::SummaryOracle{.verdict = verdict.ok() ? "ok" : verdict.ToString(),
                                            .versions_written = watch.oracle.versions_written(),
                                            .version_copies = watch.oracle.version_copies(),
                                            .proposals_seen = watch.oracle.proposals_seen(),
                                            .tasks_seen = watch.oracle.tasks_seen()};
  }
  ACAN_RETURN_IF_ERROR(WriteFileAtomically(summary_path, runtime::SummaryText(summary)));
  (void)runtime::WriteReportOrWarn(a.out);
  if (!a.quiet) {
    fmt::print(
        "{} steps in {:.2f} s over {} handler processes; {} handler and {} manager "
        "restarts; tasks retransmitted {}\n",
        summary.steps, wall_s, a.handlers, procs.handler_restarts, procs.manager_restarts,
        summary.tasks.retransmitted);
    const std::optional<double> accuracy = summary.test_accuracy.value_or(std::nullopt);
    const std::optional<double> loss = summary.test_loss.value_or(std::nullopt);
    if (accuracy && loss) {
      fmt::print("test accuracy {:.4f}, test loss {:.4f}\n", *accuracy, *loss);
    }
  }
  return Status::Ok();
}

}  // namespace

int RunProcesses(const JobConfig& job, const ProcessRunArgs& a) {
  // One for the process: an experiment runs several of these in a row. Bounded, more loosely than
  // a role: the roles leave within theirs and are SIGKILLed after the supervisor's stop_grace, so
  // the bound ends only a supervisor stuck in a call to a space that does not answer (its
  // children follow it, by their parent-death signal).
  static SignalStop signals({kSupervisorLeaveWithin, "acan train --processes",
                             a.space.empty() ? job.runtime.space : a.space});
  const auto uri = SupervisorUri(a, job.runtime.space);
  if (!uri.ok()) return Fail(uri.status());
  if (Status s = CheckOutputDir(a.out); !s.ok()) return Fail(s);
  std::error_code ec;
  fs::create_directories(a.out, ec);
  auto opened = OpenRunSpaces(*uri);
  if (!opened.ok()) return Fail(opened.status());
  const RunSpaces& spaces = *opened;
  const runtime::Layout layout(kJobId);
  JobWatch watch(job, layout);
  auto servers = ServeJobView(a, job, spaces, watch);
  if (!servers.ok()) return Fail(servers.status());
  if (nats::NatsSpace* watched = spaces.nats()) {
    if (Status s = watch.Subscribe(watched); !s.ok()) return Fail(s);
  }
  // One copy of the training rows for every child: loaded here once, into a row cache the
  // children map (nn/row_cache.h). A restarted handler then has its rows in the time it takes to
  // check their hash, and a killed one is reaped without freeing them.
  RowCacheDir rows;
  if (Status s = rows.Fill(job); !s.ok()) return Fail(s);
  // (secure=DIR in the URI, or ACAN_NATS_SECURE, which the children inherit.)
  std::unique_ptr<RefusalRecorder> refusals;
  if (!SecureDirOf(spaces.uri).empty() && spaces.local_server() != nullptr) {
    auto started = RefusalRecorder::Start(spaces, layout);
    if (!started.ok()) return Fail(started.status());
    refusals = std::move(*started);
  }

  ChaosSchedule chaos(a.chaos, a.handlers);
  ProcessSupervisor::Options options;
  options.handlers = a.handlers;
  options.quiet = a.quiet;
  options.command = RoleCommands{a, spaces, chaos, SelfExecutable(), rows.path()};
  options.on_death = [&](const RoleProcess& p) {
    if (p.role == Role::kHandler) {
      // Every incarnation it announced is dead (the next starts now): no read of which.
      (void)runtime::AnnounceDeath(spaces.commands.get(), layout, p.id,
                                   std::numeric_limits<int64_t>::max());
    } else {
      // A dead manager's lease is free at once: the standby, loaded and waiting, takes over at
      // its next look rather than when the lease lapses.
      (void)runtime::Lease::FreeIfHeldBy(spaces.commands.get(), layout.Lease(), p.name);
    }
  };
  ProcessSupervisor supervisor(std::move(options));
  const auto start = std::chrono::steady_clock::now();
  // (Those started before one that cannot be are killed with the supervisor.)
  if (Status s = supervisor.StartAll(); !s.ok()) return Fail(s);
  // Once every child runs (tests/e2e/membership.sh waits for this line to join the job).
  if (!a.quiet) {
    fmt::print(
        "acan: {} on {}: 2 manager processes (one active, one standby), {} handler "
        "processes\n",
        a.config, spaces.child_uri, a.handlers);
    std::fflush(stdout);
  }

  int handler_kills = 0, manager_kills = 0;
  while (supervisor.running() > 0) {
    const bool under_way = !supervisor.stopping() && !supervisor.finished_at();
    if (under_way && chaos.kills()) {
      const double t =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ChaosTurn(t, chaos, supervisor, watch, *spaces.commands, &handler_kills, &manager_kills);
    }
    if (under_way && !watch.account.job_finished())
      ReportStall(watch, *spaces.commands, supervisor);
    if (!supervisor.stopping() && signals.signal() != 0) {
      fmt::print(stderr, "acan: stopping (signal {}): every process leaves cleanly\n",
                 signals.signal());
      supervisor.Stop(130);
    }
    if (const auto finished = supervisor.finished_at();
        finished && std::chrono::steady_clock::now() - *finished > kLeaveAfterFinish) {
      supervisor.Stop(0);
    }
    if (!supervisor.ReapOne()) std::this_thread::sleep_for(2ms);  // a death is announced this soon
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (watch.shown) watch.shown->Finish();
  if (supervisor.exit_code() != 0) return supervisor.exit_code();
  if (!supervisor.managers_done()) {
    return Fail(Status::Internal("the managers ended without finishing the job"));
  }
  if (Status s =
          CompleteSummary(a, job, spaces, watch, supervisor, wall_s, handler_kills, manager_kills);
      !s.ok()) {
    return Fail(s);
  }
  return 0;
}

}  // namespace acan::cli
