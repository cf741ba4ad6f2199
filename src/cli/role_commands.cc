// `acan manager` and `acan handler`: one role of a job per process, over a space other processes
// reach (nats://...). The manager is active or a standby by the job's lease; a handler joins a
// running job with nothing but the URI and the job id. SIGTERM or SIGINT stops either cleanly: a
// handler returns the tasks it holds (nothing waits for a timeout), a manager lets its lease lapse;
// one whose space does not answer cannot, and leaves anyway, kRoleLeaveWithin after the signal,
// with exit code 1 and a line that says so (signal_stop.h).
#include <fmt/format.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "acan/model.h"
#include "acan/worker.h"
#include "cli/commands.h"
#include "cli/roles.h"
#include "cli/run_support.h"
#include "common/byte_size.h"
#include "runtime/core/budget.h"
#include "runtime/core/summary.h"
#include "runtime/run/artefacts.h"

namespace acan::cli {

namespace fs = std::filesystem;

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  // Named for this process: a standby that took over may write the same file at the same time.
  const std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    out << text;
    if (!out.flush()) return Status::Unavailable(fmt::format("cannot write '{}'", tmp));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    return Status::Unavailable(
        fmt::format("cannot rename '{}' to '{}': {}", tmp, path, ec.message()));
  return Status::Ok();
}

namespace {

struct ManagerArgs {
  std::string config;
  std::string space;
  std::string job_id = "job";
  std::string name;
  std::optional<int> handlers;
  int64_t lease_ms = 1000;
  std::string init;
  std::string out;
  std::string inputs = "local";
  bool quiet = false;
  int metrics_port = -1;
  std::string data_cache;
  std::string memory;  // --memory, a size ("": the job's)
};

// Blocks of a megabyte and more come from the kernel and go back to it when freed. glibc's
// default raises that threshold to the largest block freed so far, and then keeps up to twice as
// much freed memory in its arenas (a handler of the 16 MiB wide-layer job peaked at 27-29 MiB of
// anonymous memory before): fixed, a role process's peak follows what it holds. With a memory
// budget it keeps what runtime::RetainedBytes allows (a quarter of it, counted in the handler's
// workspace); with none, the most that allows (64 MiB). Keeping less made the space client's
// megabyte-sized messages fault fresh pages in for each: 2x the time of a step of the 64 MiB
// layer at 16 MiB budgets, and of a manager with no budget on it.
void FollowWhatItHolds(int64_t budget) {
  const int64_t keep = runtime::RetainedBytes(budget > 0 ? budget : INT64_MAX);
  mallopt(M_MMAP_THRESHOLD, int(2 * keep));
  mallopt(M_TRIM_THRESHOLD, int(keep));
}

// Every thread of a role process allocates from one arena, set before any thread starts (a
// handler learns its budget from the job once connected). glibc keeps what the trim threshold
// allows in each arena, and the space client's reader thread, through which every message comes
// in, kept a second arena of up to a megabyte beside the main thread's: VmHWM of the 2048 x 2048
// job at 4 MiB budgets, handlers 19.6-20.2 MB and managers 20.3-20.7 MB; in one arena 18.8-19.1
// and 19.8 MB (tests/e2e/memory_budget.sh, 2026-12-08). The role threads seldom allocate at once.
void OneArena() { mallopt(M_ARENA_MAX, 1); }

// summary.json of a job run by manager processes: what the active manager knows at the end.
Status WriteManagerArtefacts(const ManagerArgs& a, const JobConfig& job, const ManagerReport& r,
                             double wall_s) {
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) return Status::Unavailable(fmt::format("cannot create '{}': {}", a.out, ec.message()));
  // The manager wrote model.safetensors (ManagerOptions::model_path) before it reported.
  const TrainProgress& p = r.progress;
  runtime::RunSummary s;
  s.config = a.config;
  s.space_uri = a.space;
  s.job_id = a.job_id;
  s.manager = a.name;
  s.window = job.runtime.window;
  s.strategy = std::string(ToString(job.partition.strategy));
  s.steps = p.step;
  s.epochs = p.epochs;
  s.samples = p.samples;
  s.final_epoch_loss = p.epoch_loss;
  s.tasks.completed = p.tasks_completed;
  s.tasks.retransmitted = p.tasks_retransmitted;
  s.tasks.retransmit_reasons = p.retransmit_reasons;
  s.tasks.duplicates_discarded = p.duplicates_discarded;
  s.updates.versions_applied = p.versions_applied;
  s.updates.gaps = p.version_gaps;
  s.updates.repeats = p.version_repeats;
  s.manager_takeovers = p.manager_takeovers;
  s.manager_wall_s = wall_s;
  s.train_s = r.active_s;
  if (r.grain.steps > 0) {
    s.grain = runtime::SummaryGrain{r.grain.steps, r.grain.step_ms, r.grain.move_ms};
  }
  if (!r.tile_bands.empty()) {
    s.tile_bands.emplace();
    for (const TileBand& b : r.tile_bands) s.tile_bands->push_back({b.edge, b.share, b.budget});
  }
  s.weights_sha256 = r.weights_sha256;
  // A manager with a memory budget evaluated the model a row block at a time; else it is here.
  auto eval = r.evaluation ? Result<EvalResult>(*r.evaluation) : Evaluate(*r.model, job);
  if (eval.ok()) {
    s.test_split = eval->split;
    s.test_loss = runtime::Stated(eval->loss);
    if (eval->classification) s.test_accuracy = runtime::Stated(eval->accuracy);
  }
  ACAN_RETURN_IF_ERROR(
      runtime::WriteAuditLines((fs::path(a.out) / "audit.jsonl").string(), r.audit));
  return WriteFileAtomically((fs::path(a.out) / "summary.json").string(), runtime::SummaryText(s));
}

int RunManagerCommand(const ManagerArgs& a) {
  OneArena();
  const std::string name = a.name.empty() ? fmt::format("manager-{}", getpid()) : a.name;
  SignalStop signals({kRoleLeaveWithin, fmt::format("manager {}", name), a.space});
  auto job = ParseJobFile(a.config);
  if (!job.ok()) return Fail(job.status());
  if (!a.out.empty()) {
    if (Status s = CheckOutputDir(a.out); !s.ok()) return Fail(s);
  }
  ManagerOptions o;
  o.name = name;
  o.job_id = a.job_id;
  o.handlers = a.handlers.value_or(0);
  o.lease = std::chrono::milliseconds(a.lease_ms);
  o.init_path = a.init;
  o.handlers_read_data = a.inputs == "local";
  o.data_cache = a.data_cache;
  o.metrics_port = a.metrics_port;
  o.on_serving = [](const std::string& url) {
    std::fprintf(stderr, "acan: metrics at %s\n", url.c_str());
  };
  // In a secure deployment the manager signs the audit log with its certificate's key.
  if (const std::string dir = SecureDirOf(a.space); !dir.empty()) {
    o.audit_key_file = (fs::path(dir) / "manager-key.pem").string();
    o.audit_cert_file = (fs::path(dir) / "manager.pem").string();
  }
  if (!a.out.empty()) {
    std::error_code ec;
    fs::create_directories(a.out, ec);  // CheckOutputDir said it can be
    o.metrics_csv = (fs::path(a.out) / "metrics.csv").string();
    o.model_path = (fs::path(a.out) / "model.safetensors").string();
  }
  if (!a.memory.empty()) {
    Result<int64_t> memory = ParseByteSize(a.memory);
    if (!memory.ok()) {
      return Fail(Status::InvalidArgument("--memory: " + std::string(memory.status().message())));
    }
    o.memory = *memory;
  }
  FollowWhatItHolds(o.memory > 0 ? o.memory : job->runtime.manager_memory);
  o.stop = signals.token();
  RunPrinter printer(a.quiet);
  o.on_progress = printer.on_progress;
  if (!a.quiet) {
    o.on_active = [&o, &a] {
      fmt::print("acan: manager {} holds the lease of job '{}'\n", o.name, a.job_id);
      std::fflush(stdout);
    };
  }
  const auto start = std::chrono::steady_clock::now();
  auto r = RunManager(a.space, *job, o);
  if (!r.ok()) return Fail(r.status());
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!r->job_finished) {
    if (!a.quiet) fmt::print(stderr, "acan: manager {} stopped before the job ended\n", o.name);
    return 3;
  }
  if (r->applied_last_step && !a.out.empty()) {
    ManagerArgs named = a;
    named.name = o.name;
    if (Status s = WriteManagerArtefacts(named, *job, *r, wall_s); !s.ok()) return Fail(s);
    (void)runtime::WriteReportOrWarn(a.out);
    if (!a.quiet) {
      const bool reported = fs::exists(fs::path(a.out) / "report.html");
      fmt::print(
          "artefacts: {0}/model.safetensors, {0}/summary.json, {0}/metrics.csv, "
          "{0}/audit.jsonl{1}\n",
          a.out, reported ? fmt::format(", {}/report.html", a.out) : "");
    }
  }
  return 0;
}

struct HandlerArgs {
  std::string space;
  std::string job_id;
  std::optional<int> id;
  std::vector<std::string> ops;
  int pouch = 1;
  double slowdown = 1.0;
  bool quiet = false;
  int metrics_port = -1;
  std::string data_cache;
  std::string memory;
};

// The handler's slow-down, set by SIGRTMIN with a value (sigqueue: the slow-down times 1000):
// how a supervisor's chaos changes a running handler's speed (a lock-free atomic: signal-safe).
std::atomic<double> g_speed{1.0};
static_assert(std::atomic<double>::is_always_lock_free);

void OnSpeedSignal(int, siginfo_t* info, void*) {
  if (info->si_code == SI_QUEUE && info->si_value.sival_int >= 1000) {
    g_speed.store(info->si_value.sival_int / 1000.0, std::memory_order_relaxed);
  }
}

int RunHandlerCommand(const HandlerArgs& a) {
  OneArena();
  const int id = a.id.value_or(static_cast<int>(getpid()));
  SignalStop signals({kRoleLeaveWithin, fmt::format("handler {}", id), a.space});
  g_speed.store(a.slowdown);
  struct sigaction speed_signal = {};
  speed_signal.sa_sigaction = OnSpeedSignal;
  speed_signal.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&speed_signal.sa_mask);
  sigaction(SIGRTMIN, &speed_signal, nullptr);
  sigset_t speed_only;  // a supervisor starts its handlers with it blocked
  sigemptyset(&speed_only);
  sigaddset(&speed_only, SIGRTMIN);
  pthread_sigmask(SIG_UNBLOCK, &speed_only, nullptr);
  HandlerOptions o;
  o.id = id;
  o.task_types = a.ops;
  o.pouch = a.pouch;
  o.slowdown = a.slowdown;
  o.speed = &g_speed;
  o.data_cache = a.data_cache;
  o.stop = signals.token();
  o.metrics_port = a.metrics_port;
  if (!a.memory.empty()) {
    Result<int64_t> memory = ParseByteSize(a.memory);
    if (!memory.ok()) {
      return Fail(Status::InvalidArgument("--memory: " + std::string(memory.status().message())));
    }
    o.memory = *memory;
  }
  FollowWhatItHolds(o.memory);
  o.on_budget = [](int64_t memory) { FollowWhatItHolds(memory); };
  o.on_serving = [](const std::string& url) {
    std::fprintf(stderr, "acan: metrics at %s\n", url.c_str());
  };
  if (!a.quiet) {
    o.on_joined = [&a, &o](int64_t incarnation) {
      fmt::print(stderr, "acan: handler {} joined job '{}' (incarnation {}); SIGTERM leaves\n",
                 o.id, a.job_id, incarnation);
    };
  }
  auto r = RunHandler(a.space, a.job_id, o);
  if (!r.ok()) return Fail(r.status());
  if (!a.quiet) {
    fmt::print(
        "handler {} (incarnation {}): {} tasks, {:.2f} s busy, first task after {:.3f} s{}{}\n",
        r->id, r->incarnation, r->tasks, r->busy_s, r->first_task_s,
        r->memory > 0 ? fmt::format("; held at most {} bytes for a task of its budget of {}, "
                                    "refused {}",
                                    r->peak_held_bytes, r->memory, r->refused)
                      : "",
        r->job_finished ? "; the job is finished" : "; left the job");
  }
  return 0;
}

}  // namespace

void AddManagerCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ManagerArgs>();
  auto* cmd = app.add_subcommand(
      "manager", "Run a manager of a job over a shared space: active, or a standby by the lease");
  cmd->add_option("config", a->config, "Job file (TOML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--space", a->space, "Space URI, e.g. nats://127.0.0.1:4222")->required();
  cmd->add_option("--job-id", a->job_id, "The job's id in the space")->capture_default_str();
  cmd->add_option("--name", a->name, "This manager's name in the lease (default: manager-PID)");
  cmd->add_option("--handlers", a->handlers, "Handlers expected (default: the job's)")
      ->check(kAtLeastOne);
  cmd->add_option("--lease-ms", a->lease_ms, "Lease: a standby takes over this long after")
      ->capture_default_str()
      ->check(kAtLeastOne);
  cmd->add_option("--init", a->init, "Initial model (safetensors)")->check(CLI::ExistingFile);
  cmd->add_option("--memory", a->memory,
                  "What this manager may hold of the job's data, e.g. 16MiB: it then never holds "
                  "the whole model (default: the job's [runtime] manager_memory, else none)");
  cmd->add_option("--out", a->out,
                  "Directory for model.safetensors and summary.json, written by the manager that "
                  "finishes the job");
  cmd->add_option("--inputs", a->inputs,
                  "Where a new job's handlers get each step's rows: local (from their own copy "
                  "of the data, checked by its SHA-256) or space (put there by the manager)")
      ->capture_default_str()
      ->check(CLI::IsMember({"local", "space"}));
  cmd->add_option("--data-cache", a->data_cache,
                  "Directory where the processes of this host share one copy of the training "
                  "rows (a file per data set, mapped read-only, checked by its SHA-256; written "
                  "by the first to load them)");
  cmd->add_flag("--quiet", a->quiet, "No progress lines");
  cmd->add_option("--metrics-port", a->metrics_port,
                  "Serve Prometheus metrics at http://127.0.0.1:PORT/metrics (0: a free port, "
                  "printed)")
      ->check(CLI::Range(0, 65535));
  cmd->callback([a, exit_code] { *exit_code = RunManagerCommand(*a); });
}

void AddHandlerCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<HandlerArgs>();
  auto* cmd = app.add_subcommand(
      "handler", "Run a handler of a job over a shared space until the job ends or SIGTERM");
  cmd->add_option("--space", a->space, "Space URI, e.g. nats://127.0.0.1:4222")->required();
  cmd->add_option("--job", a->job_id, "The job's id in the space")->required();
  cmd->add_option("--id", a->id,
                  "Handler id, unique in the job; a restarted handler keeps it (default: the PID)");
  cmd->add_option("--ops", a->ops,
                  "Task types it runs: forward,activation,loss,backward,update (default: all)")
      ->delimiter(',');
  cmd->add_option("--pouch", a->pouch, "Tasks taken at once")
      ->capture_default_str()
      ->check(kAtLeastOne);
  cmd->add_option("--slowdown", a->slowdown,
                  "A slow processor: each task takes this many times its kernel's time (a "
                  "running handler takes a new one from SIGRTMIN queued with the slow-down "
                  "times 1000, as the robustness experiment's chaos does)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1000.0));
  cmd->add_option("--data-cache", a->data_cache,
                  "Directory where the processes of this host share one copy of the training "
                  "rows (a file per data set, mapped read-only, checked by its SHA-256; written "
                  "by the first to load them)");
  cmd->add_flag("--quiet", a->quiet, "No closing line");
  cmd->add_option("--metrics-port", a->metrics_port,
                  "Serve Prometheus metrics at http://127.0.0.1:PORT/metrics (0: a free port, "
                  "printed)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--memory", a->memory,
                  "What it may hold of acan's data (tensors, task inputs and outputs, its copy of "
                  "the data), e.g. 16MiB. Announced as it starts: a tiles job made after that is "
                  "cut to fit the budgets announced (in bands when they differ), and it takes "
                  "only the tasks its budget holds; a task over it is still refused with why and "
                  "sent to another handler (default: the job's [runtime] handler_memory for this "
                  "id, else none)");
  cmd->callback([a, exit_code] { *exit_code = RunHandlerCommand(*a); });
}

}  // namespace acan::cli
