// `acan train`: a training run in this process, with progress on the terminal and artefacts
// (model.safetensors, summary.json, metrics.csv) in --out.
#include <optional>

#include "cli/commands.h"
#include "cli/experiments.h"
#include "cli/run_support.h"

namespace acan::cli {
namespace {

struct TrainArgs {
  std::string config;
  std::string space;
  std::optional<int> handlers;
  std::optional<int64_t> window;
  std::string init;
  std::string out = "out";
  std::optional<uint64_t> seed;
  bool quiet = false;
  bool trace = false;
  bool no_pin = false;
  // [chaos] overrides
  std::vector<double> speeds;
  std::optional<double> speed_change_s, crash_interval_s, crash_probability;
  std::optional<double> speed_change_steps, crash_interval_steps;
  std::optional<bool> crash_manager;
};

TrainArgs g_args;
CLI::App* g_cmd = nullptr;

int RunTrain() {
  auto job = ParseJobFile(g_args.config);
  if (!job.ok()) return Fail(job.status());
  if (g_args.seed) job->train.seed = *g_args.seed;
  if (!g_args.speeds.empty()) job->chaos.speeds = g_args.speeds;
  if (g_args.speed_change_s) job->chaos.speed_change_s = *g_args.speed_change_s;
  if (g_args.crash_interval_s) job->chaos.crash_interval_s = *g_args.crash_interval_s;
  if (g_args.crash_probability) job->chaos.crash_probability = *g_args.crash_probability;
  if (g_args.crash_manager) job->chaos.crash_manager = *g_args.crash_manager;
  if (g_args.speed_change_steps) job->chaos.speed_change_steps = *g_args.speed_change_steps;
  if (g_args.crash_interval_steps) job->chaos.crash_interval_steps = *g_args.crash_interval_steps;
  if (!g_args.speeds.empty() || g_args.speed_change_s || g_args.crash_interval_s ||
      g_args.crash_probability || g_args.crash_manager || g_args.speed_change_steps ||
      g_args.crash_interval_steps) {
    job->chaos.enabled = true;
  }
  if (Status s = ValidateJob(*job); !s.ok()) return Fail(s);
  runtime::RunOptions o = OptionsFromJob(*job);
  if (!g_args.space.empty()) o.space_uri = g_args.space;
  if (g_args.handlers) o.handlers = *g_args.handlers;
  if (g_args.window) o.window = *g_args.window;
  // task_size = 0 in the job file: the controller chooses (and may change) it.
  // A chain's task size fixes what a step is, so it is chosen once (Plan::ChainSteps).
  o.adapt_task_size =
      job->partition.task_size == 0 && job->partition.strategy != Strategy::kChain;
  if (g_args.trace) o.trace = std::make_shared<runtime::TraceRecorder>();
  o.pin_handlers = !g_args.no_pin;
  auto outcome = TrainAndReport(*job, o, g_args.init, g_args.out, g_args.quiet);
  return outcome.ok() ? 0 : Fail(outcome.status());
}

}  // namespace

void AddTrainCommands(CLI::App& app) {
  g_cmd = app.add_subcommand("train", "Train the job described by a TOML file");
  g_cmd->add_option("config", g_args.config, "Job file (TOML)")
      ->required()
      ->check(CLI::ExistingFile);
  g_cmd->add_option("--space", g_args.space,
                    "Space URI (default: the job's [runtime] space, mem:)");
  g_cmd->add_option("--handlers", g_args.handlers, "Handler threads (default: the job's)")
      ->check(acan::cli::kAtLeastOne);
  g_cmd
      ->add_option("--window", g_args.window,
                   "Update window W; 1 = synchronous (default: the job's)")
      ->check(acan::cli::kAtLeastOne);
  g_cmd->add_option("--init", g_args.init, "Initial model (safetensors)")->check(CLI::ExistingFile);
  g_cmd->add_option("--out", g_args.out, "Directory for the artefacts")->capture_default_str();
  g_cmd->add_option("--seed", g_args.seed, "Seed (overrides [train] seed)");
  g_cmd->add_flag("--quiet", g_args.quiet, "No progress lines and no outcome lines");
  g_cmd->add_flag("--no-pin", g_args.no_pin,
                  "Do not bind handler h to the h-th CPU (bound when there is a CPU per handler "
                  "and no --speeds; unbind when several runs share the machine)");
  g_cmd->add_flag("--trace", g_args.trace,
                  "Also write trace.json: every completed task execution on its handler's lane, "
                  "retransmissions and crashes (Chrome Trace Event format, for Perfetto)");
  g_cmd->add_option("--speeds", g_args.speeds, "[chaos] slow-down factors, e.g. 1,5,10")
      ->delimiter(',');
  g_cmd->add_option("--speed-change-s", g_args.speed_change_s,
                    "[chaos] seconds between speed changes");
  g_cmd->add_option("--crash-interval-s", g_args.crash_interval_s,
                    "[chaos] seconds between crash rolls");
  g_cmd->add_option("--crash-probability", g_args.crash_probability,
                    "[chaos] crash probability per roll");
  g_cmd->add_option("--crash-manager", g_args.crash_manager,
                    "[chaos] the manager crashes too (true|false)");
  g_cmd->add_option("--speed-change-steps", g_args.speed_change_steps,
                    "[chaos] steps between speed changes, instead of seconds (the run times its "
                    "first 8 steps, fault-free, and scales by their median)");
  g_cmd->add_option("--crash-interval-steps", g_args.crash_interval_steps,
                    "[chaos] steps between crash rolls, instead of seconds");
  AddExperimentCommand(app);
}

int RunParsedTrainCommand() {
  if (g_cmd && g_cmd->parsed()) return RunTrain();
  return RunParsedExperimentCommand();
}

}  // namespace acan::cli
