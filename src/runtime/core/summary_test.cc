// summary.json's schema: every kind of summary survives a round trip through its text, a damaged
// one is refused naming the file and the field, a newer version is refused, and what a reader
// does not know is left alone. (A summary a real training run wrote is read back in
// api/api_test.cc, beside the runs.)
#include "runtime/core/summary.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace acan::runtime {
namespace {

using nlohmann::json;

// An in-process run's summary with every field it writes set, none at its default.
RunSummary InProcess() {
  RunSummary s;
  s.strategy = "tiles";
  s.window = 2;
  s.epochs = 2;
  s.steps = 80;
  s.samples = 80;
  s.train_s = 1.25;
  s.weights_sha256 = "ab12";
  s.tasks = {.completed = 640,
             .retransmitted = 3,
             .duplicates_discarded = 1,
             .retransmit_reasons = {{"timeout", 2}, {"handler-died", 1}},
             .dispatched = 643,
             .speculated = 4,
             .deadlines_extended = 5,
             .tampered = 0,
             .by_type = std::map<std::string, int64_t>{{"fwd", 320}, {"bwd", 320}}};
  s.updates = {.shards = 4, .versions_applied = 320, .gaps = 0, .repeats = 0};
  s.handlers = 3;
  s.total_steps = 80;
  s.initial_loss = 0.75;
  s.final_loss = 0.25;
  s.loss_per_epoch = {0.5, 0.3};
  s.accuracy = Stated(std::nullopt);  // a regression: null
  s.wall_s = 1.5;
  s.samples_per_s = 53.3;
  s.eval_s = 0.125;
  s.compute = SummaryCompute{.useful_task_s = 1.0, .total_task_s = 1.1, .extra_compute_ratio = 0.1};
  s.per_handler = {{.id = 0,
                    .tasks = 200,
                    .busy_s = 0.5,
                    .work = 1000,
                    .idle_ratio = 0.25,
                    .speed = 5,
                    .crashes = 1,
                    .missing_inputs = 2,
                    .bad_tuples = 3,
                    .reused = 4}};
  s.crashes = SummaryCrashes{.handlers = 1, .manager = 2};
  s.controller = SummaryController{.timeout_ms = {{"mb.m0", 12.5}},
                                   .mean_timeout_ms = 12.5,
                                   .task_size = 11,
                                   .pouch = 2,
                                   .handler_pouch = 1,
                                   .completion_rate = 0.5,
                                   .decisions = {{.t_s = 1.5,
                                                  .completion_rate = 0.5,
                                                  .action = "grow pouch",
                                                  .pouch = 2,
                                                  .task_size = 11,
                                                  .timeout_scale = 1.5}}};
  SummaryRecovery& r = s.recovery.emplace();
  r.handler_crash_to_retransmitted_done = {.count = 2, .median_ms = 30.0, .p95_ms = 40.0};
  r.manager_crash_to_next_step = {.count = 0};  // medians null
  r.task = {.count = 5, .median_ms = 1.0, .p95_ms = 2.0};
  r.lost_task = {.count = 2, .median_ms = 1.5, .p95_ms = 2.5};
  r.manager_recovery = {.count = 1, .median_ms = 7.0, .p95_ms = 7.0};
  r.median_recovery_over_median_task = 30.0;
  r.median_recovery_over_median_lost_task = 20.0;
  r.median_recovery_over_own_class_median_task = 3.0;
  r.task_by_class = {{"mb.m0", {.count = 5, .median_ms = 1.0, .p95_ms = 2.0}}};
  r.redo_speeds = {{"1", 1}, {"5", 1}};
  r.lost_tasks = 2;
  r.lost_not_redone = 0;
  r.handler_ms = {20.0, 40.0};
  r.manager_recovery_space_calls_max = 12.0;
  SummarySpace& space = s.space.emplace();
  space.total = {.tuples = 1, .bytes = 2, .peak_tuples = 3, .peak_bytes = 4};
  space.by_class = {{"task", {.tuples = 1, .bytes = 2, .peak_tuples = 3, .peak_bytes = 4}}};
  space.calls = {{"put", {.count = 9, .p50_us_at_most = 1.5, .p99_us_at_most = 8.0}}};
  space.bytes_put = 1000;
  space.bytes_returned = 2000;
  space.bytes_moved_per_step = 37.5;
  s.stalls = {{.t_s = 3.0,
               .stalled_s = 2.5,
               .report = "stalled",
               .steps_in_flight = {7, 9},
               .tasks_sent = 2,
               .tasks_held = 1,
               .manager_incarnations = 2}};
  s.test_rows = 10;
  s.test_loss = Stated(0.5);
  s.test_accuracy = Stated(0.875);
  s.per_class_accuracy = {0.75, 1.0};
  s.test_per_epoch = {{.epoch = 1, .test_loss = 0.6, .test_accuracy = 0.8}};
  return s;
}

// The summary of `acan train --processes` under kills: a manager process's, completed by the
// supervisor.
RunSummary Processes() {
  RunSummary s;
  s.strategy = "data";
  s.window = 1;
  s.epochs = 1;
  s.steps = 192;
  s.samples = 12288;
  s.train_s = 9.5;
  s.weights_sha256 = "cd34";
  s.tasks = {.completed = 10, .retransmitted = 2, .duplicates_discarded = 1};
  s.updates = {.versions_applied = 384, .gaps = 0, .repeats = 0};
  s.config = "out/job.toml";
  s.space_uri = "nats://127.0.0.1:4222";
  s.job_id = "job";
  s.manager = "m0";
  s.final_epoch_loss = 0.4;
  s.manager_takeovers = 1;
  s.manager_wall_s = 9.75;
  s.grain = SummaryGrain{.steps_per_task = 4, .step_ms = 0.5, .model_move_ms = 2.0};
  s.test_split = "test";
  s.test_loss = Stated(0.45);  // no test_accuracy: a regression's is left out
  s.wall_s = 12.0;
  s.processes = SummaryProcesses{.handlers = 3,
                                 .managers = 2,
                                 .restarts = {{"h0", 2}, {"m0", 1}},
                                 .handler_restarts = 2,
                                 .manager_restarts = 1,
                                 .space = "nats://127.0.0.1:4222"};
  s.crashes = SummaryCrashes{.handlers = 2,
                             .manager = 1,
                             .by = "SIGKILL",
                             .interval_s = 0.5,
                             .probability = 1.0,
                             .seed = 11,
                             .speeds = std::vector<double>{1, 5, 10},
                             .lost_tasks = 3,
                             .lost_not_redone = 0};
  SummaryRecovery& r = s.recovery.emplace();
  r.lost = {{.task = "job.task.5.mb.m0",
             .task_class = "mb.m0",
             .killed_handler = 1,
             .noticed_ms = 2.0,
             .resent_ms = 3.0,  // claimed_ms null: not seen
             .claimed_by = 2,
             .done_ms = 9.0,
             .redo_in_hand_ms = 4.0,
             .manager_kills_between = 0}};
  r.watch_lag_ms = SummaryWatchLag{.p50_at_most = 0.25, .p99_at_most = 1.0};
  s.compute = SummaryCompute{.extra_compute_ratio = 0.05, .measured = "kernel time"};
  s.traffic = SummaryTraffic{.processes_reporting = 4,
                             .value_bytes_put = 100,
                             .value_bytes_returned = 200,
                             .value_bytes_per_step = 1.5,
                             .space_calls = 50,
                             .space_calls_per_step = 0.25};
  s.space_at_end = SummarySpaceAtEnd{.tuples = 3, .bytes = 40};
  s.oracle = SummaryOracle{.verdict = "ok",
                           .versions_written = 384,
                           .version_copies = 2,
                           .proposals_seen = 384,
                           .tasks_seen = 10};
  return s;
}

std::set<std::string> Keys(const json& j) {
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  return keys;
}

Status ParseError(const std::string& text) {
  return ParseSummary(text, "run/summary.json").status();
}

// `s` as JSON with `path` (a JSON pointer) set to `value`.
std::string With(const RunSummary& s, const std::string& path, const json& value) {
  json j = s;
  j[json::json_pointer(path)] = value;
  return j.dump();
}

TEST(SummaryTest, EveryKindSurvivesARoundTripThroughItsText) {
  for (const RunSummary& s : {InProcess(), Processes(), RunSummary{}}) {
    const std::string text = SummaryText(s);
    auto back = ParseSummary(text, "summary.json");
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
    EXPECT_EQ(SummaryText(*back), text);
    EXPECT_EQ(back->version, kSummaryVersion);
  }
  // The figures themselves, of each part.
  auto in_process = ParseSummary(SummaryText(InProcess()), "summary.json");
  ASSERT_TRUE(in_process.ok()) << in_process.status().ToString();
  EXPECT_EQ(in_process->tasks.by_type->at("bwd"), 320);
  EXPECT_EQ(in_process->per_handler->at(0).reused, 4);
  EXPECT_EQ(in_process->controller->decisions.at(0).action, "grow pouch");
  EXPECT_EQ(in_process->recovery->task_by_class.at("mb.m0").p95_ms, 2.0);
  EXPECT_FALSE(in_process->recovery->manager_crash_to_next_step.median_ms.has_value());
  EXPECT_FALSE(in_process->recovery->lost.has_value());
  EXPECT_EQ(in_process->space->by_class.at("task").peak_bytes, 4);
  EXPECT_EQ(in_process->stalls->at(0).steps_in_flight[1], 9);
  EXPECT_FALSE(in_process->space_uri.has_value());
  auto processes = ParseSummary(SummaryText(Processes()), "summary.json");
  ASSERT_TRUE(processes.ok()) << processes.status().ToString();
  EXPECT_EQ(processes->space_uri, "nats://127.0.0.1:4222");
  EXPECT_FALSE(processes->space.has_value());
  EXPECT_EQ(processes->crashes->seed, 11u);
  EXPECT_EQ(processes->recovery->lost->at(0).task_class, "mb.m0");
  EXPECT_FALSE(processes->recovery->lost->at(0).claimed_ms.has_value());
  EXPECT_EQ(processes->oracle->verdict, "ok");
  EXPECT_EQ(processes->processes->restarts.at("h0"), 2);
}

// The field names are the contract scripts read (docs/operations.md): an in-process summary has
// exactly these, a process run's these, and a figure stated as unknown is null, not left out.
TEST(SummaryTest, TheFileHasTheFieldsScriptsRead) {
  const json in_process = InProcess();
  EXPECT_EQ(
      Keys(in_process),
      (std::set<std::string>{
          "version",       "strategy",    "window",         "epochs",        "steps",
          "samples",       "train_s",     "weights_sha256", "tasks",         "updates",
          "handlers",      "total_steps", "initial_loss",   "final_loss",    "loss_per_epoch",
          "accuracy",      "wall_s",      "samples_per_s",  "eval_s",        "compute",
          "per_handler",   "crashes",     "controller",     "recovery",      "space",
          "stalls",        "test_rows",   "test_loss",      "test_accuracy", "per_class_accuracy",
          "test_per_epoch"}));
  EXPECT_EQ(in_process["version"], kSummaryVersion);
  EXPECT_TRUE(in_process["accuracy"].is_null());
  EXPECT_TRUE(in_process["space"].is_object());
  EXPECT_EQ(in_process["space"]["peak_tuples"], 3);
  EXPECT_EQ(in_process["stalls"][0]["steps_in_flight"], json({7, 9}));
  EXPECT_TRUE(in_process["recovery"]["manager_crash_to_next_step"]["median_ms"].is_null());
  EXPECT_EQ(Keys(in_process["tasks"]),
            (std::set<std::string>{"dispatched", "completed", "retransmitted",
                                   "duplicates_discarded", "speculated", "deadlines_extended",
                                   "tampered", "by_type", "retransmit_reasons"}));
  const json processes = Processes();
  EXPECT_EQ(
      Keys(processes),
      (std::set<std::string>{"version",        "strategy",  "window",           "epochs",
                             "steps",          "samples",   "train_s",          "weights_sha256",
                             "tasks",          "updates",   "config",           "space",
                             "job_id",         "manager",   "final_epoch_loss", "manager_takeovers",
                             "manager_wall_s", "grain",     "test_split",       "test_loss",
                             "wall_s",         "processes", "crashes",          "recovery",
                             "compute",        "traffic",   "space_at_end",     "oracle"}));
  EXPECT_EQ(processes["space"], "nats://127.0.0.1:4222");
  EXPECT_EQ(processes["recovery"]["lost"][0]["class"], "mb.m0");
  EXPECT_TRUE(processes["recovery"]["lost"][0]["claimed_ms"].is_null());
  EXPECT_EQ(Keys(processes["updates"]),
            (std::set<std::string>{"versions_applied", "gaps", "repeats"}));
  // Empty maps stay objects, empty lists lists.
  RunSummary empty = InProcess();
  empty.recovery->task_by_class.clear();
  empty.stalls->clear();
  empty.space->by_class.clear();
  const json e = empty;
  EXPECT_EQ(e["recovery"]["task_by_class"], json::object());
  EXPECT_EQ(e["stalls"], json::array());
  EXPECT_FALSE(e["space"].contains("by_class"));
}

TEST(SummaryTest, ADamagedSummaryIsRefusedNamingTheFileAndTheField) {
  const RunSummary s = InProcess();
  struct Case {
    std::string text, says;
  };
  const std::vector<Case> cases = {
      {"{not json", "'run/summary.json' is not JSON"},
      {"[1, 2]", "a JSON object is needed"},
      {With(s, "/tasks/completed", "many"),
       "field 'tasks.completed': a 64-bit integer is needed, not \"many\""},
      {With(s, "/steps", 1.5), "field 'steps': a 64-bit integer is needed, not 1.5"},
      {With(s, "/per_handler/0/busy_s", "slow"), "field 'per_handler[0].busy_s': a number"},
      {With(s, "/recovery/task_by_class/mb.m0/median_ms", true),
       "field 'recovery.task_by_class.mb.m0.median_ms'"},
      {With(s, "/stalls/0/steps_in_flight", json({1, 2, 3})),
       "field 'stalls[0].steps_in_flight': [first, end) is needed"},
      {With(s, "/space", 7), "field 'space': an object (a run's use of the space) or a string"},
      {With(s, "/test_accuracy", "high"), "field 'test_accuracy': a number is needed"},
      {With(s, "/version", "one"), "field 'version': an integer >= 0 is needed"},
  };
  for (const Case& c : cases) {
    const Status st = ParseError(c.text);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(st.message().find("run/summary.json"), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.ToString();
  }
  // A field every summary has, missing; a section's own field, missing.
  json j = s;
  j.erase("weights_sha256");
  EXPECT_NE(ParseError(j.dump()).message().find("field 'weights_sha256' is missing"),
            std::string::npos)
      << ParseError(j.dump()).ToString();
  j = s;
  j["controller"].erase("decisions");
  EXPECT_NE(ParseError(j.dump()).message().find("field 'controller.decisions' is missing"),
            std::string::npos);
}

TEST(SummaryTest, ANewerVersionIsRefusedAndAnOlderFileRead) {
  const Status newer = ParseError(With(InProcess(), "/version", kSummaryVersion + 1));
  EXPECT_EQ(newer.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(newer.message().find(fmt::format("'run/summary.json' is summary.json version {}; this "
                                             "acan reads versions up to {}",
                                             kSummaryVersion + 1, kSummaryVersion)),
            std::string::npos)
      << newer.ToString();
  // Before the field: the same layout, read as version 0 and written as the current one.
  json old = InProcess();
  old.erase("version");
  auto read = ParseSummary(old.dump(), "old/summary.json");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->version, 0);
  EXPECT_EQ(json::parse(SummaryText(*read))["version"], kSummaryVersion);
}

TEST(SummaryTest, OptionalFieldsStayOptionalAndUnknownOnesAreIgnored) {
  json j = Processes();
  j["a_field_from_later"] = {{"x", 1}};
  j["tasks"]["also_later"] = "y";
  auto s = ParseSummary(j.dump(), "summary.json");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->handlers.has_value());
  EXPECT_FALSE(s->per_handler.has_value());
  EXPECT_FALSE(s->accuracy.has_value());       // left out ...
  EXPECT_FALSE(s->test_accuracy.has_value());  // ... not null
  EXPECT_EQ(s->test_loss.value_or(std::nullopt), 0.45);
  EXPECT_FALSE(json(*s).contains("a_field_from_later"));
  // Null where stated so.
  auto in_process = ParseSummary(SummaryText(InProcess()), "summary.json");
  ASSERT_TRUE(in_process.ok());
  ASSERT_TRUE(in_process->accuracy.has_value());
  EXPECT_FALSE(in_process->accuracy->has_value());
}

TEST(SummaryTest, ReadAndWriteAFile) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("acan_summary_test_" + std::to_string(getpid())))
          .string();
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/summary.json";
  EXPECT_EQ(ReadSummary(path).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(WriteSummary(path, InProcess()).ok());
  auto s = ReadSummary(path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(SummaryText(*s), SummaryText(InProcess()));
  std::ofstream(path) << "{\"version\": 1}";
  EXPECT_NE(ReadSummary(path).status().message().find(path), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace acan::runtime
