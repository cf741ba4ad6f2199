// `acan train`: a training run in this process through acan::Train, with progress on the terminal
// and the artefacts (model.safetensors, summary.json, metrics.csv, metrics.prom, report.html) in
// --out; with --metrics-port and --dashboard it serves /metrics and a live page of charts while it
// trains.
#include <cstdio>
#include <memory>
#include <optional>

#include "acan/train.h"
#include "cli/commands.h"
#include "cli/roles.h"
#include "cli/run_support.h"

namespace acan::cli {
namespace {

struct TrainArgs {
  std::string config;
  std::string space;
  std::optional<int> handlers;
  std::optional<int> processes;
  std::optional<int64_t> window;
  std::string init;
  std::string out = "out";
  std::optional<uint64_t> seed;
  bool quiet = false;
  bool trace = false;
  bool speculate = false;
  bool no_pin = false;
  int metrics_port = -1;
  int dashboard_port = -1;
  // [chaos] overrides
  std::vector<double> speeds;
  std::optional<double> speed_change_s, crash_interval_s, crash_probability;
  std::optional<double> speed_change_steps, crash_interval_steps;
  std::optional<bool> crash_manager;
};

int RunTrain(const TrainArgs& a) {
  auto job = ParseJobFile(a.config);
  if (!job.ok()) return Fail(job.status());
  if (a.seed) job->train.seed = *a.seed;
  if (a.speculate) job->runtime.speculate = true;
  ChaosConfig& chaos = job->chaos;
  if (!a.speeds.empty()) chaos.speeds = a.speeds;
  if (a.speed_change_s) chaos.speed_change_s = *a.speed_change_s;
  if (a.crash_interval_s) chaos.crash_interval_s = *a.crash_interval_s;
  if (a.crash_probability) chaos.crash_probability = *a.crash_probability;
  if (a.crash_manager) chaos.crash_manager = *a.crash_manager;
  if (a.speed_change_steps) chaos.speed_change_steps = *a.speed_change_steps;
  if (a.crash_interval_steps) chaos.crash_interval_steps = *a.crash_interval_steps;
  if (!a.speeds.empty() || a.speed_change_s || a.crash_interval_s || a.crash_probability ||
      a.crash_manager || a.speed_change_steps || a.crash_interval_steps) {
    chaos.enabled = true;
  }
  if (Status s = ValidateJob(*job); !s.ok()) return Fail(s);
  if (a.processes) {
    if (a.window || a.init.size() || a.trace) {
      return Fail(Status::InvalidArgument(
          "--processes runs the job file's [runtime] over real processes: --window, --init and "
          "--trace do not apply"));
    }
    ProcessRunArgs pa;
    // [chaos] across processes: its crashes are SIGKILLs of the processes (roles.h), its speeds
    // change at each crash roll.
    if (chaos.enabled) {
      if (chaos.speed_change_steps > 0 || chaos.crash_interval_steps > 0 ||
          (chaos.speed_change_s > 0 && chaos.crash_interval_s > 0 &&
           chaos.speed_change_s != chaos.crash_interval_s) ||
          (!chaos.speeds.empty() && chaos.crash_interval_s <= 0 && chaos.speed_change_s <= 0)) {
        return Fail(Status::InvalidArgument(
            "--processes: [chaos] across processes kills and re-speeds the processes every "
            "crash_interval_s seconds: set crash_interval_s (and speed_change_s, if at all, to "
            "the same, or speed_change_s alone for speeds without kills); the *_steps intervals "
            "apply in one process only"));
      }
      const bool kills = chaos.crash_interval_s > 0;
      pa.chaos.interval_s = kills ? chaos.crash_interval_s : chaos.speed_change_s;
      pa.chaos.probability = kills ? chaos.crash_probability : 0;
      pa.chaos.manager = chaos.crash_manager;
      pa.chaos.speeds = chaos.speeds;
      pa.chaos.seed = job->train.seed;  // the kill schedule replays from the job's seed
    }
    pa.config = a.config;
    pa.space = a.space;
    pa.out = a.out;
    pa.handlers = *a.processes;
    pa.quiet = a.quiet;
    pa.metrics_port = a.metrics_port;
    pa.dashboard_port = a.dashboard_port;
    return RunProcesses(*job, pa);
  }
  if (Status s = CheckOutputDir(a.out); !s.ok()) return Fail(s);
  TrainOptions o;
  o.space_uri = a.space;
  o.handlers = a.handlers.value_or(0);
  o.window = a.window.value_or(0);
  o.init_path = a.init;
  o.trace = a.trace;
  o.pin_handlers = !a.no_pin;
  o.metrics_port = a.metrics_port;
  o.dashboard_port = a.dashboard_port;
  RunPrinter printer(a.quiet);
  // Where the run shows itself, even with --quiet: with port 0 this is the only way to know.
  o.on_start = [start = printer.on_start](const TrainPlan& plan) {
    if (start) start(plan);
    if (!plan.metrics_url.empty())
      std::fprintf(stderr, "acan: metrics at %s\n", plan.metrics_url.c_str());
    if (!plan.dashboard_url.empty()) {
      std::fprintf(stderr, "acan: dashboard at %s\n", plan.dashboard_url.c_str());
    }
  };
  o.on_progress = printer.on_progress;
  o.on_epoch = printer.on_epoch;
  auto r = Train(*job, o);
  if (!r.ok()) return Fail(r.status());
  if (Status s = WriteArtefacts(a.out, *r); !s.ok()) return Fail(s);
  if (!a.quiet) PrintOutcome(*r, a.out);
  return 0;
}

}  // namespace

void AddTrainCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand("train", "Train the job described by a TOML file");
  cmd->add_option("config", a->config, "Job file (TOML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--space", a->space, "Space URI (default: the job's [runtime] space, mem:)");
  cmd->add_option("--handlers", a->handlers, "Handler threads (default: the job's)")
      ->check(kAtLeastOne);
  cmd->add_option(
         "--processes", a->processes,
         "Run as processes over --space (nats://... or nats:local): a manager, a standby "
         "and this many handler processes, each restarted when it dies; [chaos] crashes are "
         "SIGKILLs of them, every crash_interval_s, from the job's seed")
      ->check(kAtLeastOne);
  cmd->add_option("--window", a->window, "Update window W; 1 = synchronous (default: the job's)")
      ->check(kAtLeastOne);
  cmd->add_option("--init", a->init, "Initial model (safetensors)")->check(CLI::ExistingFile);
  cmd->add_option("--out", a->out, "Directory for the artefacts")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed (overrides [train] seed)");
  cmd->add_flag("--quiet", a->quiet, "No progress lines and no outcome lines");
  cmd->add_flag("--no-pin", a->no_pin,
                "Do not bind handler h to the h-th CPU (bound when there is a CPU per handler "
                "and no --speeds; unbind when several runs share the machine)");
  cmd->add_flag("--speculate", a->speculate,
                "Copy a task the window waits on for a faster idle handler when a slow one holds "
                "it ([runtime] speculate: time bought with the slow copy's thrown-away work)");
  cmd->add_flag("--trace", a->trace,
                "Also write trace.json: every completed task execution on its handler's lane, "
                "retransmissions and crashes (Chrome Trace Event format, for Perfetto)");
  cmd->add_option("--metrics-port", a->metrics_port,
                  "Serve Prometheus metrics at http://127.0.0.1:PORT/metrics while it trains "
                  "(0: a free port, printed); the last page, the run's final counts, stays in "
                  "OUT/metrics.prom (in-process runs, served or not)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option(
         "--dashboard", a->dashboard_port,
         "Serve a live page of charts at http://127.0.0.1:PORT/ while it trains (0: a free "
         "port, printed; the same port as --metrics-port serves both)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--speeds", a->speeds, "[chaos] slow-down factors, e.g. 1,5,10")->delimiter(',');
  cmd->add_option("--speed-change-s", a->speed_change_s, "[chaos] seconds between speed changes");
  cmd->add_option("--crash-interval-s", a->crash_interval_s, "[chaos] seconds between crash rolls");
  cmd->add_option("--crash-probability", a->crash_probability,
                  "[chaos] crash probability per roll");
  cmd->add_option("--crash-manager", a->crash_manager,
                  "[chaos] the manager crashes too (true|false)");
  cmd->add_option("--speed-change-steps", a->speed_change_steps,
                  "[chaos] steps between speed changes, instead of seconds (the run times its "
                  "first 8 steps, fault-free, and scales by their median)");
  cmd->add_option("--crash-interval-steps", a->crash_interval_steps,
                  "[chaos] steps between crash rolls, instead of seconds");
  cmd->callback([a, exit_code] { *exit_code = RunTrain(*a); });
}

}  // namespace acan::cli
