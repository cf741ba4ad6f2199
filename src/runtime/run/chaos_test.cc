// Quick chaos runs (label: chaos): handlers and the manager crash every few steps and speeds
// change (intervals in steps, so a sanitizer build or a busy machine sees the same regime), yet
// with window 1 the weights are bitwise those of the reference, the versions have no gap and no
// repeat, training converges, and the space never holds more than the window, the handlers and
// the model allow.
#include <gtest/gtest.h>

#include "nn/executor.h"
#include "nn/model.h"
#include "nn/trainer.h"
#include "runtime/run/job_runner.h"
#include "runtime/testing/version_oracle.h"
#include "runtime/testing/watched_run.h"

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

JobConfig Job(const std::string& strategy, int64_t task_size, int64_t samples) {
  return ClassifierJob("64, 48, 4", 16, strategy, task_size, samples);
}

// The most a run may hold in the space at once, from the plan alone: W + 1 steps in flight, each
// with its inputs and, per task, a queued copy, a claim, a report and its outputs once for every
// copy that may run at the same time (the manager's and each handler's); W + 2 versions of each
// shard; the manager's state and lease, the handlers' alive tuples and a few restart notices.
// It depends on the window, the handlers and the model, not on how long the run is or how often
// anything crashes.
struct SpaceBound {
  std::map<std::string, int64_t> tuples;  // by key class
  int64_t tensor_bytes = 0;               // classes t, u and p together
};

SpaceBound BoundFor(const JobConfig& job, const nn::Dataset& data, int64_t task_size,
                    int64_t window, int handlers) {
  nn::Plan plan = *nn::Plan::Create(job, task_size, data.rows);
  nn::Batcher batcher(&data, nn::Plan::StepBatch(job, task_size, data.rows), false, 1);
  const int64_t rows = batcher.BatchRows(0);
  nn::Batch batch = batcher.Get(0);
  int64_t inputs = 0, input_bytes = 0, tensors = 0, proposals = 0, output_bytes = 0;
  for (const auto& [key, v] : plan.StepInputs(0, rows, batch.x, batch.t)) {
    ++inputs;
    input_bytes += int64_t(v.size() * sizeof(float));
  }
  const std::vector<nn::TaskSpec> tasks = plan.StepTasks(0, rows);
  for (const nn::TaskSpec& t : tasks) {
    for (const std::string& out : t.outputs) ++(nn::Plan::IsStateKey(out) ? proposals : tensors);
    for (int64_t n : nn::OutputSizes(t)) output_bytes += n * int64_t(sizeof(float));
  }
  int64_t shards = 0, shard_bytes = 0;
  for (const nn::ShardSpec& s : plan.shards()) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    const int copies = s.momentum_key.empty() ? 1 : 2;
    shards += copies;
    shard_bytes += copies * n * int64_t(sizeof(float));
  }
  const int64_t steps = window + 1, copies = handlers + 1, T = int64_t(tasks.size());
  SpaceBound b;
  b.tuples["task"] = steps * T * copies;
  b.tuples["claim"] = steps * T * copies;
  b.tuples["done"] = steps * T * copies + 4 * handlers;
  b.tuples["t"] = steps * (inputs + tensors * copies);
  b.tuples["u"] = steps * proposals * copies;
  b.tuples["p"] = shards * (window + 2);
  b.tuples["step"] = window + 2;
  b.tuples["m"] = 4;
  b.tuples["alive"] = handlers;
  b.tensor_bytes = steps * (input_bytes + copies * output_bytes) + (window + 2) * shard_bytes;
  return b;
}

// Peaks of the run's census against the bound, class by class.
void ExpectWithinBound(const Census& census, const SpaceBound& bound) {
  int64_t tensor_bytes = 0;
  for (const auto& [cls, c] : census.by_class) {
    auto it = bound.tuples.find(cls);
    ASSERT_NE(it, bound.tuples.end()) << "unexpected key class '" << cls << "'";
    EXPECT_LE(c.peak_tuples, it->second) << "class " << cls;
    if (cls == "t" || cls == "u" || cls == "p") tensor_bytes += c.peak_bytes;
  }
  EXPECT_LE(tensor_bytes, bound.tensor_bytes);
}

// A run of the chaos suite that hangs fails in minutes, with the stall reports in its log.
RunOptions ChaosRun() {
  RunOptions o;
  o.stall_floor = std::chrono::seconds(5);
  o.abort_after_stall = std::chrono::seconds(60);
  return o;
}

struct Case {
  std::string strategy;
  int64_t task_size;
  int64_t samples = 1536;  // enough steps to last several crash intervals
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.strategy << "/" << c.task_size; }

class ChaosTest : public ::testing::TestWithParam<Case> {};

TEST_P(ChaosTest, CrashesChangeTheCostNeverTheResult) {
  const Case c = GetParam();
  JobConfig job = Job(c.strategy, c.task_size, c.samples);
  const auto [data, init, reference] = ReferenceRun(job);

  RunOptions o = ChaosRun();
  o.handlers = 3;
  o.window = 1;
  o.lease = 60ms;
  o.manager_restart_delay = 10ms;
  o.handler_restart_delay = 5ms;
  o.controller.min_timeout = 5ms;
  o.chaos.speeds = {1, 2, 4};
  o.chaos.speed_change_steps = 8;
  o.chaos.crash_interval_steps = 8;
  o.chaos.crash_probability = 0.7;
  o.chaos.crash_manager = true;
  o.chaos.seed = 3;
  // The schedule's crashes may all land between tasks; this one loses tasks for certain: the run
  // has `tasks` first runs, so crashing each handler in every (tasks / 12)-th of its own leaves
  // at least 12 - 3 crashes however the work is shared out.
  const nn::Plan plan = *nn::Plan::Create(job, c.task_size, data.rows);
  nn::Batcher batcher(&data, nn::Plan::StepBatch(job, c.task_size, data.rows), false, 1);
  const int64_t tasks = int64_t(plan.StepTasks(0, batcher.BatchRows(0)).size()) *
                        batcher.BatchesPerEpoch() * job.train.epochs;
  RunHooks hooks;
  hooks.crash_in_task_every = std::max<int64_t>(2, tasks / (4 * o.handlers));
  auto r = RunWatched(job, data, init, o, hooks);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectWithinBound(r->census, BoundFor(job, data, c.task_size, o.window, o.handlers));
  // Tasks were lost, sent again, and redone.
  EXPECT_GT(r->progress.retransmitted, 0);
  EXPECT_FALSE(r->recovery.handler_ms.empty());
  EXPECT_EQ(nn::ModelSha256(r->model), reference);
  EXPECT_EQ(r->progress.gaps, 0);
  EXPECT_EQ(r->progress.repeats, 0);
  EXPECT_EQ(r->progress.versions_applied,
            int64_t(plan.shards().size()) * 2 * r->progress.total_steps);  // weights + velocity
  int64_t handler_crashes = 0;
  for (const auto& h : r->handlers) handler_crashes += h.crashes;
  EXPECT_GT(handler_crashes, 0);
  EXPECT_GT(r->manager_crashes, 0);
  ASSERT_EQ(r->progress.epochs.size(), 2u);
  auto mean = [](const EpochTotals& e) { return e.loss_sum / double(e.rows); };
  EXPECT_LT(mean(r->progress.epochs[1]), mean(r->progress.epochs[0]));
}

// A crashed handler's supervisor announces the death at once, so its claimed tasks go out again
// without waiting for a deadline: with timeouts of an hour the run still finishes, every
// retransmission was caused by a death or restart notice, and nothing else changes.
TEST(ChaosTest, DeathNoticesRetransmitWithoutWaitingForDeadlines) {
  JobConfig job = Job("data", 4, 1536);
  const auto [data, init, reference] = ReferenceRun(job);

  RunOptions o = ChaosRun();
  o.handlers = 3;
  o.window = 1;
  o.standby = false;
  o.handler_restart_delay = 5ms;
  o.controller.min_timeout = std::chrono::hours(1);
  o.controller.initial_timeout = std::chrono::hours(1);
  o.controller.max_timeout = std::chrono::hours(1);
  o.chaos.crash_interval_steps = 3;
  o.chaos.crash_probability = 1.0;
  o.chaos.crash_manager = false;
  o.chaos.seed = 8;
  RunHooks hooks;
  hooks.crash_in_task_every = 25;  // besides the schedule's: losses certain to happen
  auto r = RunWatched(job, data, init, o, hooks);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(nn::ModelSha256(r->model), reference);
  int64_t crashes = 0;
  for (const auto& h : r->handlers) crashes += h.crashes;
  EXPECT_GT(crashes, 0);
  for (const auto& [reason, n] : r->progress.retransmit_reasons) {
    EXPECT_TRUE(reason == "handler-died" || reason == "handler-restarted") << reason << ": " << n;
  }
  // Tasks were lost, and every one was sent again on a notice (mostly deaths; a restart notice
  // read first reports the same loss as a restart), none on a deadline.
  EXPECT_FALSE(r->recovery.handler_ms.empty());
  EXPECT_GE(r->progress.retransmit_reasons["handler-died"] +
                r->progress.retransmit_reasons["handler-restarted"],
            int64_t(r->recovery.handler_ms.size()));
  // Each lost task is measured against its class: the same task in the other steps.
  ASSERT_EQ(r->recovery.lost_classes.size(), r->recovery.handler_ms.size());
  for (const std::string& c : r->recovery.lost_classes) {
    EXPECT_TRUE(c == "mb.m0" || c == "mb.m1" || c == "mb.m2" || c == "mb.m3" ||
                c.starts_with("upd.l"))
        << c;
    EXPECT_GT(r->recovery.task_ms_by_class.count(c), 0u) << c;
  }
}

// Progress needs only that a manager outlive its recovery: every incarnation is killed (at
// whatever space call it is making then) once it has been active for 1.25 times its own recovery
// time, so it does little more than rebuild the steps in flight and send what is ready. The run
// still finishes, bitwise the reference, and no recovery costs more space calls than a bound
// drawn from the plan and the window, whatever step the run has reached.
TEST_P(ChaosTest, ManagerKilledRightAfterEveryRecoveryStillFinishes) {
  const Case c = GetParam();
  JobConfig job = Job(c.strategy, c.task_size, c.strategy == "chain" ? 512 : 128);
  job.train.epochs = 1;
  const auto [data, init, reference] = ReferenceRun(job);

  RunOptions o = ChaosRun();
  o.handlers = 2;
  o.window = 1;
  o.lease = 200ms;
  o.manager_restart_delay = 1ms;
  RunHooks hooks;
  hooks.kill_manager_after_recovery = 1.25;
  auto r = RunWatched(job, data, init, o, hooks);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(nn::ModelSha256(r->model), reference);
  EXPECT_EQ(r->progress.gaps, 0);
  EXPECT_EQ(r->progress.repeats, 0);
  // Every incarnation that recovered was killed, but the one that finished the job; and that
  // happened many times over the run.
  ASSERT_EQ(r->recovery.manager_recovery_calls.size(), r->recovery.manager_recovery_ms.size());
  EXPECT_EQ(r->manager_crashes + 1, int64_t(r->recovery.manager_recovery_ms.size()));
  EXPECT_GE(r->manager_crashes, r->progress.total_steps / 4);

  nn::Plan plan = *nn::Plan::Create(job, c.task_size, data.rows);
  nn::Batcher batcher(&data, nn::Plan::StepBatch(job, c.task_size, data.rows), false, 1);
  nn::Batch batch = batcher.Get(0);
  int64_t inputs = int64_t(plan.StepInputs(0, batcher.BatchRows(0), batch.x, batch.t).size());
  int64_t tasks = 0, outputs = 0;
  for (const nn::TaskSpec& t : plan.StepTasks(0, batcher.BatchRows(0))) {
    ++tasks;
    outputs += int64_t(t.outputs.size());
  }
  const int64_t shards = 2 * int64_t(plan.shards().size());  // weights and velocities
  // Loading the state and versions, the steps left open, and W + 2 steps (the one left open, the
  // ones in flight) at a few calls per input, task, output and claim, plus the lease.
  const int64_t bound =
      64 + 4 * shards * (o.window + 3) + (o.window + 2) * (4 * inputs + 8 * tasks + 4 * outputs);
  for (int64_t calls : r->recovery.manager_recovery_calls) EXPECT_LE(calls, bound);
}

// A run that cannot progress says so, again while it lasts, and can be told to give up: here no
// handler runs updates, so the first step waits for ever on its update tasks.
TEST(ChaosTest, AStalledRunReportsWhatIsInFlightAndGivesUp) {
  JobConfig job = Job("data", 4, 256);
  nn::Model init = *nn::InitialModel(job);
  nn::Dataset data = *nn::LoadDataset(job);
  RunOptions o;
  o.handlers = 2;
  o.capabilities.assign(2, {nn::TaskType::kForward, nn::TaskType::kActivation, nn::TaskType::kLoss,
                            nn::TaskType::kBackward});
  o.stall_floor = 200ms;
  o.abort_after_stall = 1000ms;
  std::vector<StallReport> reports;
  o.on_stall = [&](const StallReport& r) { reports.push_back(r); };
  auto r = RunJob(job, data, init, o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsTimeout()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("no step completed"), std::string::npos);
  ASSERT_GE(reports.size(), 2u);  // repeated while it lasts
  for (size_t i = 1; i < reports.size(); ++i) {
    EXPECT_GT(reports[i].stalled_s, reports[i - 1].stalled_s);
  }
  const StallReport& last = reports.back();
  EXPECT_EQ(last.flight.next_step, 0);
  EXPECT_EQ(last.flight.admitted, 2);  // step 0 and the one admitted ahead
  EXPECT_GE(last.manager_incarnations, 1);
  EXPECT_GT(last.flight.tasks_sent, 0);
  // The update tasks wait in the space, taken by nobody; their inputs are there.
  const auto updates = int64_t(nn::Plan::Create(job)->shards().size());
  EXPECT_GE(last.space.by_class.at("task").tuples, updates);
  EXPECT_GT(last.space.by_class.at("t").tuples, 0);
  EXPECT_NE(last.ToString().find("steps 0..1 in flight"), std::string::npos) << last.ToString();
}

// A handler fifty times slower than the other holds a task the window waits on: the manager sends
// one copy of it for the idle fast handler (runtime/core/straggler.h), the copy that comes second
// is a discarded duplicate, and nothing changes in the weights; with speculation off, no copy is
// sent and the weights are the same again.
TEST(ChaosTest, AStragglersTaskIsCopiedForAFasterIdleHandler) {
  JobConfig job = Job("data", 4, 512);
  const auto [data, init, reference] = ReferenceRun(job);
  for (bool speculate : {true, false}) {
    SCOPED_TRACE(speculate ? "speculating" : "not speculating");
    RunOptions o = ChaosRun();
    o.handlers = 2;
    o.window = 1;
    o.speculate = speculate;
    o.chaos.speeds = {1, 50};  // no speed changes: handler 0 at full speed, handler 1 slowed 50x
    o.controller.min_timeout = 300ms;  // no deadline passes: every copy is speculation's
    auto r = RunWatched(job, data, init, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(nn::ModelSha256(r->model), reference);
    EXPECT_EQ(r->progress.gaps, 0);
    EXPECT_EQ(r->progress.repeats, 0);
    EXPECT_EQ(r->progress.retransmitted, 0);  // nothing was lost
    EXPECT_EQ(r->progress.completed, r->progress.dispatched);
    if (speculate) {
      EXPECT_GT(r->progress.speculated, 0);
      EXPECT_GT(r->progress.duplicates_discarded, 0);
    } else {
      EXPECT_EQ(r->progress.speculated, 0);
    }
  }
}

// The adaptivity experiment judges handlers by their measured speed (experiments/adaptivity.cc): a
// handler's kernel time is its kernels' own, not stretched by the slow-down it waits out, while
// its busy time is; the rest of its tasks' time in hand (claims, reads, writes) is counted apart.
TEST(ChaosTest, AHandlersKernelTimeLeavesOutItsSlowDown) {
  JobConfig job = Job("data", 4, 256);
  const auto [data, init, reference] = ReferenceRun(job);
  RunOptions o = ChaosRun();
  o.handlers = 2;
  o.window = 1;
  o.chaos.speeds = {1, 8};  // no speed changes: handler 0 at full speed, handler 1 slowed 8x
  auto r = RunWatched(job, data, init, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(nn::ModelSha256(r->model), reference);
  ASSERT_EQ(r->handlers.size(), 2u);
  const HandlerFigures& fast = r->handlers[0];
  const HandlerFigures& slow = r->handlers[1];
  ASSERT_GT(fast.tasks, 0);
  ASSERT_GT(slow.tasks, 0);
  EXPECT_GT(fast.kernel_s, 0);
  EXPECT_LE(fast.kernel_s, fast.busy_s);
  EXPECT_GT(slow.kernel_s, 0);
  EXPECT_LE(slow.kernel_s * 4, slow.busy_s) << "slowed 8x, most of its busy time is waiting";
  EXPECT_GT(fast.io_s, 0);
  EXPECT_GT(slow.io_s, 0);
}

INSTANTIATE_TEST_SUITE_P(Strategies, ChaosTest,
                         ::testing::Values(Case{"data", 4}, Case{"tiles", 16}, Case{"pipeline", 8},
                                           Case{"chain", 2, 3072}),
                         [](const auto& info) { return info.param.strategy; });

}  // namespace
}  // namespace acan::runtime
