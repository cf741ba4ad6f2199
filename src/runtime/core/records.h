// The plain records the runtime's parts hand each other: a metrics row, a handler's report, what
// a run shows while it goes, what a manager has in flight, the tasks a crashed handler lost. No
// behaviour beyond filling a row; no Space, no threads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "acan/clock.h"
#include "acan/space.h"
#include "runtime/core/controller.h"
#include "runtime/core/progress.h"

namespace acan::runtime {

// One row of metrics.csv.
struct MetricsRow {
  double t_s = 0;
  double samples_per_s = 0;  // since the previous row
  int64_t step = 0;
  int64_t task_size = 0;
  int64_t pouch = 0;
  double completion_rate = 1;
  double mean_timeout_ms = 0;
  std::map<std::string, double> timeouts_ms;
  std::vector<int64_t> handler_tasks;
  std::vector<int64_t> handler_work;  // work each has done (floats its tasks read and wrote)
  // Of it, the work of the reports the manager took (a copy reported second left out).
  std::vector<int64_t> handler_useful_work;
  std::vector<double> handler_speeds;
  int64_t handler_crashes = 0;
  int64_t manager_crashes = 0;
  int64_t retransmitted = 0;  // tasks sent again, so far
  int64_t space_tuples = -1;  // resident in the space now (-1: not known to this process)
  int64_t space_bytes = -1;
};

// A metrics row's run-wide fields from the progress and the controller now: `t_s` since `start`,
// samples_per_s since the previous row (`last_at`, `last_samples`: that row's, updated).
MetricsRow RunMetrics(const Progress& p, const ControllerSnapshot& c, Clock::time_point start,
                      Clock::time_point* last_at, int64_t* last_samples);

struct HandlerFigures {
  int id = 0;
  int64_t tasks = 0;
  double busy_s = 0;
  double kernel_s = 0;  // of busy_s, the kernels' own time (without a slow-down's wait)
  double io_s = 0;      // tasks' time in hand outside busy_s (claims, reads, writes, reports)
  int64_t work = 0;     // floats its tasks read and wrote: work done, independent of timing
  double lost_s = 0;
  // Waiting for a task with none in hand (HandlerStats::idle_ns); -1: not known (a view of the
  // handler from its reports, as a supervisor has).
  double idle_s = -1;
  double idle_ratio = 0;
  double speed = 1;
  int64_t crashes = 0;
  int64_t missing_inputs = 0;   // tasks not run for a missing input (reported to the manager)
  int64_t bad_tuples = 0;       // undecodable task tuples
  int64_t reused = 0;           // resent tasks whose outputs were in the space already
  int64_t memory_budget = 0;    // bytes it may hold of acan's data (0: no budget)
  int64_t peak_held_bytes = 0;  // the most it held for a task: its inputs, outputs and data
  int64_t refused = 0;          // tasks it would not run: over its budget
};

// What a run shows while it goes (the dashboard, /metrics): taken with each metrics row.
struct LiveSample {
  MetricsRow row;
  Progress progress;
  ControllerSnapshot controller;
  std::vector<HandlerFigures> handlers;  // so far (busy, work, crashes, speed)
  bool handler_times_known = true;       // false: of `handlers`, only tasks and work are known
  SpaceStats space;
  std::map<std::string, LatencyHistogram> task_latency;  // by class
  int64_t stalls = 0;
  bool finished = false;  // the last sample of the run
};

// What a manager has in flight (for a stall report).
struct FlightStatus {
  int64_t next_step = 0;   // the oldest step not yet applied
  int64_t admitted = 0;    // steps [next_step, admitted) are in flight
  int64_t tasks_sent = 0;  // sent and not yet done
  int64_t tasks_held = 0;  // ready, held back until the pouch has room
};

// Who holds a task: nobody (lost), a live claim (slow), a claim whose lease lapsed under a live
// incarnation (its handler stopped: lost), only claims of restarted incarnations (lost), or only
// claims of handlers announced dead (lost).
enum class ClaimState { kNone, kAlive, kLapsed, kStale, kDead };

// A task a handler had begun and not finished when it crashed.
struct AbandonedTask {
  std::string key;  // the task key
  int64_t step = 0;
};

}  // namespace acan::runtime
