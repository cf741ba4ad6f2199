// Memory budgets: what a task holds on its handler, and how a tiles job is cut so that every task
// fits the smallest handler budget. Pure functions of the job: no space, no clock. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"
#include "nn/plan.h"

namespace acan::runtime {

// The smallest tile edge the tiles strategy is cut to.
inline constexpr int64_t kMinTileEdge = 8;
// What a handler holds whatever its tasks, beyond its process's baseline: BLAS's packing buffers
// and the space client's buffers once used at a job's sizes. Measured from outside (VmHWM, a 2048
// x 2048 layer at 4 MiB against a tiny job's handler over nats:local): 1.0-1.3 MiB.
inline constexpr int64_t kWorkspaceBytes = int64_t{3} << 19;  // 1.5 MiB

// The freed memory a role process with `budget` (> 0) keeps for reuse (glibc's trim threshold; its
// mmap threshold twice that): a quarter of the budget, 1 to 64 MiB. Handing every megabyte-sized
// message back to the kernel and faulting the next one in cost 2.3x in time on the 64 MiB layer
// at 16 MiB budgets (docs/benchmarks.md); the 1 MiB every budgeted process kept before is in
// kWorkspaceBytes' measurement, the rest is counted in WorkspaceBytes.
int64_t RetainedBytes(int64_t budget);
// What a handler with `budget` (0: none) holds whatever its tasks: kWorkspaceBytes and what it
// keeps freed beyond 1 MiB.
int64_t WorkspaceBytes(int64_t budget);

// Bytes a handler holds to run `task`: its inputs and outputs, and room for three more copies of
// its largest tensor: one on its way in while the space's client still holds the message, one
// on its way out in the client's write buffer (over NATS both exist while the task is in hand),
// and BLAS's packed copy of a weight tile (OpenBLAS packs the whole k x n operand it multiplies).
int64_t TaskHoldBytes(const nn::TaskSpec& task);

struct TaskFit {
  int64_t task_size = 0;      // the plan's task size (the tile edge for tiles)
  int64_t largest_bytes = 0;  // the largest task's TaskHoldBytes
  std::string largest_task;   // its key (a step-0 task)
};

// The smallest of the budgets given (0: none given, or all 0).
int64_t SmallestBudget(const std::vector<int64_t>& budgets);

// The largest task of `plan` for a mini-batch of `rows` rows.
TaskFit LargestTask(const nn::Plan& plan, int64_t rows);

// The task size a job runs at so that each task's inputs and outputs, with `data_bytes` a handler
// holds besides, fit `budget` bytes (0: no budget, `task_size` as given). `task_size` > 0 is the
// one the job or the run fixed: it is checked, never changed. 0 (tiles, chosen by the runtime):
// the largest edge, from `start` down, whose tasks fit. InvalidArgument when nothing fits, naming
// the layer, the smallest task the job can be cut to and the budget.
Result<TaskFit> FitTasks(const JobConfig& job, int64_t rows, int64_t task_size, int64_t start,
                         int64_t budget, int64_t data_bytes);

// Tiles for handlers whose budgets differ: one band per budget, largest first, each cut in tiles
// of the largest edge FitTasks finds for its budget, its share of every width such that the tiles
// only a band's handlers (or bigger ones) can run are about their share of the work, with work in
// proportion to handlers (a band's tiles are those whose row and column blocks are both in it or
// beyond: the suffix of the bands from band k holds sqrt(handlers from band k on / all) of a
// width). `budgets` has one entry per handler (0: none). Empty when fewer than two budgets differ,
// when their edges are the same, or when some task of the cut would fit none of the budgets or
// the smallest budget's handlers would get no task: the job is then cut uniformly for the
// smallest (FitTasks). The job's own task_size and tile bands are not looked at. A manager with a
// budget (`manager_budget` > 0) applies every shard: no band is cut for more than it (a larger
// handler budget is cut as that one, and the bands whose tiles are then the same are one, for the
// smallest of their budgets).
Result<std::vector<TileBand>> BandsForBudgets(const JobConfig& job, int64_t rows, int64_t start,
                                              const std::vector<int64_t>& budgets,
                                              int64_t data_bytes, int64_t manager_budget = 0);

// The band whose handlers may run `task` of a job cut in `bands` with budgets: the one with the
// smallest budget that holds it with `data_bytes` and its workspace (the largest when none does:
// its handlers refuse it). -1 when the bands have no budgets (or there are none): any handler.
int TaskBand(const std::vector<TileBand>& bands, const nn::TaskSpec& task, int64_t data_bytes);

// A band's size class: how many distinct band budgets are larger than its budget (0: the largest
// budget's). -1 for band -1. A task's class is its band's; its tuple carries it (layout.h).
int SizeClassOf(const std::vector<TileBand>& bands, int band);
// How many size classes the bands have (distinct budgets; 0 without budgets).
int SizeClasses(const std::vector<TileBand>& bands);
// The first size class a handler with `budget` takes; it takes that class's tasks and every later
// (smaller) class's: the class of the largest band budget at most its own (the last class when its
// budget is below every band's: it refuses what it cannot hold). -1: every task (no budget, or
// bands without budgets).
int HandlerSizeClass(const std::vector<TileBand>& bands, int64_t budget);

}  // namespace acan::runtime
