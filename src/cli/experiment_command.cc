// `acan experiment NAME`: the command line of the design note's experiments, which live in
// src/experiments/ (experiments/experiment.h). The experiments train through this program: the
// Harness given them shows each run as `acan train` does and supervises runs of processes.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/roles.h"
#include "cli/run_support.h"
#include "experiments/experiment.h"
#include "runtime/run/process.h"

namespace acan::cli {

namespace {

struct ExperimentArgs {
  std::string name;
  std::string out;
  bool quick = false;
  std::string space;  // robustness across processes: the space (nats://... or nats:local)
  int processes = 0;  // ... and its handler processes; 0: the in-process experiment
};

experiments::Harness CliHarness() {
  experiments::Harness h;
  h.train = &TrainAndReport;
  h.run_processes = [](const JobConfig& job, const experiments::ProcessRun& run) {
    ProcessRunArgs pa;
    pa.config = run.config;
    pa.space = run.space;
    pa.out = run.out;
    pa.handlers = run.handlers;
    pa.quiet = run.quiet;
    pa.chaos.interval_s = run.kill_interval_s;
    pa.chaos.probability = run.kill_probability;
    pa.chaos.manager = run.kill_manager;
    pa.chaos.seed = run.seed;
    pa.chaos.speeds = run.speeds;
    return RunProcesses(job, pa);
  };
  return h;
}

int RunExperiment(const ExperimentArgs& args) {
  runtime::TuneProcess();
  if (args.name != "robustness" && (args.processes > 0 || !args.space.empty())) {
    return Fail(Status::InvalidArgument(fmt::format(
        "experiment {}: --processes and --space apply to the robustness experiment only",
        args.name)));
  }
  if (!args.space.empty() && args.processes == 0) {
    return Fail(Status::InvalidArgument(
        "experiment robustness: --space is the space of --processes; give --processes too"));
  }
  const experiments::Experiment* experiment = experiments::FindExperiment(args.name);
  if (experiment == nullptr) {  // CLI11 has checked the name against the same list
    return Fail(Status::InvalidArgument(fmt::format("no experiment '{}'", args.name)));
  }
  experiments::ExperimentOptions options;
  options.out = args.out.empty() ? "out/" + args.name : args.out;
  options.quick = args.quick;
  options.space = args.space;
  options.processes = args.processes;
  if (Status s = CheckOutputDir(options.out); !s.ok()) return Fail(s);
  Result<int> code = experiment->run(options, CliHarness());
  return code.ok() ? *code : Fail(code.status());
}

}  // namespace

void AddExperimentCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ExperimentArgs>();
  std::vector<std::string> names;
  std::string listed;  // "feasibility | adaptivity | robustness"
  for (const experiments::Experiment& e : experiments::Experiments()) {
    listed += (names.empty() ? "" : " | ") + std::string(e.name);
    names.emplace_back(e.name);
  }
  auto* cmd = app.add_subcommand("experiment", "Run one of the design note's experiments");
  cmd->add_option("name", args->name, listed)->required()->check(CLI::IsMember(names));
  cmd->add_option("--out", args->out, "Artefacts directory (default: out/<name>)");
  cmd->add_flag("--quick", args->quick,
                "A shorter run: fewer speed changes (adaptivity), the harsh regime alone and "
                "fewer samples (robustness; the full run adds the note's regime, a crash round "
                "every 5 s). Measured here: adaptivity 43-53 s, 84 s with a core loaded "
                "(2026-12-07), robustness 7-10 s, --processes 3 30-37 s (2026-12-06); "
                "feasibility, under a second, runs as it is");
  cmd->add_option("--processes", args->processes,
                  "robustness with real faults: this many handler processes and the manager, "
                  "killed with SIGKILL and started again (over --space)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--space", args->space,
                  "The space of --processes: nats://host:port or nats:local (the default)");
  cmd->callback([args, exit_code] { *exit_code = RunExperiment(*args); });
}

}  // namespace acan::cli
