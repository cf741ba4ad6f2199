// summary.json written and read (summary.h): each part's fields in one to_json and one reader,
// side by side, so that a field is added, renamed or typed in one place.
#include "runtime/core/summary.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "common/write_whole.h"
#include "nn/json_int.h"
#include "runtime/core/json_fields.h"

namespace acan::runtime {

namespace {

using namespace json_fields;
using json = nlohmann::json;

SummaryTasks ReadTasks(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryTasks t;
  t.completed = f.Need("completed", Int);
  t.retransmitted = f.Need("retransmitted", Int);
  t.duplicates_discarded = f.Need("duplicates_discarded", Int);
  t.retransmit_reasons = f.Need("retransmit_reasons", IntMap);
  t.dispatched = f.Maybe("dispatched", Int);
  t.speculated = f.Maybe("speculated", Int);
  t.deadlines_extended = f.Maybe("deadlines_extended", Int);
  t.tampered = f.Maybe("tampered", Int);
  t.by_type = f.Maybe("by_type", IntMap);
  return t;
}

SummaryUpdates ReadUpdates(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryUpdates u;
  u.shards = f.Maybe("shards", Int);
  u.versions_applied = f.Need("versions_applied", Int);
  u.gaps = f.Need("gaps", Int);
  u.repeats = f.Need("repeats", Int);
  return u;
}

SummaryCompute ReadCompute(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryCompute c;
  c.useful_task_s = f.Maybe("useful_task_s", Num);
  c.total_task_s = f.Maybe("total_task_s", Num);
  c.extra_compute_ratio = f.Need("extra_compute_ratio", Num);
  c.measured = f.Maybe("measured", Str);
  return c;
}

SummaryHandler ReadHandler(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryHandler h;
  h.id = f.Need("id", Int);
  h.tasks = f.Need("tasks", Int);
  h.busy_s = f.Need("busy_s", Num);
  h.work = f.Need("work", Int);
  h.idle_ratio = f.Need("idle_ratio", Num);
  h.speed = f.Need("speed", Num);
  h.crashes = f.Need("crashes", Int);
  h.missing_inputs = f.Need("missing_inputs", Int);
  h.bad_tuples = f.Need("bad_tuples", Int);
  h.reused = f.Need("reused", Int);
  h.memory_budget = f.Maybe("memory_budget", Int).value_or(0);
  h.peak_held_bytes = f.Maybe("peak_held_bytes", Int).value_or(0);
  h.refused = f.Maybe("refused", Int).value_or(0);
  return h;
}

SummaryCrashes ReadCrashes(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryCrashes c;
  c.handlers = f.Need("handlers", Int);
  c.manager = f.Need("manager", Int);
  c.by = f.Maybe("by", Str);
  c.interval_s = f.Maybe("interval_s", Num);
  c.probability = f.Maybe("probability", Num);
  c.seed = f.Maybe("seed", Unsigned);
  c.speeds = f.Maybe("speeds", Nums);
  c.lost_tasks = f.Maybe("lost_tasks", Int);
  c.lost_not_redone = f.Maybe("lost_not_redone", Int);
  return c;
}

ControllerDecision ReadDecision(const json& v, const std::string& path) {
  Fields f(v, path);
  ControllerDecision d;
  d.t_s = f.Need("t_s", Num);
  d.completion_rate = f.Need("completion_rate", Num);
  d.action = f.Need("action", Str);
  d.pouch = f.Need("pouch", Int);
  d.task_size = f.Need("task_size", Int);
  d.timeout_scale = f.Need("timeout_scale", Num);
  return d;
}

SummaryController ReadController(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryController c;
  c.timeout_ms = f.Need("timeout_ms", NumMap);
  c.mean_timeout_ms = f.Need("mean_timeout_ms", Num);
  c.task_size = f.Need("task_size", Int);
  c.pouch = f.Need("pouch", Int);
  c.handler_pouch = f.Need("handler_pouch", Int);
  c.completion_rate = f.Need("completion_rate", Num);
  c.decisions = f.Need(
      "decisions", [](const json& d, const std::string& p) { return ListOf(d, p, ReadDecision); });
  return c;
}

SummaryQuantiles ReadQuantiles(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryQuantiles q;
  q.count = f.Need("count", Int);
  q.median_ms = f.Need("median_ms", NumOrNull);
  q.p95_ms = f.Need("p95_ms", NumOrNull);
  return q;
}

LostTaskTrace ReadLost(const json& v, const std::string& path) {
  Fields f(v, path);
  LostTaskTrace l;
  l.task = f.Need("task", Str);
  l.task_class = f.Need("class", Str);
  l.killed_handler = f.Need("killed_handler", Int);
  l.noticed_ms = f.Need("noticed_ms", NumOrNull);
  l.resent_ms = f.Need("resent_ms", NumOrNull);
  l.claimed_ms = f.Need("claimed_ms", NumOrNull);
  l.claimed_by = f.Need("claimed_by", Int);
  l.done_ms = f.Need("done_ms", Num);
  l.redo_in_hand_ms = f.Need("redo_in_hand_ms", Num);
  l.manager_kills_between = f.Need("manager_kills_between", Int);
  return l;
}

SummaryWatchLag ReadWatchLag(const json& v, const std::string& path) {
  Fields f(v, path);
  return {f.Need("p50_at_most", Num), f.Need("p99_at_most", Num)};
}

SummaryRecovery ReadRecovery(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryRecovery r;
  r.handler_crash_to_retransmitted_done =
      f.Need("handler_crash_to_retransmitted_done", ReadQuantiles);
  r.manager_crash_to_next_step = f.Need("manager_crash_to_next_step", ReadQuantiles);
  r.task = f.Need("task", ReadQuantiles);
  r.lost_task = f.Need("lost_task", ReadQuantiles);
  r.manager_recovery = f.Need("manager_recovery", ReadQuantiles);
  r.median_recovery_over_median_task = f.Need("median_recovery_over_median_task", NumOrNull);
  r.median_recovery_over_median_lost_task =
      f.Need("median_recovery_over_median_lost_task", NumOrNull);
  r.median_recovery_over_own_class_median_task =
      f.Need("median_recovery_over_own_class_median_task", NumOrNull);
  r.median_recovery_over_own_class_median_at_speed =
      f.Need("median_recovery_over_own_class_median_at_speed", NumOrNull);
  r.task_by_class = f.Need("task_by_class", [](const json& c, const std::string& p) {
    return MapOf(c, p, ReadQuantiles);
  });
  r.redo_speeds = f.Need("redo_speeds", IntMap);
  r.lost_tasks = f.Need("lost_tasks", Int);
  r.lost_not_redone = f.Need("lost_not_redone", Int);
  r.handler_ms = f.Need("handler_ms", Nums);
  r.manager_recovery_space_calls_max = f.Need("manager_recovery_space_calls_max", NumOrNull);
  r.lost =
      f.Maybe("lost", [](const json& l, const std::string& p) { return ListOf(l, p, ReadLost); });
  r.watch_lag_ms = f.Maybe("watch_lag_ms", ReadWatchLag);
  return r;
}

SummaryResident ReadResident(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryResident r;
  r.tuples = f.Need("tuples", Int);
  r.bytes = f.Need("bytes", Int);
  r.peak_tuples = f.Need("peak_tuples", Int);
  r.peak_bytes = f.Need("peak_bytes", Int);
  return r;
}

SummarySpaceCalls ReadSpaceCalls(const json& v, const std::string& path) {
  Fields f(v, path);
  return {f.Need("count", Int), f.Need("p50_us_at_most", Num), f.Need("p99_us_at_most", Num)};
}

SummarySpace ReadSpace(const json& v, const std::string& path) {
  Fields f(v, path);
  SummarySpace s;
  s.total = ReadResident(v, path);
  s.by_class = f.Maybe("by_class", [](const json& c, const std::string& p) {
                  return MapOf(c, p, ReadResident);
                }).value_or(std::map<std::string, SummaryResident>{});
  s.calls = f.Need("calls",
                   [](const json& c, const std::string& p) { return MapOf(c, p, ReadSpaceCalls); });
  s.bytes_put = f.Need("bytes_put", Int);
  s.bytes_returned = f.Need("bytes_returned", Int);
  s.bytes_moved_per_step = f.Need("bytes_moved_per_step", NumOrNull);
  return s;
}

SummaryTileBand ReadTileBand(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryTileBand b;
  b.edge = f.Need("edge", Int);
  b.share = f.Need("share", Int);
  b.budget = f.Need("budget", Int);
  return b;
}

SummaryStall ReadStall(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryStall s;
  s.t_s = f.Need("t_s", Num);
  s.stalled_s = f.Need("stalled_s", Num);
  s.report = f.Need("report", Str);
  const std::vector<int64_t> in_flight = f.Need(
      "steps_in_flight", [](const json& a, const std::string& p) { return ListOf(a, p, Int); });
  if (in_flight.size() != 2) {
    Bad(f.Path("steps_in_flight"),
        fmt::format("[first, end) is needed, not {} numbers", in_flight.size()));
  }
  s.steps_in_flight = {in_flight[0], in_flight[1]};
  s.tasks_sent = f.Need("tasks_sent", Int);
  s.tasks_held = f.Need("tasks_held", Int);
  s.manager_incarnations = f.Need("manager_incarnations", Int);
  return s;
}

SummaryTestEpoch ReadTestEpoch(const json& v, const std::string& path) {
  Fields f(v, path);
  return {f.Need("epoch", Int), f.Need("test_loss", Num), f.Need("test_accuracy", Num)};
}

SummaryGrain ReadGrain(const json& v, const std::string& path) {
  Fields f(v, path);
  return {f.Need("steps_per_task", Int), f.Need("step_ms", Num), f.Need("model_move_ms", Num)};
}

SummaryProcesses ReadProcesses(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryProcesses p;
  p.handlers = f.Need("handlers", Int);
  p.managers = f.Need("managers", Int);
  p.restarts = f.Maybe("restarts", IntMap).value_or(std::map<std::string, int64_t>{});
  p.handler_restarts = f.Need("handler_restarts", Int);
  p.manager_restarts = f.Need("manager_restarts", Int);
  p.space = f.Need("space", Str);
  return p;
}

SummaryTraffic ReadTraffic(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryTraffic t;
  t.processes_reporting = f.Need("processes_reporting", Int);
  t.value_bytes_put = f.Need("value_bytes_put", Int);
  t.value_bytes_returned = f.Need("value_bytes_returned", Int);
  t.value_bytes_per_step = f.Need("value_bytes_per_step", Num);
  t.space_calls = f.Need("space_calls", Int);
  t.space_calls_per_step = f.Need("space_calls_per_step", Num);
  t.minimum_bytes_per_step = f.Maybe("minimum_bytes_per_step", Num);
  t.per_step_over_minimum = f.Maybe("per_step_over_minimum", Num);
  return t;
}

SummarySpaceAtEnd ReadSpaceAtEnd(const json& v, const std::string& path) {
  Fields f(v, path);
  return {f.Need("tuples", Int), f.Need("bytes", Int)};
}

SummaryOracle ReadOracle(const json& v, const std::string& path) {
  Fields f(v, path);
  SummaryOracle o;
  o.verdict = f.Need("verdict", Str);
  o.versions_written = f.Need("versions_written", Int);
  o.version_copies = f.Need("version_copies", Int);
  o.proposals_seen = f.Need("proposals_seen", Int);
  o.tasks_seen = f.Need("tasks_seen", Int);
  return o;
}

RunSummary ReadRunSummary(const json& v, int version) {
  Fields f(v, "");
  RunSummary s;
  s.version = version;
  s.strategy = f.Need("strategy", Str);
  s.window = f.Need("window", Int);
  s.epochs = f.Need("epochs", Int);
  s.steps = f.Need("steps", Int);
  s.samples = f.Need("samples", Int);
  s.train_s = f.Need("train_s", Num);
  s.weights_sha256 = f.Need("weights_sha256", Str);
  s.tasks = f.Need("tasks", ReadTasks);
  s.updates = f.Need("updates", ReadUpdates);

  s.handlers = f.Maybe("handlers", Int);
  s.total_steps = f.Maybe("total_steps", Int);
  s.initial_loss = f.Maybe("initial_loss", Num);
  s.final_loss = f.Maybe("final_loss", Num);
  s.loss_per_epoch = f.Maybe("loss_per_epoch", Nums);
  s.accuracy = f.MaybeNull("accuracy");
  s.wall_s = f.Maybe("wall_s", Num);
  s.samples_per_s = f.Maybe("samples_per_s", Num);
  s.eval_s = f.Maybe("eval_s", Num);
  s.compute = f.Maybe("compute", ReadCompute);
  s.per_handler = f.Maybe(
      "per_handler", [](const json& h, const std::string& p) { return ListOf(h, p, ReadHandler); });
  s.crashes = f.Maybe("crashes", ReadCrashes);
  s.controller = f.Maybe("controller", ReadController);
  s.recovery = f.Maybe("recovery", ReadRecovery);
  if (auto it = v.find("space"); it != v.end()) {
    if (it->is_string()) {
      s.space_uri = it->get<std::string>();
    } else if (it->is_object()) {
      s.space = ReadSpace(*it, "space");
    } else {
      Bad("space", "an object (a run's use of the space) or a string (its URI) is needed, not " +
                       Shown(*it));
    }
  }
  s.stalls = f.Maybe("stalls",
                     [](const json& a, const std::string& p) { return ListOf(a, p, ReadStall); });
  s.tile_bands = f.Maybe(
      "tile_bands", [](const json& a, const std::string& p) { return ListOf(a, p, ReadTileBand); });

  s.test_rows = f.Maybe("test_rows", Int);
  s.test_loss = f.MaybeNull("test_loss");
  s.test_accuracy = f.MaybeNull("test_accuracy");
  s.per_class_accuracy = f.Maybe("per_class_accuracy", Nums);
  s.test_per_epoch = f.Maybe("test_per_epoch", [](const json& a, const std::string& p) {
    return ListOf(a, p, ReadTestEpoch);
  });
  s.test_split = f.Maybe("test_split", Str);

  s.config = f.Maybe("config", Str);
  s.job_id = f.Maybe("job_id", Str);
  s.manager = f.Maybe("manager", Str);
  s.final_epoch_loss = f.Maybe("final_epoch_loss", Num);
  s.manager_takeovers = f.Maybe("manager_takeovers", Int);
  s.manager_wall_s = f.Maybe("manager_wall_s", Num);
  s.grain = f.Maybe("grain", ReadGrain);

  s.processes = f.Maybe("processes", ReadProcesses);
  s.traffic = f.Maybe("traffic", ReadTraffic);
  s.space_at_end = f.Maybe("space_at_end", ReadSpaceAtEnd);
  s.oracle = f.Maybe("oracle", ReadOracle);
  return s;
}

}  // namespace

void to_json(json& j, const SummaryTasks& t) {
  j = {{"completed", t.completed},
       {"retransmitted", t.retransmitted},
       {"duplicates_discarded", t.duplicates_discarded},
       {"retransmit_reasons", t.retransmit_reasons}};
  PutIf(j, "dispatched", t.dispatched);
  PutIf(j, "speculated", t.speculated);
  PutIf(j, "deadlines_extended", t.deadlines_extended);
  PutIf(j, "tampered", t.tampered);
  PutIf(j, "by_type", t.by_type);
}

void to_json(json& j, const SummaryUpdates& u) {
  j = {{"versions_applied", u.versions_applied}, {"gaps", u.gaps}, {"repeats", u.repeats}};
  PutIf(j, "shards", u.shards);
}

void to_json(json& j, const SummaryCompute& c) {
  j = {{"extra_compute_ratio", c.extra_compute_ratio}};
  PutIf(j, "useful_task_s", c.useful_task_s);
  PutIf(j, "total_task_s", c.total_task_s);
  PutIf(j, "measured", c.measured);
}

void to_json(json& j, const SummaryHandler& h) {
  j = {{"id", h.id},
       {"tasks", h.tasks},
       {"busy_s", h.busy_s},
       {"work", h.work},
       {"idle_ratio", h.idle_ratio},
       {"speed", h.speed},
       {"crashes", h.crashes},
       {"missing_inputs", h.missing_inputs},
       {"bad_tuples", h.bad_tuples},
       {"reused", h.reused},
       {"memory_budget", h.memory_budget},
       {"peak_held_bytes", h.peak_held_bytes},
       {"refused", h.refused}};
}

void to_json(json& j, const SummaryCrashes& c) {
  j = {{"handlers", c.handlers}, {"manager", c.manager}};
  PutIf(j, "by", c.by);
  PutIf(j, "interval_s", c.interval_s);
  PutIf(j, "probability", c.probability);
  PutIf(j, "seed", c.seed);
  PutIf(j, "speeds", c.speeds);
  PutIf(j, "lost_tasks", c.lost_tasks);
  PutIf(j, "lost_not_redone", c.lost_not_redone);
}

void to_json(json& j, const ControllerDecision& d) {
  j = {{"t_s", d.t_s},
       {"completion_rate", d.completion_rate},
       {"action", d.action},
       {"pouch", d.pouch},
       {"task_size", d.task_size},
       {"timeout_scale", d.timeout_scale}};
}

void to_json(json& j, const SummaryController& c) {
  j = {{"timeout_ms", c.timeout_ms},       {"mean_timeout_ms", c.mean_timeout_ms},
       {"task_size", c.task_size},         {"pouch", c.pouch},
       {"handler_pouch", c.handler_pouch}, {"completion_rate", c.completion_rate},
       {"decisions", c.decisions}};
}

void to_json(json& j, const SummaryQuantiles& q) {
  j = {{"count", q.count}, {"median_ms", OrNull(q.median_ms)}, {"p95_ms", OrNull(q.p95_ms)}};
}

void to_json(json& j, const LostTaskTrace& l) {
  j = {{"task", l.task},
       {"class", l.task_class},
       {"killed_handler", l.killed_handler},
       {"noticed_ms", OrNull(l.noticed_ms)},
       {"resent_ms", OrNull(l.resent_ms)},
       {"claimed_ms", OrNull(l.claimed_ms)},
       {"claimed_by", l.claimed_by},
       {"done_ms", l.done_ms},
       {"redo_in_hand_ms", l.redo_in_hand_ms},
       {"manager_kills_between", l.manager_kills_between}};
}

void to_json(json& j, const SummaryWatchLag& w) {
  j = {{"p50_at_most", w.p50_at_most}, {"p99_at_most", w.p99_at_most}};
}

void to_json(json& j, const SummaryRecovery& r) {
  j = {{"handler_crash_to_retransmitted_done", r.handler_crash_to_retransmitted_done},
       {"manager_crash_to_next_step", r.manager_crash_to_next_step},
       {"task", r.task},
       {"lost_task", r.lost_task},
       {"manager_recovery", r.manager_recovery},
       {"median_recovery_over_median_task", OrNull(r.median_recovery_over_median_task)},
       {"median_recovery_over_median_lost_task", OrNull(r.median_recovery_over_median_lost_task)},
       {"median_recovery_over_own_class_median_task",
        OrNull(r.median_recovery_over_own_class_median_task)},
       {"median_recovery_over_own_class_median_at_speed",
        OrNull(r.median_recovery_over_own_class_median_at_speed)},
       {"task_by_class", r.task_by_class},
       {"redo_speeds", r.redo_speeds},
       {"lost_tasks", r.lost_tasks},
       {"lost_not_redone", r.lost_not_redone},
       {"handler_ms", r.handler_ms},
       {"manager_recovery_space_calls_max", OrNull(r.manager_recovery_space_calls_max)}};
  PutIf(j, "lost", r.lost);
  PutIf(j, "watch_lag_ms", r.watch_lag_ms);
}

void to_json(json& j, const SummaryResident& r) {
  j = {{"tuples", r.tuples},
       {"bytes", r.bytes},
       {"peak_tuples", r.peak_tuples},
       {"peak_bytes", r.peak_bytes}};
}

void to_json(json& j, const SummarySpaceCalls& c) {
  j = {{"count", c.count},
       {"p50_us_at_most", c.p50_us_at_most},
       {"p99_us_at_most", c.p99_us_at_most}};
}

void to_json(json& j, const SummarySpace& s) {
  j = s.total;
  if (!s.by_class.empty()) j["by_class"] = s.by_class;
  j["calls"] = s.calls;
  j["bytes_put"] = s.bytes_put;
  j["bytes_returned"] = s.bytes_returned;
  j["bytes_moved_per_step"] = OrNull(s.bytes_moved_per_step);
}

void to_json(json& j, const SummaryTileBand& b) {
  j = {{"edge", b.edge}, {"share", b.share}, {"budget", b.budget}};
}

void to_json(json& j, const SummaryStall& s) {
  j = {{"t_s", s.t_s},
       {"stalled_s", s.stalled_s},
       {"report", s.report},
       {"steps_in_flight", s.steps_in_flight},
       {"tasks_sent", s.tasks_sent},
       {"tasks_held", s.tasks_held},
       {"manager_incarnations", s.manager_incarnations}};
}

void to_json(json& j, const SummaryTestEpoch& e) {
  j = {{"epoch", e.epoch}, {"test_loss", e.test_loss}, {"test_accuracy", e.test_accuracy}};
}

void to_json(json& j, const SummaryGrain& g) {
  j = {{"steps_per_task", g.steps_per_task},
       {"step_ms", g.step_ms},
       {"model_move_ms", g.model_move_ms}};
}

void to_json(json& j, const SummaryProcesses& p) {
  j = {{"handlers", p.handlers},
       {"managers", p.managers},
       {"handler_restarts", p.handler_restarts},
       {"manager_restarts", p.manager_restarts},
       {"space", p.space}};
  if (!p.restarts.empty()) j["restarts"] = p.restarts;
}

void to_json(json& j, const SummaryTraffic& t) {
  j = {{"processes_reporting", t.processes_reporting},
       {"value_bytes_put", t.value_bytes_put},
       {"value_bytes_returned", t.value_bytes_returned},
       {"value_bytes_per_step", t.value_bytes_per_step},
       {"space_calls", t.space_calls},
       {"space_calls_per_step", t.space_calls_per_step}};
  PutIf(j, "minimum_bytes_per_step", t.minimum_bytes_per_step);
  PutIf(j, "per_step_over_minimum", t.per_step_over_minimum);
}

void to_json(json& j, const SummarySpaceAtEnd& s) {
  j = {{"tuples", s.tuples}, {"bytes", s.bytes}};
}

void to_json(json& j, const SummaryOracle& o) {
  j = {{"verdict", o.verdict},
       {"versions_written", o.versions_written},
       {"version_copies", o.version_copies},
       {"proposals_seen", o.proposals_seen},
       {"tasks_seen", o.tasks_seen}};
}

void to_json(json& j, const RunSummary& s) {
  j = json::object();
  j["version"] = kSummaryVersion;
  j["strategy"] = s.strategy;
  j["window"] = s.window;
  j["epochs"] = s.epochs;
  j["steps"] = s.steps;
  j["samples"] = s.samples;
  j["train_s"] = s.train_s;
  j["weights_sha256"] = s.weights_sha256;
  j["tasks"] = s.tasks;
  j["updates"] = s.updates;

  PutIf(j, "handlers", s.handlers);
  PutIf(j, "total_steps", s.total_steps);
  PutIf(j, "initial_loss", s.initial_loss);
  PutIf(j, "final_loss", s.final_loss);
  PutIf(j, "loss_per_epoch", s.loss_per_epoch);
  PutNullable(j, "accuracy", s.accuracy);
  PutIf(j, "wall_s", s.wall_s);
  PutIf(j, "samples_per_s", s.samples_per_s);
  PutIf(j, "eval_s", s.eval_s);
  PutIf(j, "compute", s.compute);
  PutIf(j, "per_handler", s.per_handler);
  PutIf(j, "crashes", s.crashes);
  PutIf(j, "controller", s.controller);
  PutIf(j, "recovery", s.recovery);
  if (s.space) {
    j["space"] = *s.space;
  } else {
    PutIf(j, "space", s.space_uri);
  }
  PutIf(j, "stalls", s.stalls);
  PutIf(j, "tile_bands", s.tile_bands);

  PutIf(j, "test_rows", s.test_rows);
  PutNullable(j, "test_loss", s.test_loss);
  PutNullable(j, "test_accuracy", s.test_accuracy);
  PutIf(j, "per_class_accuracy", s.per_class_accuracy);
  PutIf(j, "test_per_epoch", s.test_per_epoch);
  PutIf(j, "test_split", s.test_split);

  PutIf(j, "config", s.config);
  PutIf(j, "job_id", s.job_id);
  PutIf(j, "manager", s.manager);
  PutIf(j, "final_epoch_loss", s.final_epoch_loss);
  PutIf(j, "manager_takeovers", s.manager_takeovers);
  PutIf(j, "manager_wall_s", s.manager_wall_s);
  PutIf(j, "grain", s.grain);

  PutIf(j, "processes", s.processes);
  PutIf(j, "traffic", s.traffic);
  PutIf(j, "space_at_end", s.space_at_end);
  PutIf(j, "oracle", s.oracle);
}

std::string SummaryText(const RunSummary& s) { return json(s).dump(2) + "\n"; }

Result<RunSummary> SummaryFromJson(const json& j, std::string_view source) {
  if (!j.is_object()) {
    return Status::InvalidArgument(fmt::format(
        "'{}' is not a summary.json: a JSON object is needed, not {}", source, Shown(j)));
  }
  int version = 0;  // written before the field existed: the layout of version 1
  if (auto it = j.find("version"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
      return Status::InvalidArgument(fmt::format(
          "'{}': field 'version': an integer >= 0 is needed, not {}", source, Shown(*it)));
    }
    if (it->get<int64_t>() > kSummaryVersion) {
      return Status::InvalidArgument(fmt::format(
          "'{}' is summary.json version {}; this acan reads versions up to {}: read it with the "
          "acan that wrote it or a newer one",
          source, it->get<int64_t>(), kSummaryVersion));
    }
    version = int(it->get<int64_t>());
  }
  try {
    return ReadRunSummary(j, version);
  } catch (const FieldError& e) {
    return Status::InvalidArgument(
        fmt::format("'{}' is not a summary.json acan can read (version {}): field '{}'{}{}", source,
                    version, e.field, e.what.starts_with("is ") ? " " : ": ", e.what));
  }
}

Result<RunSummary> ParseSummary(std::string_view text, std::string_view source) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Status::InvalidArgument(fmt::format("'{}' is not JSON", source));
  }
  return SummaryFromJson(j, source);
}

Result<RunSummary> ReadSummary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("'{}' is missing", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return Status::Unavailable(fmt::format("cannot read '{}'", path));
  return ParseSummary(text.str(), path);
}

Status WriteSummary(const std::string& path, const RunSummary& s) {
  return WriteWhole(path, SummaryText(s));
}

}  // namespace acan::runtime
