// `acan train --processes N`: the supervisor of a run made of processes (DESIGN.md section 9a).
// It starts an active manager, a standby and N handlers as child processes of this executable,
// learns of each death from waitpid at once, announces a dead handler in the space (its tasks are
// sent again without waiting for their deadlines) and starts it again under the same id; a dead
// manager is started again as a standby while the other one takes over by the lease.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "acan/space.h"
#include "acan/worker.h"
#include "cli/roles.h"
#include "cli/run_support.h"
#include "common/split_mix.h"
#include "nn/row_cache.h"
#include "runtime/audit/audit.h"
#include "runtime/chaos/chaos_account.h"
#include "runtime/core/layout.h"
#include "runtime/core/progress.h"
#include "runtime/run/artefacts.h"
#include "runtime/state/lease.h"
#include "runtime/state/liveness.h"
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
constexpr int kMaxRestartsPerChild = 50;

struct Child {
  std::string role;  // "manager" or "handler"
  std::string name;  // m0, m1, h0, ...
  int id = 0;        // handler id
  pid_t pid = -1;
  int restarts = 0;
  int kills = 0;        // of the restarts, the chaos's own kills
  bool killed = false;  // the chaos killed it: the death waitpid reports next is that one
  bool done = false;    // exited 0: the job is finished (or it left on request)
};

// When, in interval `k` (seconds from its start), the chaos kills process `target` (handlers
// 0..n-1, the active manager n), if it does: a function of (seed, target, k) alone.
std::optional<double> KillMoment(const ProcessChaos& chaos, int target, int64_t k) {
  const uint64_t h = SplitMix64(SplitMix64(chaos.seed ^ (uint64_t(target) << 32)) ^ uint64_t(k));
  if (UnitInterval(h) >= chaos.probability) return std::nullopt;
  return UnitInterval(SplitMix64(h)) * chaos.interval_s;
}

// Handler h's slow-down in interval `k`: speeds[(h + r) % size], with r drawn from (seed, k).
double SpeedOf(const ProcessChaos& chaos, int h, int64_t k) {
  if (chaos.speeds.empty()) return 1.0;
  const uint64_t r = SplitMix64(SplitMix64(chaos.seed ^ 0x5eedULL) ^ uint64_t(k));
  return chaos.speeds[(size_t(h) + r) % chaos.speeds.size()];
}

std::string SelfExe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "acan" : p.string();
}

pid_t Spawn(const std::vector<std::string>& args) {
  std::fflush(nullptr);  // a child must not inherit (and print again) what is buffered here
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  // A child outlives neither the supervisor nor a Ctrl-C: it leaves cleanly on SIGTERM.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);
  // Every signal open but the speed signal: it stays blocked across exec (pending, not fatal)
  // until the handler command is ready for it.
  sigset_t speed_only;
  sigemptyset(&speed_only);
  sigaddset(&speed_only, SIGRTMIN);
  pthread_sigmask(SIG_SETMASK, &speed_only, nullptr);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(127);
}

std::string Describe(int wstatus) {
  if (WIFSIGNALED(wstatus)) return fmt::format("killed by signal {}", WTERMSIG(wstatus));
  if (WIFEXITED(wstatus)) return fmt::format("exit code {}", WEXITSTATUS(wstatus));
  return "stopped";
}

// `uri` with the parameter `kv` ("key=value") added.
std::string WithParam(const std::string& uri, const std::string& kv) {
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + kv;
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

}  // namespace

int RunProcesses(const JobConfig& job, const ProcessRunArgs& a) {
  // One for the process: an experiment runs several of these in a row.
  static SignalStop signals;
  std::string uri = a.space.empty() ? job.runtime.space : a.space;
  if (uri.starts_with("mem:")) {
    return Fail(Status::InvalidArgument(fmt::format(
        "--processes needs a space that other processes reach (nats://host:port or nats:local), "
        "not '{}'",
        uri)));
  }
  if (Status s = CheckOutputDir(a.out); !s.ok()) return Fail(s);
  std::error_code ec;
  fs::create_directories(a.out, ec);
  // nats:local: this process starts the server (in the run directory) and the children connect
  // to it by its address.
  if (uri == "nats:local" || uri.starts_with("nats:local?")) {
    uri = WithParam(uri, "dir=" + (fs::absolute(a.out) / "nats").string());
  }
  // In a secure deployment the supervisor makes the streams and watches every put: a manager's
  // rights (its children get their own roles below).
  // (secure=DIR in the URI, or ACAN_NATS_SECURE, which the children inherit.)
  const char* secure_env = std::getenv("ACAN_NATS_SECURE");
  const bool secure =
      uri.find("secure=") != std::string::npos || (secure_env != nullptr && *secure_env != '\0');
  if (uri.find("role=") == std::string::npos) uri = WithParam(uri, "role=manager");
  const SpaceOptions job_space = JobSpaceOptions(kJobId).value();
  auto space = OpenSpace(uri, job_space);
  if (!space.ok()) return Fail(space.status());
  std::string child_uri = uri;
  if (auto* nats_space = dynamic_cast<nats::NatsSpace*>(space->get());
      nats_space && nats_space->server()) {
    child_uri = nats_space->server()->url();
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
      child_uri += params;
    }
  }
  // The supervisor's own calls (death notices, the lease, the dashboard's resident counts) on a
  // connection of their own: the watch below receives every put of the job, and a request's
  // answer must not wait behind that stream. (Most of the 51 ms from a kill to its notice in the
  // full robustness experiment is the kernel reaping the process: docs/benchmarks.md.)
  // Each process in its role: in a secure deployment (secure=DIR) it presents the role's
  // credentials; without one the role is what it does (a handler takes by deleting, never
  // purges, as its permissions would require). The supervisor's death notices and lease reads
  // are a manager's.
  auto as_role = [&](std::string_view role) {
    return WithParam(child_uri, fmt::format("role={}", role));
  };
  auto commands = OpenSpace(as_role("manager"), job_space);
  if (!commands.ok()) return Fail(commands.status());
  const runtime::Layout layout(kJobId);
  // The exactly-once account kept apart from the processes that make it: every version,
  // proposal and task of the job as it reaches the server (runtime/testing/version_oracle.h).
  runtime::VersionOracle oracle(kJobId, job.runtime.window);
  // What the kills cost, from the same puts (runtime/chaos/chaos_account.h).
  runtime::ChaosAccount account(layout);
  // The supervisor's /metrics and dashboard: the job as the watch sees it.
  std::shared_ptr<runtime::LiveView> view;
  std::unique_ptr<runtime::ProcessView> shown;
  std::vector<std::unique_ptr<obs::HttpServer>> servers;
  if (a.metrics_port >= 0 || a.dashboard_port >= 0) {
    view = std::make_shared<runtime::LiveView>(
        obs::Labels{{"job", kJobId}, {"role", "supervisor"}},
        fmt::format("acan: {} over {} handler processes", a.config, a.handlers),
        nlohmann::json{{"strategy", std::string(ToString(job.partition.strategy))},
                       {"handler processes", a.handlers},
                       {"space", child_uri}});
    shown = std::make_unique<runtime::ProcessView>(layout, view, a.handlers);
    shown->SetResident([&commands] {
      const SpaceStats stats = (*commands)->Stats();  // the server's count of the stream
      return std::pair<int64_t, int64_t>(int64_t(stats.tuples), int64_t(stats.bytes));
    });
    std::string metrics_url, dashboard_url;
    auto served = runtime::ServeLiveView(view, a.metrics_port, a.dashboard_port, &metrics_url,
                                         &dashboard_url);
    if (!served.ok()) return Fail(served.status());
    servers = std::move(*served);
    if (!metrics_url.empty()) fmt::print(stderr, "acan: metrics at {}\n", metrics_url);
    if (!dashboard_url.empty()) fmt::print(stderr, "acan: dashboard at {}\n", dashboard_url);
  }
  // A job that makes no progress says so: the manager's state is put after every step.
  runtime::StallWatch stall(std::chrono::seconds(30));
  auto* watched = dynamic_cast<nats::NatsSpace*>(space->get());
  if (watched != nullptr) {
    // What the accounts read (tasks, claims, reports, proposals, versions, the manager's
    // progress), and not the tensors between tasks: a step's gradients are a third of the bytes
    // the job puts, and the server would send the supervisor a copy of each (the flagship over 2
    // processes: 5.9 MB a step to the supervisor with them, 3.9 without; off the step's path, so
    // the wall time is the same within noise, but the server's work is less). One
    // subscription a class: libnats delivers each on its own thread, so the accounts do not rely
    // on the order across classes (a claim seen after its task's report is ignored).
    for (const char* what : {".task.>", ".claim.>", ".done.>", ".u.>", ".p.>", ".m.state"}) {
      Status s = watched->WatchPuts(
          Pattern::Parse(std::string(kJobId) + what).value(),
          [&oracle, &account, &shown, &stall, &layout](const Key& key, const Value& value) {
            oracle.OnPut(key, value);
            account.OnPut(key, value);
            if (shown) shown->OnPut(key, value);
            if (key == layout.ManagerState()) {
              auto p = runtime::Progress::FromJson(value.AsString());
              if (p.ok()) {
                double longest_ns = 0;
                for (const auto& [cls, ns] : p->task_ns) {
                  longest_ns = std::max(longest_ns, ns);
                }
                // A timeout is a few times a task's mean time.
                stall.OnStep(p->next_step, std::chrono::nanoseconds(int64_t(4 * longest_ns)));
              }
            }
          });
      if (!s.ok()) return Fail(s);
    }
  }
  // One copy of the training rows for every child: loaded here once, into a row cache the
  // children map (nn/row_cache.h). A restarted handler then has its rows in the time it takes to
  // check their hash, and a killed one is reaped without freeing them.
  RowCacheDir rows;
  if (Status s = rows.Fill(job); !s.ok()) return Fail(s);
  const std::string exe = SelfExe();
  const std::string handlers = std::to_string(a.handlers);
  int64_t interval = 0;  // the chaos's interval now (the handlers' speeds are the interval's)
  auto command_of = [&](const Child& c) {
    if (c.role == "manager") {
      std::vector<std::string> args = {
          exe,        "manager", a.config, "--space", as_role("manager"),
          "--job-id", kJobId,    "--name", c.name,    "--handlers",
          handlers,   "--out",   a.out};
      if (a.quiet) args.push_back("--quiet");  // else the active one prints the progress
      if (a.metrics_port >= 0) args.insert(args.end(), {"--metrics-port", "0"});
      if (!rows.path().empty()) args.insert(args.end(), {"--data-cache", rows.path()});
      return args;
    }
    std::vector<std::string> args = {exe,      "handler", "--space", as_role("handler"),
                                     "--job",  kJobId,    "--id",    std::to_string(c.id),
                                     "--quiet"};
    if (a.metrics_port >= 0) args.insert(args.end(), {"--metrics-port", "0"});
    if (!rows.path().empty()) args.insert(args.end(), {"--data-cache", rows.path()});
    if (!a.chaos.speeds.empty()) {
      args.insert(args.end(), {"--slowdown", fmt::format("{}", SpeedOf(a.chaos, c.id, interval))});
    }
    return args;
  };
  std::vector<Child> children;
  children.push_back({"manager", "m0"});
  children.push_back({"manager", "m1"});
  for (int h = 0; h < a.handlers; ++h) children.push_back({"handler", fmt::format("h{}", h), h});
  // Permission refusals in a secure deployment are the server's to see: the supervisor of a
  // private server reads its log and records each in the job's audit log.
  std::unique_ptr<runtime::AuditLog> refusals_audit;
  std::jthread refusals;
  if (auto* ns = dynamic_cast<nats::NatsSpace*>(space->get()); secure && ns && ns->server()) {
    const std::string dir = SecureDirOf(uri);
    auto signer = runtime::AuditSigner::Load((fs::path(dir) / "manager-key.pem").string(),
                                             (fs::path(dir) / "manager.pem").string());
    if (!signer.ok()) return Fail(signer.status());
    refusals_audit =
        std::make_unique<runtime::AuditLog>(commands->get(), &layout, "supervisor", *signer);
    const std::string log = ns->server()->store_dir() + "/nats-server.log";
    refusals = std::jthread([log, audit = refusals_audit.get()](std::stop_token stop) {
      std::ifstream in;
      std::string line;
      while (!stop.stop_requested()) {
        if (!in.is_open()) in.open(log);
        while (in.is_open() && std::getline(in, line)) {
          if (line.find("Violation") == std::string::npos) continue;
          // "[pid] date time [ERR] addr - cid:N - "client" - Publish Violation - User "handler",
          // ..."
          const size_t what = line.find(" - ", line.find("[ERR]"));
          audit->Append("permission_refused",
                        {{"server_log", what == std::string::npos ? line : line.substr(what + 3)}});
        }
        in.clear();  // at the end for now: wait for more
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  const auto start = std::chrono::steady_clock::now();
  for (Child& c : children) c.pid = Spawn(command_of(c));
  // Once every child runs (tests/e2e/membership.sh waits for this line to join the job).
  if (!a.quiet) {
    fmt::print(
        "acan: {} on {}: 2 manager processes (one active, one standby), {} handler "
        "processes\n",
        a.config, child_uri, a.handlers);
    std::fflush(stdout);
  }

  bool stopping = false;
  int exit_code = 0;
  auto running = [&] {
    int n = 0;
    for (const Child& c : children) n += c.pid > 0;
    return n;
  };
  auto managers_done = [&] { return children[0].done && children[1].done; };
  auto stop_all = [&] {
    for (Child& c : children) {
      if (c.pid > 0) kill(c.pid, SIGTERM);
    }
  };
  std::optional<std::chrono::steady_clock::time_point> finished_at;
  // The chaos: the kills of the current interval, by target, not yet made.
  std::vector<std::optional<double>> kill_at;
  int handler_kills = 0, manager_kills = 0;
  auto kill_child = [&](Child& c) {
    if (c.pid <= 0) return false;
    spdlog::info("chaos: SIGKILL {} {} (pid {})", c.role, c.name, c.pid);
    kill(c.pid, SIGKILL);
    c.kills++;
    c.killed = true;
    return true;
  };
  auto chaos_turn = [&] {
    if (a.chaos.interval_s <= 0 || stopping || finished_at) return;
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto k = static_cast<int64_t>(t / a.chaos.interval_s);
    if (k != interval || kill_at.empty()) {
      // A new interval's speeds (the first one's are on the handlers' command lines).
      if (k != interval && !a.chaos.speeds.empty()) {
        for (int h = 0; h < a.handlers; ++h) {
          const pid_t pid = children[2 + h].pid;
          union sigval value = {};
          value.sival_int = static_cast<int>(std::lround(SpeedOf(a.chaos, h, k) * 1000));
          if (pid > 0) (void)sigqueue(pid, SIGRTMIN, value);
        }
        if (shown) {
          std::vector<double> speeds;
          for (int h = 0; h < a.handlers; ++h) speeds.push_back(SpeedOf(a.chaos, h, k));
          shown->SetSpeeds(std::move(speeds));
        }
      }
      interval = k;
      kill_at.assign(a.handlers + 1, std::nullopt);
      for (int target = 0; target <= a.handlers; ++target) {
        if (target == a.handlers && !a.chaos.manager) continue;
        kill_at[target] = KillMoment(a.chaos, target, k);
      }
    }
    const double in_interval = t - double(k) * a.chaos.interval_s;
    for (int target = 0; target <= a.handlers; ++target) {
      if (!kill_at[target] || *kill_at[target] > in_interval) continue;
      kill_at[target].reset();
      if (target < a.handlers) {
        if (kill_child(children[2 + target])) {
          account.OnHandlerKilled(target);
          handler_kills++;
          if (shown) shown->SetCrashes(handler_kills, manager_kills);
        }
        continue;
      }
      // The active manager: the one the lease names now (spared once the job is finished: it
      // writes the artefacts next, and no one else would).
      if (account.job_finished()) continue;
      auto lease = (*commands)->ReadCell(layout.Lease());
      if (!lease.ok() || lease->revision == 0) continue;
      auto m = runtime::DecodeLeaseMessage(lease->value);
      if (!m.ok()) continue;
      for (int i = 0; i < 2; ++i) {
        if (children[i].name == m->owner && kill_child(children[i])) {
          account.OnManagerKilled();
          manager_kills++;
          if (shown) shown->SetCrashes(handler_kills, manager_kills);
        }
      }
    }
  };
  while (running() > 0) {
    chaos_turn();
    if (!stopping && !finished_at && !account.job_finished()) {
      if (const std::optional<double> stalled = stall.Due()) {
        const SpaceStats in_space = (*commands)->Stats();
        std::string alive;
        for (const Child& c : children) {
          alive += fmt::format("{}{} {}", alive.empty() ? "" : ", ", c.name,
                               c.pid > 0 ? "running" : "down");
        }
        fmt::print(stderr,
                   "acan: the job is stalled: no step completed for {:.1f} s (step {} next); the "
                   "space holds {} tuples, {} bytes; processes: {}\n",
                   *stalled, stall.next_step(), in_space.tuples, in_space.bytes, alive);
      }
    }
    if (!stopping && signals.signal() != 0) {
      fmt::print(stderr, "acan: stopping (signal {}): every process leaves cleanly\n",
                 signals.signal());
      stopping = true;
      exit_code = 130;
      stop_all();
    }
    // Handlers leave on their own once the job is finished; ones that do not are told to.
    if (finished_at && !stopping && std::chrono::steady_clock::now() - *finished_at > 30s) {
      stopping = true;
      stop_all();
    }
    int wstatus = 0;
    pid_t pid = waitpid(-1, &wstatus, WNOHANG);
    if (pid <= 0) {
      std::this_thread::sleep_for(2ms);  // a death is announced this soon after it
      continue;
    }
    auto it = std::find_if(children.begin(), children.end(),
                           [pid](const Child& c) { return c.pid == pid; });
    if (it == children.end()) continue;
    Child& c = *it;
    c.pid = -1;
    const bool by_chaos = std::exchange(c.killed, false);
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
      c.done = true;
      if (c.role == "manager" && managers_done() && !finished_at) {
        finished_at = std::chrono::steady_clock::now();
      }
      continue;
    }
    if (stopping || finished_at) continue;
    if (WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 2 || WEXITSTATUS(wstatus) == 127)) {
      // Bad input or a missing executable: starting it again would fail the same way.
      fmt::print(stderr, "acan: {} {} failed ({}); stopping the run\n", c.role, c.name,
                 Describe(wstatus));
      stopping = true;
      exit_code = WEXITSTATUS(wstatus) == 2 ? 2 : 1;
      stop_all();
      continue;
    }
    if (c.role == "handler") {
      // Every incarnation it announced is dead (the next starts below): no read of which.
      (void)runtime::AnnounceDeath(commands->get(), layout, c.id,
                                   std::numeric_limits<int64_t>::max());
    } else {
      // A dead manager's lease is free at once: the standby, loaded and waiting, takes over at
      // its next look rather than when the lease lapses.
      (void)runtime::Lease::FreeIfHeldBy(commands->get(), layout.Lease(), c.name);
    }
    if (++c.restarts - c.kills > kMaxRestartsPerChild) {
      fmt::print(stderr, "acan: {} {} died {} times; stopping the run\n", c.role, c.name,
                 c.restarts);
      stopping = true;
      exit_code = 1;
      stop_all();
      continue;
    }
    if (!a.quiet && !by_chaos) {
      fmt::print(stderr, "acan: {} {} (pid {}) died ({}); started again\n", c.role, c.name, pid,
                 Describe(wstatus));
    }
    c.pid = Spawn(command_of(c));
    spdlog::info("{} {} started again (pid {}, restart {})", c.role, c.name, c.pid, c.restarts);
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (shown) shown->Finish();
  if (exit_code != 0) return exit_code;
  if (!managers_done())
    return Fail(Status::Internal("the managers ended without finishing the job"));

  // The finishing manager wrote summary.json; the supervisor adds what only it knows.
  const fs::path summary_path = fs::path(a.out) / "summary.json";
  std::ifstream in(summary_path);
  auto summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!summary.is_object()) {
    return Fail(
        Status::DataLoss(fmt::format("'{}' is missing or not JSON", summary_path.string())));
  }
  nlohmann::json procs;
  procs["handlers"] = a.handlers;
  procs["managers"] = 2;
  int handler_restarts = 0, manager_restarts = 0;
  for (const Child& c : children) {
    procs["restarts"][c.name] = c.restarts;
    (c.role == "handler" ? handler_restarts : manager_restarts) += c.restarts;
  }
  procs["handler_restarts"] = handler_restarts;
  procs["manager_restarts"] = manager_restarts;
  procs["space"] = child_uri;
  summary["processes"] = procs;
  summary["wall_s"] = wall_s;
  // The tasks' times by class, read from the reports at the server: a fault-free run's are the
  // baseline the experiments judge a run under kills by.
  summary["recovery"] = runtime::RecoveryJson(account.recovery());
  if (a.chaos.interval_s > 0) {
    summary["crashes"] = {{"handlers", handler_kills},
                          {"manager", manager_kills},
                          {"by", "SIGKILL"},
                          {"interval_s", a.chaos.interval_s},
                          {"probability", a.chaos.probability},
                          {"seed", a.chaos.seed},
                          {"speeds", a.chaos.speeds},
                          {"lost_tasks", account.lost_tasks()},
                          {"lost_not_redone", account.lost_not_redone()}};
    summary["recovery"]["lost"] = account.lost_trace();
    const LatencyHistogram lag = account.watch_lag();
    summary["recovery"]["watch_lag_ms"] = {{"p50_at_most", lag.QuantileNs(0.5) / 1e6},
                                           {"p99_at_most", lag.QuantileNs(0.99) / 1e6}};
    summary["compute"] = {{"extra_compute_ratio", account.extra_compute_ratio()},
                          {"measured",
                           "kernel time of every report and of killed handlers' "
                           "tasks in hand, over the first report of each task"}};
  }
  // What the role processes moved through the server: each puts its account as it exits (one
  // killed by a signal cannot, so this counts the processes that ended on their own).
  int64_t bytes_put = 0, bytes_returned = 0, calls = 0, reports = 0;
  for (const Tuple& t : (*commands)->ReadAll(layout.UsagePattern()).value_or({})) {
    auto v = t.value.As<int64_t>();
    if (v.size() != 3) continue;
    bytes_put += v[0];
    bytes_returned += v[1];
    calls += v[2];
    ++reports;
  }
  (void)(*commands)->Erase(layout.UsagePattern());
  const double steps = std::max<double>(1, summary.value("steps", 1.0));
  summary["traffic"] = {{"processes_reporting", reports},
                        {"value_bytes_put", bytes_put},
                        {"value_bytes_returned", bytes_returned},
                        {"value_bytes_per_step", double(bytes_put + bytes_returned) / steps},
                        {"space_calls", calls},
                        {"space_calls_per_step", double(calls) / steps}};
  auto stats = (*space)->Stats();
  summary["space_at_end"] = {{"tuples", stats.tuples}, {"bytes", stats.bytes}};
  if (watched != nullptr) {
    // Shards do not depend on the task size or the rows: any plan of the job names them.
    Status verdict = oracle.CheckJob(job, -1, 0, summary.value("steps", int64_t{0}));
    const uint64_t dropped = watched->watch_dropped(), chunked = watched->watch_chunked();
    if (verdict.ok() && (dropped > 0 || chunked > 0)) {
      verdict = Status::Unavailable(
          fmt::format("the account is incomplete: {} puts dropped, {} chunked values unseen",
                      dropped, chunked));
    }
    summary["oracle"] = {{"verdict", verdict.ok() ? "ok" : verdict.ToString()},
                         {"versions_written", oracle.versions_written()},
                         {"version_copies", oracle.version_copies()},
                         {"proposals_seen", oracle.proposals_seen()},
                         {"tasks_seen", oracle.tasks_seen()}};
  }
  if (Status s = WriteFileAtomically(summary_path.string(), summary.dump(2) + "\n"); !s.ok()) {
    return Fail(s);
  }
  (void)runtime::WriteReportOrWarn(a.out);
  if (!a.quiet) {
    fmt::print(
        "{} steps in {:.2f} s over {} handler processes; {} handler and {} manager "
        "restarts; tasks retransmitted {}\n",
        summary.value("steps", 0), wall_s, a.handlers, handler_restarts, manager_restarts,
        summary["tasks"].value("retransmitted", 0));
    if (summary.contains("test_accuracy")) {
      fmt::print("test accuracy {:.4f}, test loss {:.4f}\n", summary["test_accuracy"].get<double>(),
                 summary["test_loss"].get<double>());
    }
  }
  return 0;
}

}  // namespace acan::cli
