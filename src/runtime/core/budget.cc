#include "runtime/core/budget.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/byte_size.h"
#include "nn/executor.h"

namespace acan::runtime {

int64_t SmallestBudget(const std::vector<int64_t>& budgets) {
  int64_t smallest = 0;
  for (int64_t b : budgets) {
    if (b > 0 && (smallest == 0 || b < smallest)) smallest = b;
  }
  return smallest;
}

int64_t RetainedBytes(int64_t budget) {
  return std::clamp<int64_t>(budget / 4, int64_t{1} << 20, int64_t{64} << 20);
}

int64_t WorkspaceBytes(int64_t budget) {
  return budget > 0 ? kWorkspaceBytes + RetainedBytes(budget) - (int64_t{1} << 20)
                    : kWorkspaceBytes;
}

int64_t TaskHoldBytes(const nn::TaskSpec& task) {
  int64_t largest = 0;
  for (int64_t n : nn::InputSizes(task)) largest = std::max(largest, n);
  for (int64_t n : nn::OutputSizes(task)) largest = std::max(largest, n);
  return int64_t(sizeof(float)) * (nn::TaskWork(task) + 3 * largest);
}

TaskFit LargestTask(const nn::Plan& plan, int64_t rows) {
  TaskFit fit;
  fit.task_size = plan.task_size();
  for (const nn::TaskSpec& t : plan.StepTasks(0, rows)) {
    const int64_t bytes = TaskHoldBytes(t);
    if (bytes > fit.largest_bytes) {
      fit.largest_bytes = bytes;
      fit.largest_task = t.key;
    }
  }
  return fit;
}

namespace {

// The widest layer: the one a too-small budget is about.
std::string WidestLayer(const JobConfig& job) {
  const auto& w = job.model.layers;
  size_t best = 0;
  for (size_t l = 1; l + 1 < w.size(); ++l) {
    if (w[l] * w[l + 1] > w[best] * w[best + 1]) best = l;
  }
  return fmt::format("layer {} ({} x {}, {} of weights)", best, w[best + 1], w[best],
                     HumanBytes(4.0 * double(w[best]) * double(w[best + 1])));
}

}  // namespace

Result<TaskFit> FitTasks(const JobConfig& job, int64_t rows, int64_t task_size, int64_t start,
                         int64_t budget, int64_t data_bytes) {
  const bool tiles = job.partition.strategy == Strategy::kTiles;
  auto at = [&](int64_t size) -> Result<TaskFit> {
    ACAN_ASSIGN_OR_RETURN(nn::Plan plan, nn::Plan::Create(job, size));
    return LargestTask(plan, rows);
  };
  const int64_t workspace = WorkspaceBytes(budget);
  const int64_t room = budget - data_bytes - workspace;
  auto fits = [&](const TaskFit& f) { return budget <= 0 || f.largest_bytes <= room; };
  auto too_small = [&](const TaskFit& f, const std::string& cut) {
    return Status::InvalidArgument(fmt::format(
        "a handler memory budget of {} cannot hold a task of {}: {}, its largest task '{}' "
        "needs {} for its inputs and outputs in hand and in flight{}",
        FormatByteSize(budget), WidestLayer(job), cut, f.largest_task,
        HumanBytes(double(f.largest_bytes)),
        data_bytes > 0
            ? fmt::format(", on top of the {} of data and {} of workspace a handler holds",
                          HumanBytes(double(data_bytes)), HumanBytes(double(workspace)))
            : fmt::format(", on top of the {} of workspace a handler holds",
                          HumanBytes(double(workspace)))));
  };
  if (!tiles || task_size > 0 || budget <= 0) {
    ACAN_ASSIGN_OR_RETURN(TaskFit f, at(task_size > 0 ? task_size : (tiles ? start : -1)));
    if (fits(f)) return f;
    return too_small(f, tiles ? fmt::format("at tiles of {}", f.task_size)
                              : fmt::format("with strategy \"{}\" (only \"tiles\" cuts a layer)",
                                            ToString(job.partition.strategy)));
  }
  // Tiles cut by the runtime: the largest edge that fits, in steps of an eighth.
  for (int64_t edge = std::max(start, kMinTileEdge);; edge = std::max(kMinTileEdge, edge * 7 / 8)) {
    ACAN_ASSIGN_OR_RETURN(TaskFit f, at(edge));
    if (fits(f)) return f;
    if (edge == kMinTileEdge) {
      return too_small(f, fmt::format("cut to the smallest tiles, {} x {}", edge, edge));
    }
  }
}

}  // namespace acan::runtime
