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

}  // namespace acan::runtime
