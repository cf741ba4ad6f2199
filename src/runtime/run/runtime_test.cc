// The runtime against the reference trainer: with window 1 the distributed run ends with bitwise
// the reference weights, fault-free, under dropped, duplicated and delayed tuples, with a killed
// manager, and with MIMD handlers.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "nn/model.h"
#include "nn/trainer.h"
#include "runtime/audit/audit.h"
#include "runtime/run/job_runner.h"
#include "runtime/testing/watched_run.h"
#include "space/testing/fault_space.h"

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

JobConfig Job(const std::string& strategy, int64_t samples = 24, int64_t batch = 1,
              int64_t task_size = 0, const std::string& extra = "") {
  std::string text = R"(
[model]
layers = [44, 44, 1]
activation = "tanh"
loss = "mse"
[data]
source = "synthetic"
samples = )" + std::to_string(samples) +
                     R"(
[train]
epochs = 2
batch = )" + std::to_string(batch) +
                     R"(
lr = 0.05
seed = 7
[partition]
strategy = ")" + strategy +
                     R"("
task_size = )" + std::to_string(task_size) +
                     "\n" + extra;
  auto job = ParseJobString(text);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return *job;
}

struct Expected {
  nn::Model model;
  std::string sha;
};

Expected RunReference(const JobConfig& job, const nn::Model& init, const nn::Dataset& data) {
  auto trainer = nn::ReferenceTrainer::Create(job, init, data);
  EXPECT_TRUE(trainer.ok()) << trainer.status().ToString();
  auto epochs = (*trainer)->Train();
  EXPECT_TRUE(epochs.ok()) << epochs.status().ToString();
  nn::Model m = (*trainer)->CurrentModel();
  return {m, nn::ModelSha256(m)};
}

// A job, its initial model and data, and what the reference trainer makes of them.
struct Prepared {
  explicit Prepared(JobConfig j)
      : job(std::move(j)),
        init(*nn::InitialModel(job)),
        data(*nn::LoadDataset(job)),
        ref(RunReference(job, init, data)) {}
  JobConfig job;
  nn::Model init;
  nn::Dataset data;
  Expected ref;
};

// Every run these tests make is also held to exactly-once by the oracle
// (runtime/testing/watched_run.h).
RunResult RunDistributed(const JobConfig& job, const nn::Model& init, const nn::Dataset& data,
                         RunOptions options, const RunHooks& hooks = {}) {
  auto r = RunWatched(job, data, init, options, hooks);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : RunResult{};
}

void ExpectInvariants(const RunResult& r, const JobConfig& job) {
  auto plan = nn::Plan::Create(job);
  int64_t state_keys = 0;
  for (const auto& s : plan->shards()) state_keys += s.momentum_key.empty() ? 1 : 2;
  EXPECT_EQ(r.progress.gaps, 0);
  EXPECT_EQ(r.progress.repeats, 0);
  EXPECT_EQ(r.progress.versions_applied, state_keys * r.progress.total_steps);
  EXPECT_TRUE(r.progress.finished);
}

class RuntimeStrategyTest : public ::testing::TestWithParam<std::pair<std::string, int64_t>> {};

TEST_P(RuntimeStrategyTest, WindowOneIsBitwiseTheReference) {
  auto [strategy, task_size] = GetParam();
  Prepared setup(Job(strategy, 24, 4, task_size));
  auto& [job, init, data, ref] = setup;
  RunOptions o;
  o.handlers = 3;
  o.window = 1;
  // Generous: a handler preempted for long on this loaded machine must not look lost.
  o.controller.min_timeout = std::chrono::milliseconds(300);
  RunResult r = RunDistributed(job, init, data, o);
  EXPECT_EQ(nn::ModelSha256(r.model), ref.sha);
  ExpectInvariants(r, job);
  EXPECT_EQ(r.progress.retransmitted, 0);
  EXPECT_EQ(r.progress.completed, r.progress.dispatched);
}

INSTANTIATE_TEST_SUITE_P(Strategies, RuntimeStrategyTest,
                         ::testing::Values(std::pair{"data", 0}, std::pair{"data", 2},
                                           std::pair{"tiles", 16}, std::pair{"pipeline", 0},
                                           std::pair{"chain", 3}, std::pair{"chain", 0}));

RunResult RunWithFaults(const JobConfig& job, const nn::Model& init, const nn::Dataset& data,
                        FaultOptions faults, std::shared_ptr<FaultCounts> counts) {
  RunOptions o;
  o.handlers = 3;
  o.controller.min_timeout = 150ms;  // far above any task here: no spurious retransmission
  o.controller.initial_timeout = 300ms;
  RunHooks hooks;
  hooks.wrap_space = [=](std::unique_ptr<Space> inner) -> std::unique_ptr<Space> {
    return std::make_unique<FaultSpace>(std::move(inner), faults, counts);
  };
  return RunDistributed(job, init, data, o, hooks);
}

TEST(RuntimeTest, EveryLostTupleIsRetransmittedOnce) {
  Prepared setup(Job("tiles", 12, 2, 16));
  auto& [job, init, data, ref] = setup;
  auto counts = std::make_shared<FaultCounts>();
  FaultOptions f;
  f.patterns = {"job.task.>", "job.done.>"};
  f.drop = 0.04;
  f.seed = 5;
  RunResult r = RunWithFaults(job, init, data, f, counts);
  EXPECT_EQ(nn::ModelSha256(r.model), ref.sha);
  ExpectInvariants(r, job);
  ASSERT_GT(counts->dropped.load(), 0);
  EXPECT_EQ(r.progress.retransmitted, counts->dropped.load());
  EXPECT_EQ(r.progress.retransmit_reasons["timeout"], counts->dropped.load());
}

TEST(RuntimeTest, DropsDuplicatesAndDelaysChangeTheCostNeverTheResult) {
  Prepared setup(Job("tiles", 12, 2, 16));
  auto& [job, init, data, ref] = setup;
  auto counts = std::make_shared<FaultCounts>();
  FaultOptions f;
  f.patterns = {"job.task.>", "job.done.>"};
  f.drop = 0.03;
  f.duplicate = 0.05;
  f.delay = 0.05;
  f.delay_by = 3ms;
  f.seed = 11;
  RunResult r = RunWithFaults(job, init, data, f, counts);
  EXPECT_EQ(nn::ModelSha256(r.model), ref.sha);
  ExpectInvariants(r, job);
  ASSERT_GT(counts->duplicated.load(), 0);
  ASSERT_GT(counts->delayed.load(), 0);
  EXPECT_GT(r.progress.duplicates_discarded, 0);
  // A drop is masked when a duplicate of the same tuple got through; otherwise it costs one
  // retransmission.
  EXPECT_LE(r.progress.retransmitted, counts->dropped.load());
  EXPECT_GE(r.progress.retransmitted, counts->dropped.load() - counts->duplicated.load());
}

TEST(RuntimeTest, KilledManagerIsReplacedAndTheResultIsUnchanged) {
  Prepared setup(Job("data", 24, 2, 0));
  auto& [job, init, data, ref] = setup;
  for (bool standby : {true, false}) {
    RunOptions o;
    o.handlers = 2;
    o.lease = 100ms;
    o.standby = standby;
    RunHooks hooks;
    hooks.kill_manager_after_step = 7;
    // With a standby, the killed one comes back too late: the standby must take over.
    o.manager_restart_delay = standby ? 400ms : 10ms;
    RunResult r = RunDistributed(job, init, data, o, hooks);
    EXPECT_EQ(nn::ModelSha256(r.model), ref.sha) << "standby " << standby;
    ExpectInvariants(r, job);
    EXPECT_EQ(r.manager_crashes, 1);
    EXPECT_EQ(r.progress.manager_takeovers, standby ? 1 : 0);
  }
}

// A manager killed after it applied the last step, before its job_end was in the audit chain:
// its successor finds the job finished and ends the chain, which then verifies with the model.
TEST(RuntimeTest, AManagerKilledAfterTheLastStepLeavesTheChainEnded) {
  Prepared setup(Job("data", 24, 2, 0));
  auto& [job, init, data, ref] = setup;
  RunOptions o;
  o.handlers = 2;
  o.lease = 100ms;
  o.manager_restart_delay = 10ms;
  RunHooks hooks;
  hooks.kill_manager_after_step = 24;  // 12 steps an epoch, 2 epochs: the last one applied
  RunResult r = RunDistributed(job, init, data, o, hooks);
  EXPECT_EQ(nn::ModelSha256(r.model), ref.sha);
  ASSERT_EQ(r.manager_crashes, 1) << "the manager was not killed: the test proved nothing";
  ASSERT_FALSE(r.audit.empty());
  EXPECT_EQ(nlohmann::json::parse(r.audit.back())["kind"], "job_end");
  AuditVerifyOptions check;
  check.model_sha256 = ref.sha;
  const AuditVerdict verdict = VerifyAuditLines(r.audit, check);
  EXPECT_TRUE(verdict.ok) << "line " << verdict.line << ": " << verdict.problem;
}

TEST(RuntimeTest, MimdHandlersRunDifferentTaskTypes) {
  Prepared setup(Job("tiles", 12, 3, 16));
  auto& [job, init, data, ref] = setup;
  RunOptions o;
  o.handlers = 3;
  using T = nn::TaskType;
  o.capabilities = {{T::kForward, T::kActivation}, {T::kLoss, T::kBackward}, {T::kUpdate}};
  // Generous, so no update runs twice even on a loaded machine (the count below is exact).
  o.controller.min_timeout = std::chrono::milliseconds(300);
  RunResult r = RunDistributed(job, init, data, o);
  EXPECT_EQ(nn::ModelSha256(r.model), ref.sha);
  ExpectInvariants(r, job);
  EXPECT_GT(r.handlers[2].tasks, 0);
  EXPECT_EQ(r.handlers[2].tasks, r.progress.by_type["update"]);
}

TEST(RuntimeTest, LargerWindowConverges) {
  JobConfig job = Job("data", 100, 1, 0);
  nn::Model init = *nn::InitialModel(job);
  nn::Dataset data = *nn::LoadDataset(job);
  RunOptions o;
  o.handlers = 4;
  o.window = 4;
  RunResult r = RunDistributed(job, init, data, o);
  ExpectInvariants(r, job);
  ASSERT_EQ(r.progress.epochs.size(), 2u);
  double first = r.progress.epochs[0].loss_sum / double(r.progress.epochs[0].rows);
  double second = r.progress.epochs[1].loss_sum / double(r.progress.epochs[1].rows);
  EXPECT_LT(second, first);
}

// A window above 1 with several steps' tasks in the space at once: lost, duplicated and late task
// tuples lose nothing: every version is applied once, none twice, and the loss falls.
TEST(RuntimeTest, LargerWindowUnderTaskFaults) {
  JobConfig job = Job("data", 100, 2, 0);
  nn::Model init = *nn::InitialModel(job);
  nn::Dataset data = *nn::LoadDataset(job);
  auto counts = std::make_shared<FaultCounts>();
  FaultOptions f;
  f.patterns = {"job.task.>"};
  f.drop = 0.03;
  f.duplicate = 0.03;
  f.delay = 0.03;
  f.seed = 5;
  RunOptions o;
  o.handlers = 4;
  o.window = 4;
  o.controller.min_timeout = 150ms;
  o.controller.initial_timeout = 300ms;
  RunHooks hooks;
  hooks.wrap_space = [=](std::unique_ptr<Space> inner) -> std::unique_ptr<Space> {
    return std::make_unique<FaultSpace>(std::move(inner), f, counts);
  };
  RunResult r = RunDistributed(job, init, data, o, hooks);
  ExpectInvariants(r, job);
  EXPECT_GT(counts->dropped.load() + counts->duplicated.load() + counts->delayed.load(), 0);
  ASSERT_EQ(r.progress.epochs.size(), 2u);
  EXPECT_LT(r.progress.epochs[1].loss_sum / double(r.progress.epochs[1].rows),
            r.progress.epochs[0].loss_sum / double(r.progress.epochs[0].rows));
}

// trace.json: one slice per task execution on its handler's lane, the lanes named, valid JSON.
// A task that writes several shards (a chain; any update with momentum) whose proposal for one of
// them is lost is run again, reading the version it advances of every shard, including those
// already applied: they must still be there.
TEST(RuntimeTest, LostProposalsOfMultiShardTasksAreRunAgain) {
  for (const auto& [strategy, task_size] : {std::pair{"chain", 3}, std::pair{"data", 0}}) {
    SCOPED_TRACE(strategy);
    JobConfig job = Job(strategy, 24, 2, task_size);
    job.train.momentum = 0.5;
    Prepared setup(job);
    auto counts = std::make_shared<FaultCounts>();
    FaultOptions f;
    f.patterns = {"job.u.>"};
    f.drop = 0.1;
    f.seed = 3;
    RunResult r = RunWithFaults(setup.job, setup.init, setup.data, f, counts);
    EXPECT_EQ(nn::ModelSha256(r.model), setup.ref.sha);
    ExpectInvariants(r, setup.job);
    EXPECT_GT(counts->dropped.load(), 0);
    EXPECT_GT(r.progress.retransmit_reasons["lost-result"], 0);
    EXPECT_LE(r.progress.retransmit_reasons["lost-result"], counts->dropped.load());
  }
}

// Each slice's span is where its work happened: a handler's slice lasts at least its task's read
// and kernel time, the slices of one lane (one thread) follow one another without overlapping,
// and every slice lies within the time the run took.
TEST(RuntimeTest, TraceHasASlicePerTaskOnItsHandlersLane) {
  Prepared setup(Job("data", 8, 2, 4));
  auto& [job, init, data, ref] = setup;
  RunOptions o;
  o.handlers = 2;
  o.standby = false;
  o.controller.min_timeout = std::chrono::milliseconds(300);
  const auto before = Clock::now();
  o.trace = std::make_shared<TraceRecorder>();
  RunResult r = RunDistributed(job, init, data, o);
  const double run_us = std::chrono::duration<double, std::micro>(Clock::now() - before).count();
  ASSERT_TRUE(r.trace);
  auto j = nlohmann::json::parse(r.trace->ToJson(2));
  std::map<int, int64_t> slices;
  std::map<int, std::vector<std::pair<double, double>>> spans;  // by lane: [ts, ts + dur] in us
  std::set<std::string> lanes;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "X") {
      const int lane = e.at("tid").get<int>();
      slices[lane]++;
      const double ts = e.at("ts").get<double>(), dur = e.at("dur").get<double>();
      EXPECT_GT(dur, 0) << e.dump();
      EXPECT_GE(ts, 0) << e.dump();
      EXPECT_LE(ts + dur, run_us) << e.dump();
      spans[lane].emplace_back(ts, ts + dur);
      if (lane != TraceRecorder::kManagerLane) {
        const auto& args = e.at("args");
        const double read_ms = args.at("read_ms").get<double>();
        const double exec_ms = args.at("exec_ms").get<double>();
        EXPECT_GT(exec_ms, 0) << e.dump();
        // The slice runs from the take to the report: its read and its kernel are inside it
        // (1 ns for the rounding to microseconds).
        EXPECT_GE(dur + 1e-3, (read_ms + exec_ms) * 1e3) << e.dump();
      }
    }
    if (e.at("ph") == "M" && e.at("name") == "thread_name") lanes.insert(e["args"]["name"]);
  }
  EXPECT_EQ(lanes, (std::set<std::string>{"manager", "handler 0", "handler 1"}));
  EXPECT_GT(slices[TraceRecorder::kManagerLane], 0);  // admissions and done processing
  for (const auto& h : r.handlers) EXPECT_EQ(slices[TraceRecorder::HandlerLane(h.id)], h.tasks);
  for (auto& [lane, lane_spans] : spans) {
    std::sort(lane_spans.begin(), lane_spans.end());
    for (size_t i = 1; i < lane_spans.size(); ++i) {
      EXPECT_LE(lane_spans[i - 1].second, lane_spans[i].first + 1e-3)
          << "lane " << lane << ": slice " << i - 1 << " overlaps the next";
    }
  }
}

TEST(RuntimeTest, TraceIsBounded) {
  TraceRecorder trace(2);
  for (int i = 0; i < 3; ++i) trace.Instant(TraceRecorder::kManagerLane, "x", "test");
  EXPECT_EQ(trace.size(), 2u);
  EXPECT_EQ(trace.dropped(), 1);
  auto j = nlohmann::json::parse(trace.ToJson(0));
  EXPECT_EQ(j["otherData"]["dropped_events"], 1);
}

}  // namespace
}  // namespace acan::runtime
