// summary.json, the record a finished run leaves in its --out folder: one typed struct for every
// writer (an in-process run's artefacts, a manager process, the supervisor of processes adding
// what only it knows) and every reader (report.html, the experiments, the public API's
// summary_json). The JSON's field names and meanings are the contract of `acan train` that
// scripts read (docs/operations.md lists them); "version" says which layout a file has.
//
// Three kinds of summary share the struct: an in-process run's (`acan train`, acan::Train), a
// manager process's (`acan manager --out`), and that of `acan train --processes` (the finishing
// manager's, completed by the supervisor). Fields every kind has are plain members; the others are
// std::optional, left out of the file when unset. A Nullable figure may also be written as null
// (known to be unknown: no test split, a regression's accuracy).
//
// Reading is strict about what it reads and tolerant of what it does not know: a field of the
// wrong type, or a missing one that every summary has, is InvalidArgument naming the file and the
// field ("tasks.completed"); fields it does not know are ignored; a newer version is refused. A
// file without "version" is one written before the field existed (the same layout): version 0.
// Plain values and stateless functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acan/status.h"
#include "runtime/core/controller.h"

namespace acan::runtime {

// The layout this code writes. Raise it when a field changes its name, type or meaning (adding an
// optional field does not need it), and say what changed in docs/operations.md.
inline constexpr int kSummaryVersion = 1;

// A figure a summary may leave out (outer optional) or state as null (inner): JSON's three states,
// kept as written. `x.value_or(std::nullopt)` is the figure where known.
template <typename T>
using Nullable = std::optional<std::optional<T>>;

// A Nullable that is written: the figure, or null when `v` is unset.
inline Nullable<double> Stated(std::optional<double> v) {
  return Nullable<double>(std::in_place, v);
}

// "tasks": the manager's task counters at the end.
struct SummaryTasks {
  int64_t completed = 0;
  int64_t retransmitted = 0;
  int64_t duplicates_discarded = 0;
  std::map<std::string, int64_t> retransmit_reasons;  // reason -> count
  // In-process runs only.
  std::optional<int64_t> dispatched, speculated, deadlines_extended, tampered;
  std::optional<std::map<std::string, int64_t>> by_type;  // completed tasks per type
};

// "updates": parameter versions applied over every shard (gaps and repeats must stay 0).
struct SummaryUpdates {
  std::optional<int64_t> shards;  // in-process runs only
  int64_t versions_applied = 0;
  int64_t gaps = 0;
  int64_t repeats = 0;
};

// "compute": the task time a run needed against the time it spent.
struct SummaryCompute {
  std::optional<double> useful_task_s;  // in process: first completions only
  std::optional<double> total_task_s;   // in process: all task time, lost work included
  double extra_compute_ratio = 0;       // total / useful - 1
  std::optional<std::string> measured;  // across processes: how the supervisor measured it
};

// One entry of "per_handler" (in-process runs).
struct SummaryHandler {
  int64_t id = 0;
  int64_t tasks = 0;
  double busy_s = 0;
  int64_t work = 0;  // floats its tasks read and wrote
  double idle_ratio = 0;
  double speed = 1;
  int64_t crashes = 0;
  int64_t missing_inputs = 0;
  int64_t bad_tuples = 0;
  int64_t reused = 0;
  // Memory (absent in older files): its budget (0: none), the most it held for a task (inputs,
  // outputs and its data set), the tasks it refused as over the budget.
  int64_t memory_budget = 0;
  int64_t peak_held_bytes = 0;
  int64_t refused = 0;
};

// "crashes": in process the injected crashes; across processes, when the supervisor kills, the
// kills and their schedule.
struct SummaryCrashes {
  int64_t handlers = 0;
  int64_t manager = 0;
  // The supervisor's kills (`acan train --processes` under [chaos]) only.
  std::optional<std::string> by;  // "SIGKILL"
  std::optional<double> interval_s, probability;
  std::optional<uint64_t> seed;
  std::optional<std::vector<double>> speeds;
  std::optional<int64_t> lost_tasks, lost_not_redone;
};

// "controller" (in-process runs): its state at the end and every decision it took.
struct SummaryController {
  std::map<std::string, double> timeout_ms;  // by task class
  double mean_timeout_ms = 0;
  int64_t task_size = 0;
  int64_t pouch = 0;
  int64_t handler_pouch = 0;
  double completion_rate = 1;
  std::vector<ControllerDecision> decisions;
};

// A sample of times: how many, and their median and 95th percentile (null without any).
struct SummaryQuantiles {
  int64_t count = 0;
  std::optional<double> median_ms, p95_ms;  // written as null when unset
};

// One entry of "recovery.lost" (the supervisor's): a redone lost task's path, milliseconds from
// the kill (null where the step was not seen).
struct LostTaskTrace {
  std::string task;
  std::string task_class;  // "class"
  int64_t killed_handler = -1;
  std::optional<double> noticed_ms, resent_ms, claimed_ms;  // written as null when unset
  int64_t claimed_by = -1;
  double done_ms = 0;
  double redo_in_hand_ms = 0;
  int64_t manager_kills_between = 0;
};

// "recovery.watch_lag_ms": how far the supervisor's watch of the puts ran behind the job.
struct SummaryWatchLag {
  double p50_at_most = 0;
  double p99_at_most = 0;
};

// "recovery": crash-to-redo times against the lost tasks' classes, the manager's recoveries
// (docs/operations.md explains each figure). The ratios are null where nothing was measured.
struct SummaryRecovery {
  SummaryQuantiles handler_crash_to_retransmitted_done;
  SummaryQuantiles manager_crash_to_next_step;
  SummaryQuantiles task;
  SummaryQuantiles lost_task;
  SummaryQuantiles manager_recovery;
  std::optional<double> median_recovery_over_median_task;
  std::optional<double> median_recovery_over_median_lost_task;
  std::optional<double> median_recovery_over_own_class_median_task;
  std::optional<double> median_recovery_over_own_class_median_at_speed;
  std::map<std::string, SummaryQuantiles> task_by_class;
  std::map<std::string, int64_t> redo_speeds;  // slow-down ("5") -> redos run at it
  int64_t lost_tasks = 0;
  int64_t lost_not_redone = 0;
  std::vector<double> handler_ms;  // each crash -> redo done
  std::optional<double> manager_recovery_space_calls_max;
  // The supervisor's (`acan train --processes` under [chaos]) only.
  std::optional<std::vector<LostTaskTrace>> lost;
  std::optional<SummaryWatchLag> watch_lag_ms;
};

// Resident tuples and bytes at the end and at their peak.
struct SummaryResident {
  int64_t tuples = 0;
  int64_t bytes = 0;
  int64_t peak_tuples = 0;
  int64_t peak_bytes = 0;
};

// One operation's entry of "space.calls".
struct SummarySpaceCalls {
  int64_t count = 0;
  double p50_us_at_most = 0;
  double p99_us_at_most = 0;
};

// "space" of an in-process run: what it held in the space and what it asked of it.
struct SummarySpace {
  SummaryResident total;                            // written flat: "tuples", "bytes", ...
  std::map<std::string, SummaryResident> by_class;  // left out when empty
  std::map<std::string, SummarySpaceCalls> calls;   // by operation
  int64_t bytes_put = 0;
  int64_t bytes_returned = 0;
  std::optional<double> bytes_moved_per_step;  // null before the first step
};

// One entry of "stalls".
// A band of the tiles the run was cut in (acan::TileBand).
struct SummaryTileBand {
  int64_t edge = 0;
  int64_t share = 0;
  int64_t budget = 0;  // bytes (0: none)
};

struct SummaryStall {
  double t_s = 0;
  double stalled_s = 0;
  std::string report;                           // the line printed
  std::array<int64_t, 2> steps_in_flight = {};  // [first, end)
  int64_t tasks_sent = 0;
  int64_t tasks_held = 0;
  int64_t manager_incarnations = 0;
};

// One entry of "test_per_epoch".
struct SummaryTestEpoch {
  int64_t epoch = 0;  // 1-based
  double test_loss = 0;
  double test_accuracy = 0;
};

// "grain" of a manager process running a chain job that chose its task size.
struct SummaryGrain {
  int64_t steps_per_task = 0;
  double step_ms = 0;
  double model_move_ms = 0;
};

// "processes" (the supervisor's).
struct SummaryProcesses {
  int64_t handlers = 0;
  int64_t managers = 0;
  std::map<std::string, int64_t> restarts;  // by process name; left out when empty
  int64_t handler_restarts = 0;
  int64_t manager_restarts = 0;
  std::string space;  // the URI the children used
};

// "traffic" (the supervisor's): what the role processes that exited on their own moved.
struct SummaryTraffic {
  int64_t processes_reporting = 0;
  int64_t value_bytes_put = 0;
  int64_t value_bytes_returned = 0;
  double value_bytes_per_step = 0;
  int64_t space_calls = 0;
  double space_calls_per_step = 0;
  // The least a step must move: the parameters (and velocities) read once and their new values
  // written once, twice the state's bytes; and value_bytes_per_step against it.
  std::optional<double> minimum_bytes_per_step;
  std::optional<double> per_step_over_minimum;
};

// "space_at_end" (the supervisor's).
struct SummarySpaceAtEnd {
  int64_t tuples = 0;
  int64_t bytes = 0;
};

// "oracle" (the supervisor's, over NATS): the version oracle's verdict at the server.
struct SummaryOracle {
  std::string verdict;  // "ok", or what broke exactly-once
  int64_t versions_written = 0;
  int64_t version_copies = 0;
  int64_t proposals_seen = 0;
  int64_t tasks_seen = 0;
};

struct RunSummary {
  // As read (0: a file from before the field); always written as kSummaryVersion.
  int version = kSummaryVersion;

  // Every summary.
  std::string strategy;
  int64_t window = 0;
  int64_t epochs = 0;
  int64_t steps = 0;  // applied
  int64_t samples = 0;
  double train_s = 0;  // training alone
  std::string weights_sha256;
  SummaryTasks tasks;
  SummaryUpdates updates;

  // An in-process run's.
  std::optional<int64_t> handlers;
  std::optional<int64_t> total_steps;
  std::optional<double> initial_loss, final_loss;
  std::optional<std::vector<double>> loss_per_epoch;
  Nullable<double> accuracy;     // null for a regression
  std::optional<double> wall_s;  // the supervisor's too
  std::optional<double> samples_per_s;
  std::optional<double> eval_s;
  std::optional<SummaryCompute> compute;  // the supervisor's under [chaos] too
  std::optional<std::vector<SummaryHandler>> per_handler;
  std::optional<SummaryCrashes> crashes;  // the supervisor's under [chaos] too
  std::optional<SummaryController> controller;
  std::optional<SummaryRecovery> recovery;  // the supervisor's too
  std::optional<SummarySpace> space;        // "space" as an object
  std::optional<std::vector<SummaryStall>> stalls;
  // A tiles job cut in bands (for handler budgets that differ): its bands, in order.
  std::optional<std::vector<SummaryTileBand>> tile_bands;

  // Held-out evaluation: in process null without a test split; a manager process leaves out
  // what it did not evaluate.
  std::optional<int64_t> test_rows;
  Nullable<double> test_loss, test_accuracy;
  std::optional<std::vector<double>> per_class_accuracy;
  std::optional<std::vector<SummaryTestEpoch>> test_per_epoch;
  std::optional<std::string> test_split;  // a manager process's: "test" or "train"

  // A manager process's.
  std::optional<std::string> config;     // the job file
  std::optional<std::string> space_uri;  // "space" as a string; never beside `space`
  std::optional<std::string> job_id;
  std::optional<std::string> manager;  // its name
  std::optional<double> final_epoch_loss;
  std::optional<int64_t> manager_takeovers;
  std::optional<double> manager_wall_s;
  std::optional<SummaryGrain> grain;

  // The supervisor's (`acan train --processes`).
  std::optional<SummaryProcesses> processes;
  std::optional<SummaryTraffic> traffic;
  std::optional<SummarySpaceAtEnd> space_at_end;
  std::optional<SummaryOracle> oracle;
};

// The JSON of a summary and of its parts (nlohmann's to_json, so `nlohmann::json(part)` works).
void to_json(nlohmann::json& j, const RunSummary& s);
void to_json(nlohmann::json& j, const SummaryTasks& t);
void to_json(nlohmann::json& j, const SummaryUpdates& u);
void to_json(nlohmann::json& j, const SummaryCompute& c);
void to_json(nlohmann::json& j, const SummaryHandler& h);
void to_json(nlohmann::json& j, const SummaryCrashes& c);
void to_json(nlohmann::json& j, const ControllerDecision& d);
void to_json(nlohmann::json& j, const SummaryController& c);
void to_json(nlohmann::json& j, const SummaryQuantiles& q);
void to_json(nlohmann::json& j, const LostTaskTrace& l);
void to_json(nlohmann::json& j, const SummaryRecovery& r);
void to_json(nlohmann::json& j, const SummarySpace& s);
void to_json(nlohmann::json& j, const SummaryStall& s);
void to_json(nlohmann::json& j, const SummaryTileBand& b);
void to_json(nlohmann::json& j, const SummaryTestEpoch& e);
void to_json(nlohmann::json& j, const SummaryWatchLag& w);
void to_json(nlohmann::json& j, const SummaryResident& r);
void to_json(nlohmann::json& j, const SummarySpaceCalls& c);
void to_json(nlohmann::json& j, const SummaryGrain& g);
void to_json(nlohmann::json& j, const SummaryProcesses& p);
void to_json(nlohmann::json& j, const SummaryTraffic& t);
void to_json(nlohmann::json& j, const SummarySpaceAtEnd& s);
void to_json(nlohmann::json& j, const SummaryOracle& o);

// The text of summary.json: the JSON indented by 2, one final newline.
std::string SummaryText(const RunSummary& s);

// A summary from JSON (`source` names it in errors: a path). InvalidArgument naming the source
// and the field for a wrong type or a missing field every summary has, and for a newer version.
Result<RunSummary> SummaryFromJson(const nlohmann::json& j, std::string_view source);
// The same from text; InvalidArgument when it is not JSON.
Result<RunSummary> ParseSummary(std::string_view text, std::string_view source);
// The same from a file; NotFound when it is missing.
Result<RunSummary> ReadSummary(const std::string& path);
// Writes SummaryText(s) to `path` whole (common/write_whole.h).
Status WriteSummary(const std::string& path, const RunSummary& s);

}  // namespace acan::runtime
