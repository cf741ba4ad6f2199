// Every fault class on every key class, and crashes at every write (label: chaos): a run (an MLP,
// or a CNN cut into a pipeline) whose
// puts of one key class are dropped, duplicated, delayed or reordered, or whose manager or handler
// dies at its n-th write to the space, still ends with bitwise the reference weights at window 1,
// its versions checked by the independent oracle. Faults are drawn from (seed, key, attempt) and
// crashes from (seed, role, incarnation), so a failure replays from the seed it prints
// (ACAN_FAULT_SEED overrides the seed of every test here).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/chaos/chaos.h"
#include "runtime/testing/watched_run.h"
#include "space/space_wrapper.h"
#include "space/testing/fault_space.h"

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

JobConfig Job(const std::string& strategy, int64_t task_size, int64_t samples, int64_t epochs = 2) {
  return ClassifierJob("24, 16, 4", 8, strategy, task_size, samples, epochs);
}

// A small convolutional network (a list of layers with dropout) cut into a pipeline of its two
// weight layers (the list's stage, loss and update tasks in every cell of the matrix), or in
// tiles of one unit (a channel, a feature: the list's tile, activation, input-grad, loss and
// update tasks).
JobConfig CnnJob(int64_t samples, int64_t epochs = 2, const std::string& strategy = "pipeline") {
  auto job = ParseJobString(fmt::format(R"([model]
input_shape = [1, 6, 6]
loss = "softmax_cross_entropy"
[[model.layer]]
type = "conv2d"
in_channels = 1
out_channels = 2
kernel_size = 3
padding = 1
[[model.layer]]
type = "relu"
[[model.layer]]
type = "max_pool2d"
kernel_size = 2
[[model.layer]]
type = "flatten"
[[model.layer]]
type = "dropout"
p = 0.25
[[model.layer]]
type = "linear"
in_features = 18
out_features = 4
[data]
source = "synthetic"
samples = {}
[train]
epochs = {}
batch = 8
lr = 0.05
momentum = 0.9
[partition]
strategy = "{}"
task_size = {}
)",
                                        samples, epochs, strategy, strategy == "tiles" ? 1 : 4),
                            "cnn");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return *job;
}

uint64_t SeedOr(uint64_t fallback) {
  const char* env = std::getenv("ACAN_FAULT_SEED");
  return env ? std::strtoull(env, nullptr, 10) : fallback;
}

// Short timeouts (a spurious retransmission costs time, never the result), a short lease (many
// lease writes to hit), and a run that stalls fails in a minute instead of hanging.
RunOptions FaultyRun() {
  RunOptions o;
  o.handlers = 3;
  o.window = 1;
  o.lease = 60ms;
  o.manager_restart_delay = 5ms;
  o.handler_restart_delay = 2ms;
  o.controller.min_timeout = 40ms;
  o.controller.initial_timeout = 80ms;
  o.stall_floor = 5s;
  o.abort_after_stall = 60s;
  return o;
}

struct Class {
  const char* name;
  const char* pattern;
  double rate;  // a few hits per run: the classes put once a step or less get a higher rate
  // A lost one is made good by running something again (a task, report, tensor or proposal);
  // the others cost no task (the manager's own writes are read back and made again).
  bool loss_costs_a_task;
};
const Class kClasses[] = {
    {"tasks", "job.task.>", 0.05, true},          {"step_tensors", "job.t.>", 0.05, true},
    {"versions", "job.p.>", 0.2, false},          {"proposals", "job.u.>", 0.1, true},
    {"done_reports", "job.done.>", 0.05, true},   {"claims", "job.claim.>", 0.05, false},
    {"alive", "job.alive.>", 0.5, false},         {"step_markers", "job.step.>", 0.3, false},
    {"manager_state", "job.m.state", 0.3, false}, {"lease", "job.m.lease", 0.3, false},
};
const Fault kFaults[] = {Fault::kDrop, Fault::kDuplicate, Fault::kDelay, Fault::kReorder};

const char* FaultName(Fault f) {
  switch (f) {
    case Fault::kDrop:
      return "drop";
    case Fault::kDuplicate:
      return "duplicate";
    case Fault::kDelay:
      return "delay";
    case Fault::kReorder:
      return "reorder";
    default:
      return "none";
  }
}

// A cell: the key class, the fault, and the job: "mlp" (an MLP's data strategy), or a CNN's
// "pipeline" or "tiles".
using Cell = std::tuple<Class, Fault, const char*>;
class FaultMatrixTest : public ::testing::TestWithParam<Cell> {};

TEST_P(FaultMatrixTest, ChangesTheCostNeverTheResult) {
  const auto& [cls, fault, kind] = GetParam();
  const bool cnn = std::string(kind) != "mlp";
  const uint64_t seed = SeedOr(7);
  SCOPED_TRACE(fmt::format("{} of {} ({}), seed {} (ACAN_FAULT_SEED={} replays it)",
                           FaultName(fault), cls.name, kind, seed, seed));
  const bool lease = std::string(cls.name) == "lease";
  // The lease is renewed every third of it: a run of some length gives it a few dozen puts.
  JobConfig job = cnn ? CnnJob(lease ? 320 : 64, 2, kind) : Job("data", 4, lease ? 320 : 64);
  const Reference ref = ReferenceRun(job);
  FaultOptions f;
  f.patterns = {cls.pattern};
  f.seed = seed;
  f.delay_by = 3ms;
  (fault == Fault::kDrop        ? f.drop
   : fault == Fault::kDuplicate ? f.duplicate
   : fault == Fault::kDelay     ? f.delay
                                : f.reorder) = cls.rate;
  auto counts = std::make_shared<FaultCounts>();
  RunHooks hooks;
  // Handlers crash now and then, so that alive tuples and restart notices are put more than once.
  hooks.crash_in_task_every = 40;
  hooks.wrap_space = [&](std::unique_ptr<Space> inner) -> std::unique_ptr<Space> {
    return std::make_unique<FaultSpace>(std::move(inner), f, counts);
  };
  RunOptions o = FaultyRun();
  if (lease) o.lease = 20ms;
  auto r = RunWatched(job, ref.data, ref.init, o, hooks);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(nn::ModelSha256(r->model), ref.weights);
  EXPECT_TRUE(r->progress.finished);
  ASSERT_GT(counts->total(), 0) << "no fault was injected: the test proved nothing";
  if (fault == Fault::kDrop && cls.loss_costs_a_task) {
    EXPECT_GT(r->progress.retransmitted, 0);
  }
  std::printf("[ fault    ] %-9s %-13s %-4s injected %3lld, retransmitted %3lld (%s)\n",
              FaultName(fault), cls.name, kind, static_cast<long long>(counts->total()),
              static_cast<long long>(r->progress.retransmitted),
              [&] {
                std::string reasons;
                for (const auto& [why, n] : r->progress.retransmit_reasons) {
                  reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", why, n);
                }
                return reasons;
              }()
                  .c_str());
}

std::string CellName(const ::testing::TestParamInfo<Cell>& info) {
  return std::string(std::get<0>(info.param).name) + "_" + FaultName(std::get<1>(info.param));
}
INSTANTIATE_TEST_SUITE_P(EveryClass, FaultMatrixTest,
                         ::testing::Combine(::testing::ValuesIn(kClasses),
                                            ::testing::ValuesIn(kFaults), ::testing::Values("mlp")),
                         CellName);
INSTANTIATE_TEST_SUITE_P(EveryClassOnACnnPipeline, FaultMatrixTest,
                         ::testing::Combine(::testing::ValuesIn(kClasses),
                                            ::testing::ValuesIn(kFaults),
                                            ::testing::Values("pipeline")),
                         CellName);
INSTANTIATE_TEST_SUITE_P(EveryClassOnCnnTiles, FaultMatrixTest,
                         ::testing::Combine(::testing::ValuesIn(kClasses),
                                            ::testing::ValuesIn(kFaults),
                                            ::testing::Values("tiles")),
                         CellName);

// A handler's outputs (step tensors, proposals) stored with bytes that are not their writer's, as
// a forged chunk leaves them over NATS (only handlers' values can be forged so: a manager's
// chunks are out of a handler's reach): every read and take refuses them (IsTampered); the
// manager takes them out, records each in the audit log and has them made again, and the weights
// are bitwise the reference's.
class TamperTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TamperTest, RefusedValuesAreMadeAgainNeverUsed) {
  const uint64_t seed = SeedOr(11);
  SCOPED_TRACE(
      fmt::format("{} tampered, seed {} (ACAN_FAULT_SEED={} replays it)", GetParam(), seed, seed));
  for (const char* strategy : {"data", "tiles", "cnn"}) {  // cnn: a CNN's pipeline
    SCOPED_TRACE(strategy);
    JobConfig job = std::string(strategy) == "cnn" ? CnnJob(64) : Job(strategy, 4, 64);
    const Reference ref = ReferenceRun(job);
    FaultOptions f;
    f.patterns = {GetParam()};
    f.seed = seed;
    f.tamper = 0.05;
    auto counts = std::make_shared<FaultCounts>();
    RunHooks hooks;
    hooks.wrap_space = [&](std::unique_ptr<Space> inner) -> std::unique_ptr<Space> {
      return std::make_unique<FaultSpace>(std::move(inner), f, counts);
    };
    auto r = RunWatched(job, ref.data, ref.init, FaultyRun(), hooks);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(nn::ModelSha256(r->model), ref.weights);
    ASSERT_GT(counts->tampered.load(), 0) << "nothing was tampered with: the test proved nothing";
    // Each refused output the manager saw is recorded (a handler that found one reports it
    // missing, and the manager looks), and only what was forged: every record names a key whose
    // put the fault space tampered with.
    EXPECT_GT(r->progress.tampered, 0);
    int64_t records = 0, leases = 0;
    for (const std::string& line : r->audit) {
      const nlohmann::json record = nlohmann::json::parse(line);
      const std::string kind = record.at("kind").get<std::string>();
      leases += kind == "lease";
      if (kind != "tampering") continue;
      ++records;
      const std::string key = record.at("key").get<std::string>();
      EXPECT_TRUE(counts->WasTampered(key)) << key << " was refused but never tampered with";
    }
    if (leases == 1) {
      EXPECT_EQ(records, r->progress.tampered);
    } else {
      // A manager held up past its lease (a slow, busy machine) gave way to another: what it
      // refused after its last saved state is in the audit log but not in the count it saved.
      EXPECT_LE(r->progress.tampered, records) << leases << " managers held the lease";
    }
    std::printf(
        "[ tamper   ] %-10s %-6s tampered %3lld, refused by the manager %3lld, "
        "retransmitted %3lld, managers %lld\n",
        GetParam(), strategy, static_cast<long long>(counts->tampered.load()),
        static_cast<long long>(r->progress.tampered),
        static_cast<long long>(r->progress.retransmitted), static_cast<long long>(leases));
  }
}

INSTANTIATE_TEST_SUITE_P(HandlerValues, TamperTest, ::testing::Values("job.t.>", "job.u.>"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "job.t.>" ? "step_tensors"
                                                                       : "proposals";
                         });

// Every tuple at once (a purge of the tuple stream, a memory server restarted): what is not fenced
// (tasks, step tensors, proposals, reports, claims, alive tuples, step markers) is erased from the
// space every `every`-th done report, `times` times, while the versions, the manager's state and
// the lease stay. (Purged for good every few reports, a step with more tasks than that could
// never complete: the purges stop, as an attacker's or a restarting server's do.)
class PurgingSpace final : public SpaceWrapper {
 public:
  PurgingSpace(std::unique_ptr<Space> inner, int every, int times,
               std::shared_ptr<std::atomic<int64_t>> purges)
      : SpaceWrapper(inner.get()),
        owned_(std::move(inner)),
        every_(every),
        times_(times),
        purges_(std::move(purges)) {}
  using Space::Put;
  Status Put(Key key, Value value, Deadline deadline) override {
    const bool report = key.str().starts_with("job.done.");
    ACAN_RETURN_IF_ERROR(inner()->Put(std::move(key), std::move(value), deadline));
    if (report && ++reports_ % every_ == 0 && purges_->load() < times_) {
      purges_->fetch_add(1);
      for (const char* cls : {"task", "t", "u", "done", "claim", "alive", "step", "usage"}) {
        (void)inner()->Erase(Pattern::Parse(fmt::format("job.{}.>", cls)).value());
      }
    }
    return Status::Ok();
  }

 private:
  std::unique_ptr<Space> owned_;
  const int every_, times_;
  std::atomic<int64_t> reports_{0};
  std::shared_ptr<std::atomic<int64_t>> purges_;
};

TEST(PurgeTest, LosingEveryTupleAtOnceCostsTimeNeverTheResult) {
  const char* only = std::getenv("ACAN_PURGE_STRATEGY");
  for (const char* strategy : {"data", "tiles", "cnn"}) {  // cnn: a CNN's pipeline
    if (only != nullptr && std::string(only) != strategy) continue;
    SCOPED_TRACE(strategy);
    const std::string name = strategy;
    JobConfig job = name == "cnn" ? CnnJob(64) : Job(strategy, 4, 64);
    const Reference ref = ReferenceRun(job);
    auto purges = std::make_shared<std::atomic<int64_t>>(0);
    RunHooks hooks;
    hooks.wrap_space = [&](std::unique_ptr<Space> inner) -> std::unique_ptr<Space> {
      // A step's worth of reports or so apart: about 5 (data), 14 (the CNN's pipeline: two
      // micro-batches of two stages each way and a loss, four updates) and 30 (tiles) tasks a
      // step.
      return std::make_unique<PurgingSpace>(std::move(inner),
                                            name == "data"  ? 8
                                            : name == "cnn" ? 16
                                                            : 40,
                                            6, purges);
    };
    auto r = RunWatched(job, ref.data, ref.init, FaultyRun(), hooks);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(nn::ModelSha256(r->model), ref.weights);
    EXPECT_GE(purges->load(), 6) << "the space was hardly purged: the test proved little";
    std::printf("[ purge    ] %-6s purged %lld times, retransmitted %lld\n", strategy,
                static_cast<long long>(purges->load()),
                static_cast<long long>(r->progress.retransmitted));
  }
}

// The manager's first incarnation dies at its n-th write, for every n over its recovery and its
// first steps: after a take (the reports it took are lost with it), before a version write,
// between two shards of one update, before and after saving its state, in its clean-up. The
// next one resumes from the space.
TEST(CrashPointTest, AManagerDyingAtAnyWriteChangesNothing) {
  JobConfig job = Job("data", 8, 32, 1);
  const Reference ref = ReferenceRun(job);
  RunOptions o = FaultyRun();
  o.standby = false;
  int64_t crashes = 0;
  for (int64_t n = 1; n <= 90; ++n) {
    SCOPED_TRACE(fmt::format("manager dies at its write {}", n));
    RunHooks hooks;
    hooks.manager_crash_at = [n](int, int64_t incarnation) { return incarnation == 1 ? n : 0; };
    auto r = RunWatched(job, ref.data, ref.init, o, hooks);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(nn::ModelSha256(r->model), ref.weights);
    crashes += r->manager_crashes;
  }
  EXPECT_EQ(crashes, 90);  // every one of them died where it was told to
}

void HandlerDyingAtAnyWrite(const JobConfig& job) {
  const Reference ref = ReferenceRun(job);
  RunOptions o = FaultyRun();
  o.handlers = 1;  // it makes every write of the run's tasks, so it surely reaches its n-th
  int64_t crashes = 0;
  for (int64_t n = 1; n <= 40; ++n) {
    SCOPED_TRACE(fmt::format("handler 0 dies at its write {}", n));
    RunHooks hooks;
    hooks.handler_crash_at = [n](int h, int64_t incarnation) {
      return h == 0 && incarnation == 1 ? n : 0;
    };
    auto r = RunWatched(job, ref.data, ref.init, o, hooks);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(nn::ModelSha256(r->model), ref.weights);
    crashes += r->handlers[0].crashes;
  }
  EXPECT_EQ(crashes, 40);
}

// The same for a handler: at its n-th write it may have taken tasks, claimed one, written some
// outputs or its report, or taken its claim back; on an MLP's micro-batches and on a CNN's
// pipeline stages.
TEST(CrashPointTest, AHandlerDyingAtAnyWriteChangesNothing) {
  for (const bool cnn : {false, true}) {
    SCOPED_TRACE(cnn ? "a CNN's pipeline" : "an MLP's data strategy");
    HandlerDyingAtAnyWrite(cnn ? CnnJob(32, 1) : Job("data", 8, 32, 1));
  }
}

TEST(CrashPointTest, APointDependsOnTheSeedRoleAndIncarnationOnly) {
  std::set<int64_t> seen;
  for (int64_t i = 1; i <= 200; ++i) {
    const int64_t p = CrashPoint(3, 1, i, 50);
    EXPECT_EQ(p, CrashPoint(3, 1, i, 50));
    EXPECT_GE(p, 1);
    EXPECT_LE(p, 50);
    seen.insert(p);
  }
  EXPECT_GT(seen.size(), 30u);
  EXPECT_NE(CrashPoint(3, 1, 1, 1000), CrashPoint(4, 1, 1, 1000));
}

// A manager paused past its lease (a SIGSTOP, a long GC pause) while the standby takes over:
// when it resumes, it finds its lease gone and writes nothing more; every version lands once.
TEST(CrashPointTest, APausedManagerIsFencedOffWhenItResumes) {
  JobConfig job = Job("data", 8, 64);
  const Reference ref = ReferenceRun(job);
  RunOptions o = FaultyRun();
  RunHooks hooks;
  hooks.pause_manager_after_step = 3;
  hooks.pause_manager_for = 10 * o.lease;
  int64_t copies = -1;
  auto r = RunWatched(job, ref.data, ref.init, o, hooks, &copies);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(nn::ModelSha256(r->model), ref.weights);
  EXPECT_GE(r->progress.manager_takeovers, 1);  // the standby took over while it slept
  EXPECT_EQ(copies, 0);                         // and the sleeper wrote no version again
}

// A sweep of seeds per strategy and window: every key class faulty at once (drops, duplicates,
// delays and reorders of every put), managers and handlers dying at writes drawn from the same
// seed. ACAN_SOAK_SEEDS seeds from ACAN_FAULT_SEED (default 1); 2 in CI's chaos label, hundreds in
// the soak label's run of the same test. At window 1 every seed must give the reference weights;
// at any window the oracle holds every run to exactly-once.
struct SweepCase {
  std::string strategy;
  int64_t task_size;
  int64_t window;
};
void PrintTo(const SweepCase& c, std::ostream* os) {
  *os << c.strategy << "/" << c.task_size << "/w" << c.window;
}
class FaultSweepTest : public ::testing::TestWithParam<SweepCase> {};

TEST_P(FaultSweepTest, EverySeedChangesTheCostNeverTheResult) {
  const SweepCase c = GetParam();
  const char* env = std::getenv("ACAN_SOAK_SEEDS");
  const int64_t seeds = env ? std::strtoll(env, nullptr, 10) : 2;
  const uint64_t first = SeedOr(1);
  JobConfig job = Job(c.strategy, c.task_size, 48);
  const Reference ref = ReferenceRun(job);
  RunOptions o = FaultyRun();
  o.window = c.window;
  FaultCounts total;
  int64_t retransmitted = 0, manager_crashes = 0, handler_crashes = 0;
  const auto start = Clock::now();
  for (uint64_t seed = first; seed < first + uint64_t(seeds); ++seed) {
    SCOPED_TRACE(
        fmt::format("seed {} (ACAN_FAULT_SEED={} ACAN_SOAK_SEEDS=1 replays it)", seed, seed));
    FaultOptions f;
    f.drop = f.duplicate = f.delay = f.reorder = 0.01;
    f.delay_by = 2ms;
    f.seed = seed;
    auto counts = std::make_shared<FaultCounts>();
    RunHooks hooks = RunHooks::SeededCrashes(seed, 150, 40, 2);
    hooks.wrap_space = [&](std::unique_ptr<Space> inner) -> std::unique_ptr<Space> {
      return std::make_unique<FaultSpace>(std::move(inner), f, counts);
    };
    auto r = RunWatched(job, ref.data, ref.init, o, hooks);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(r->progress.finished);
    if (c.window == 1) {
      ASSERT_EQ(nn::ModelSha256(r->model), ref.weights);
    }
    total.dropped += counts->dropped;
    total.duplicated += counts->duplicated;
    total.delayed += counts->delayed;
    total.reordered += counts->reordered;
    retransmitted += r->progress.retransmitted;
    manager_crashes += r->manager_crashes;
    for (const auto& h : r->handlers) handler_crashes += h.crashes;
  }
  std::printf(
      "[ sweep    ] %s/%lld w%lld: %lld seeds from %llu in %.1f s; faults: %lld dropped, %lld "
      "duplicated, %lld delayed, %lld reordered; %lld retransmissions; crashes: %lld manager, "
      "%lld handler\n",
      c.strategy.c_str(), static_cast<long long>(c.task_size), static_cast<long long>(c.window),
      static_cast<long long>(seeds), static_cast<unsigned long long>(first),
      std::chrono::duration<double>(Clock::now() - start).count(),
      static_cast<long long>(total.dropped.load()), static_cast<long long>(total.duplicated.load()),
      static_cast<long long>(total.delayed.load()), static_cast<long long>(total.reordered.load()),
      static_cast<long long>(retransmitted), static_cast<long long>(manager_crashes),
      static_cast<long long>(handler_crashes));
  EXPECT_GT(total.total(), 0);
  EXPECT_GT(manager_crashes + handler_crashes, 0);
}

INSTANTIATE_TEST_SUITE_P(Strategies, FaultSweepTest,
                         ::testing::Values(SweepCase{"data", 4, 1}, SweepCase{"data", 4, 2},
                                           SweepCase{"tiles", 8, 1}, SweepCase{"tiles", 8, 2},
                                           SweepCase{"pipeline", 0, 1}, SweepCase{"pipeline", 0, 2},
                                           SweepCase{"chain", 2, 1}, SweepCase{"chain", 2, 2}));

}  // namespace
}  // namespace acan::runtime
