// What the multi-process commands share: SIGTERM/SIGINT as a stop token (signal_stop.h), atomic
// file writes, and `acan train --processes`, the supervisor of a run made of processes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"
#include "cli/signal_stop.h"

namespace acan::cli {

// Writes `text` to `path` through a temporary file, so the file is never half written.
Status WriteFileAtomically(const std::string& path, const std::string& text);

// Real faults for a run of processes (the robustness experiment across processes): in every
// interval of `interval_s`, each handler process and the active manager is killed with SIGKILL
// with probability `probability`, at a moment drawn in the interval; the supervisor starts it
// again at once. Kill moments are a function of (seed, process, interval) alone, so a seed
// replays the schedule (the timing of what they hit is the run's).
struct ProcessChaos {
  double interval_s = 0;  // 0: no kills
  double probability = 1.0;
  bool manager = true;  // the active manager too
  uint64_t seed = 11;
  // Handlers' slow-downs (the note's speed factors): in every interval the handlers take a
  // rotation of them drawn from (seed, interval), a running handler by a signal (SIGRTMIN), a
  // restarted one on its command line. Empty: all at full speed.
  std::vector<double> speeds;
};

struct ProcessRunArgs {
  std::string config;  // the job file, as given
  std::string space;   // URI; "nats:local" starts a private server in <out>/nats
  std::string out;
  int handlers = 1;
  bool quiet = false;
  ProcessChaos chaos;
  // The supervisor's /metrics and live dashboard (of the job as it watches it), as `acan train`'s
  // (-1: none); with metrics, every child serves its own /metrics on a free port it prints.
  int metrics_port = -1;
  int dashboard_port = -1;
};

// Runs the job as processes: an active manager, a standby and `handlers` handler processes
// (this executable's `manager` and `handler` commands), restarting any that dies and announcing
// each handler's death in the space at once; the manager that finishes writes the artefacts into
// `out`, and summary.json gains a "processes" section. Returns the exit code.
int RunProcesses(const JobConfig& job, const ProcessRunArgs& args);

}  // namespace acan::cli
