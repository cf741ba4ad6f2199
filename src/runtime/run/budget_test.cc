// Memory budgets in process: a tiles job cut in bands for handler budgets that differ (one cut for
// one budget), each handler holding at most its own (counted: each task's inputs and outputs) and
// given no task over it, the weights bitwise the reference trainer's at the cut the run chose,
// under crashes too; a budget nothing fits, refused at start; a handler refusing a task over its
// budget instead of running it.
#include "runtime/core/budget.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "acan/space.h"
#include "common/byte_size.h"
#include "nn/executor.h"
#include "nn/trainer.h"
#include "runtime/core/messages.h"
#include "runtime/handler/handler.h"
#include "runtime/testing/watched_run.h"

namespace acan::runtime {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// A 4096 x 1024 layer: 16 MiB of weights, 32 with its velocity.
JobConfig WideJob() { return ClassifierJob("64, 1024, 4096, 10", 16, "tiles", 0, 160, 2); }

// The wide job, its data and its initial model.
struct Wide {
  JobConfig job = WideJob();
  nn::Dataset data = *nn::LoadDataset(job);
  nn::Model init = *nn::InitialModel(job);
};

std::string ReferenceAt(const JobConfig& job, const nn::Dataset& data, const nn::Model& init,
                        int64_t task_size) {
  auto trainer = nn::ReferenceTrainer::Create(job, init, data, task_size);
  EXPECT_TRUE(trainer.ok()) << trainer.status().ToString();
  EXPECT_TRUE((*trainer)->Train().ok());
  return nn::ModelSha256((*trainer)->CurrentModel());
}

TEST(MemoryBudgetTest, EachHandlerHoldsAtMostItsOwnBudgetAndTheWeightsAreTheReferences) {
  const Wide wide;
  const auto& [job, data, init] = wide;
  RunOptions o;
  o.handlers = 3;
  o.handler_memory = {2 * kMiB, 3 * kMiB, 4 * kMiB};  // budgets that differ, all under the layer
  // The manager within one too: no probe (it holds every shard), versions hashed as the audit
  // records them, the heap trimmed once a step. It applies every shard: no band is cut for more.
  o.manager_memory = 4 * kMiB;
  auto r = RunWatched(job, data, init, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->progress.total_steps, 20);
  // Cut in bands, one per budget, the largest budget's tiles the largest: the wide layer's tiles
  // differ in size within the layer.
  ASSERT_EQ(r->tile_bands.size(), 3u);
  EXPECT_EQ(r->tile_bands[0].budget, 4 * kMiB);
  EXPECT_EQ(r->tile_bands[2].budget, 2 * kMiB);
  EXPECT_GT(r->tile_bands[0].edge, r->tile_bands[1].edge);
  EXPECT_GT(r->tile_bands[1].edge, r->tile_bands[2].edge);
  JobConfig cut = job;
  cut.partition.tile_bands = r->tile_bands;
  nn::Plan plan = *nn::Plan::Create(cut, -1, data.rows);
  std::set<int64_t> sizes;
  int64_t largest_shard = 0;
  for (const nn::ShardSpec& s : plan.shards()) {
    largest_shard = std::max(largest_shard, s.Size());
    if (s.layer == 1 && !s.bias) sizes.insert(s.Size());
  }
  EXPECT_GE(sizes.size(), 3u) << "tiles of the wide layer in several sizes";
  EXPECT_GE(int64_t{4} * 4096 * 1024, 4 * 4 * kMiB);  // the layer is 4x the largest budget
  EXPECT_LE(int64_t{4} * largest_shard, kMiB);        // and none of its tiles near any
  ASSERT_EQ(r->handlers.size(), 3u);
  // What the smallest budget's handler could hold of a task, beyond its workspace.
  const int64_t small_room = 2 * kMiB - WorkspaceBytes(2 * kMiB);
  for (const HandlerFigures& h : r->handlers) {
    SCOPED_TRACE("handler " + std::to_string(h.id));
    EXPECT_EQ(h.memory_budget, o.handler_memory[h.id]);
    EXPECT_GT(h.tasks, 0) << "every handler gets work";
    EXPECT_GT(h.peak_held_bytes, 0);
    EXPECT_LE(h.peak_held_bytes, h.memory_budget);
    EXPECT_EQ(h.refused, 0) << "never given a task over its budget";
  }
  EXPECT_LE(r->handlers[0].peak_held_bytes, small_room);
  EXPECT_GT(r->handlers[2].peak_held_bytes, small_room)
      << "the largest budget ran tiles the smallest could not hold";
  EXPECT_EQ(nn::ModelSha256(r->model), ReferenceAt(cut, data, init, -1));
}

// Tiles cut in bands under crashes: the manager and the handlers killed at seeded points (each
// handler's tasks of its own class lost with it), the weights still bitwise the reference's at the
// bands, exactly once by the oracle, no task given to a handler over its budget.
TEST(MemoryBudgetTest, BandsUnderCrashesAreBitwiseTheReferences) {
  const Wide wide;
  const auto& [job, data, init] = wide;
  const char* env = std::getenv("ACAN_FAULT_SEED");
  const uint64_t seed = env ? std::strtoull(env, nullptr, 10) : 3;
  SCOPED_TRACE(fmt::format("seed {} (ACAN_FAULT_SEED={} replays it)", seed, seed));
  RunOptions o;
  o.handlers = 3;
  o.handler_memory = {2 * kMiB, 3 * kMiB, 4 * kMiB};
  o.manager_memory = 4 * kMiB;
  o.standby = true;
  // Within the first 400 writes of each incarnation: every process dies at least once.
  auto r = RunWatched(job, data, init, o, RunHooks::SeededCrashes(seed, 400, 400, 2));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tile_bands.size(), 3u);
  int64_t crashes = r->manager_crashes;
  for (const HandlerFigures& h : r->handlers) {
    crashes += h.crashes;
    EXPECT_EQ(h.refused, 0) << "handler " << h.id;
    EXPECT_LE(h.peak_held_bytes, h.memory_budget) << "handler " << h.id;
  }
  EXPECT_GT(r->manager_crashes, 0);
  EXPECT_GT(crashes, r->manager_crashes) << "handlers crashed too";
  JobConfig cut = job;
  cut.partition.tile_bands = r->tile_bands;
  EXPECT_EQ(nn::ModelSha256(r->model), ReferenceAt(cut, data, init, -1));
}

// One budget for every handler: one uniform cut for it, no bands, as before bands existed.
TEST(MemoryBudgetTest, OneBudgetForAllCutsUniformTiles) {
  const Wide wide;
  const auto& [job, data, init] = wide;
  auto bands = BandsForBudgets(job, 16, 512, {2 * kMiB, 2 * kMiB, 0}, 0);
  ASSERT_TRUE(bands.ok()) << bands.status().ToString();
  EXPECT_TRUE(bands->empty());
  // Two budgets: two bands, their shares such that the smaller's handlers (two of three) have about
  // two thirds of the work (the suffix from its band is sqrt(2/3) of each width, 836 of 1024).
  bands = BandsForBudgets(job, 16, 512, {2 * kMiB, 2 * kMiB, 4 * kMiB}, 0);
  ASSERT_TRUE(bands.ok()) << bands.status().ToString();
  ASSERT_EQ(bands->size(), 2u);
  EXPECT_EQ((*bands)[1].share, 836);
  EXPECT_EQ((*bands)[0].share, 1024 - 836);
  EXPECT_EQ(SizeClasses(*bands), 2);
  EXPECT_EQ(SizeClassOf(*bands, 0), 0);
  EXPECT_EQ(SizeClassOf(*bands, 1), 1);
  EXPECT_EQ(HandlerSizeClass(*bands, 4 * kMiB), 0) << "both classes";
  EXPECT_EQ(HandlerSizeClass(*bands, 0), -1) << "no budget: every task";
  EXPECT_EQ(HandlerSizeClass(*bands, 3 * kMiB), 1);
  EXPECT_EQ(HandlerSizeClass(*bands, kMiB), 1) << "below every band: the smallest's";
  // Bands given out of order: classes follow the budgets, not the bands' places.
  const std::vector<TileBand> mixed = {{8, 1, 2 * kMiB}, {16, 1, 4 * kMiB}, {12, 1, 2 * kMiB}};
  EXPECT_EQ(SizeClasses(mixed), 2);
  EXPECT_EQ(SizeClassOf(mixed, 0), 1);
  EXPECT_EQ(SizeClassOf(mixed, 1), 0);
  EXPECT_EQ(SizeClassOf(mixed, 2), 1);
  // A manager within 3 MiB: the 4 MiB handlers' tiles cut as for 3 MiB; with the 2 MiB ones, two
  // bands still, the first for 3 MiB handlers' tiles and taken by 4 MiB ones.
  auto capped = BandsForBudgets(job, 16, 512, {2 * kMiB, 4 * kMiB}, 0, 3 * kMiB);
  auto at3 = BandsForBudgets(job, 16, 512, {2 * kMiB, 3 * kMiB}, 0);
  ASSERT_TRUE(capped.ok() && at3.ok());
  ASSERT_EQ(capped->size(), 2u);
  EXPECT_EQ((*capped)[0].edge, (*at3)[0].edge);
  EXPECT_EQ((*capped)[0].budget, 4 * kMiB);
  // A manager within the smallest: one cut for all.
  capped = BandsForBudgets(job, 16, 512, {2 * kMiB, 4 * kMiB}, 0, 2 * kMiB);
  ASSERT_TRUE(capped.ok());
  EXPECT_TRUE(capped->empty());
  // A budget that holds no tile at all: no bands; the uniform cut then refuses it, naming it.
  bands = BandsForBudgets(job, 16, 512, {64 * 1024, 4 * kMiB}, 0);
  ASSERT_TRUE(bands.ok());
  EXPECT_TRUE(bands->empty());
}

// The freed memory a budgeted process keeps for reuse (a quarter of its budget, 1 to 64 MiB) is
// counted in a handler's workspace beyond the 1 MiB measured in kWorkspaceBytes, so the cut leaves
// room for it: at 16 MiB the largest task fits 16 - 1.5 - 3 MiB, and a handler refuses a task
// that would not leave it.
TEST(MemoryBudgetTest, TheFreedMemoryAProcessKeepsIsCountedInTheCut) {
  EXPECT_EQ(RetainedBytes(4 * kMiB), kMiB);
  EXPECT_EQ(RetainedBytes(16 * kMiB), 4 * kMiB);
  EXPECT_EQ(RetainedBytes(1024 * kMiB), 64 * kMiB);
  EXPECT_EQ(WorkspaceBytes(0), kWorkspaceBytes);
  EXPECT_EQ(WorkspaceBytes(4 * kMiB), kWorkspaceBytes);
  EXPECT_EQ(WorkspaceBytes(16 * kMiB), kWorkspaceBytes + 3 * kMiB);
  const JobConfig job = WideJob();
  auto fit = FitTasks(job, 16, 0, 1024, 16 * kMiB, 0);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_LE(fit->largest_bytes, 16 * kMiB - kWorkspaceBytes - 3 * kMiB);
  // Left out of the count, the retention would let larger tiles through: the count changes what
  // runs (the first edge FitTasks' walk down reaches that fits 16 - 1.5 MiB is larger).
  int64_t loose = 1024;
  while (LargestTask(*nn::Plan::Create(job, loose), 16).largest_bytes > 16 * kMiB - kWorkspaceBytes)
    loose = std::max(kMinTileEdge, loose * 7 / 8);
  EXPECT_LT(fit->task_size, loose);
}

TEST(MemoryBudgetTest, ABudgetNoTaskFitsIsRefusedAtStartNamingTheLayer) {
  const Wide wide;
  const auto& [job, data, init] = wide;
  RunOptions o;
  o.handlers = 2;
  o.handler_memory = {2 * kMiB, 4 << 10};
  auto r = RunJob(job, data, init, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("4KiB"), std::string::npos) << m;
  EXPECT_NE(m.find("layer 1 (4096 x 1024"), std::string::npos) << m;
  EXPECT_NE(m.find("its largest task '"), std::string::npos) << m;

  // The data strategy holds the whole model in a task: a budget under it is refused as well.
  JobConfig data_job = ClassifierJob("64, 1024, 4096, 10", 16, "data", 0, 160, 2);
  o.handler_memory = {2 * kMiB};
  r = RunJob(data_job, data, init, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("only \"tiles\" cuts a layer"), std::string::npos)
      << r.status().message();
}

// Bands a job file gives, with budgets: each task is checked against its own band's budget, and a
// band whose tiles its budget cannot hold is refused naming the task, the band and the budget.
TEST(MemoryBudgetTest, BandsAJobGivesAreCheckedAgainstTheirOwnBudgets) {
  JobConfig job = WideJob();
  job.partition.tile_bands = {{256, 1, 4 * kMiB}, {128, 3, 2 * kMiB}};
  auto fit = FitTasks(job, 16, 0, 512, 2 * kMiB, 0);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  EXPECT_EQ(fit->task_size, 128);
  job.partition.tile_bands[0].edge = 1024;  // tiles of 4 MiB: no 4 MiB handler holds their tasks
  fit = FitTasks(job, 16, 0, 512, 2 * kMiB, 0);
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = fit.status().message();
  EXPECT_NE(m.find("band 0, tiles of 1024"), std::string::npos) << m;
  EXPECT_NE(m.find("4MiB"), std::string::npos) << m;
  EXPECT_NE(m.find("task '"), std::string::npos) << m;
}

TEST(MemoryBudgetTest, AHandlerRefusesATaskOverItsBudgetAndSaysWhy) {
  const JobConfig job = WideJob();
  nn::Plan plan = *nn::Plan::Create(job, 512, 160);
  nn::TaskSpec big;
  for (const nn::TaskSpec& t : plan.StepTasks(0, 16)) {
    // An update of a 512 x 512 tile: 5 tiles (weight, gradient, velocity in; two out), 5 MiB.
    if (t.op == nn::TaskOp::kUpdate && t.r1 - t.r0 == 512 && t.c1 - t.c0 == 512) big = t;
  }
  ASSERT_FALSE(big.key.empty());
  auto space = *OpenSpace("mem:");
  Layout layout("job");
  ASSERT_TRUE(space
                  ->Put(layout.Task(big.type, big.key),
                        EncodeTaskMessage(1, big.inputs, nn::EncodeTask(big), 1000000000))
                  .ok());
  HandlerStats stats;
  HandlerSettings ho;
  ho.id = 7;
  ho.memory = kMiB;
  int taken = 0;
  ho.until = [&] { return ++taken > 1; };
  Handler handler(space.get(), layout, ho, &stats);
  std::atomic<bool> stop{false};
  handler.Run(stop);
  auto report = space->Read(layout.Done(big.key));
  ASSERT_TRUE(report.ok() && report->has_value());
  auto done = DecodeDoneMessage((*report)->value);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->handler, 7);
  EXPECT_TRUE(done->missing.empty()) << done->missing.size() << " missing";
  EXPECT_EQ(done->error, "");
  EXPECT_NE(done->refused.find("over handler 7's memory budget of 1.00 MiB"), std::string::npos)
      << done->refused;
  EXPECT_EQ(stats.refused.load(), 1);
  EXPECT_EQ(stats.tasks.load(), 0);
  EXPECT_EQ(stats.peak_held.load(), 0) << "nothing of the task was read";
  // No output was written: only the task's report.
  for (const std::string& out : big.outputs) {
    auto o = space->Read(layout.Output(out, big.step));
    ASSERT_TRUE(o.ok());
    EXPECT_FALSE(o->has_value()) << out;
  }
}

}  // namespace
}  // namespace acan::runtime
