#include "runtime/core/budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

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

// Every task of a job cut in tile bands with budgets within its band's budget (TaskBand): the
// number of tasks of the band with the smallest budget, or InvalidArgument naming a task that
// fits none.
Result<int64_t> TasksInTheirBands(const JobConfig& job, int64_t rows, int64_t data_bytes) {
  const auto& bands = job.partition.tile_bands;
  int smallest = 0;
  for (int i = 1; i < int(bands.size()); ++i) {
    if (bands[i].budget < bands[smallest].budget) smallest = i;
  }
  ACAN_ASSIGN_OR_RETURN(nn::Plan plan, nn::Plan::Create(job));
  int64_t in_smallest = 0;
  for (const nn::TaskSpec& t : plan.StepTasks(0, rows)) {
    const int band = TaskBand(bands, t, data_bytes);
    const int64_t b = bands[band].budget;
    if (TaskHoldBytes(t) + data_bytes + WorkspaceBytes(b) > b) {
      return Status::InvalidArgument(fmt::format(
          "task '{}' of {} needs {} for its inputs and outputs, over the largest tile band's "
          "budget, {} (band {}, tiles of {}), with {} of data and workspace",
          t.key, WidestLayer(job), HumanBytes(double(TaskHoldBytes(t))), FormatByteSize(b), band,
          bands[band].edge, HumanBytes(double(data_bytes + WorkspaceBytes(b)))));
    }
    in_smallest += bands[band].budget == bands[smallest].budget;
  }
  return in_smallest;
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
  if (tiles && !job.partition.tile_bands.empty()) {
    // Bands as the job gives them: with budgets, each task within its band's; without, within
    // `budget` as any fixed cut.
    ACAN_ASSIGN_OR_RETURN(TaskFit f, at(-1));
    const auto& bands = job.partition.tile_bands;
    if (bands[0].budget <= 0) {
      if (fits(f)) return f;
      return too_small(f, "as its tile bands cut it");
    }
    ACAN_RETURN_IF_ERROR(TasksInTheirBands(job, rows, data_bytes).status());
    return f;
  }
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

int TaskBand(const std::vector<TileBand>& bands, const nn::TaskSpec& task, int64_t data_bytes) {
  int best = -1, largest = -1;
  const int64_t hold = TaskHoldBytes(task) + data_bytes;
  for (int i = 0; i < int(bands.size()); ++i) {
    const int64_t b = bands[i].budget;
    if (b <= 0) return -1;
    if (largest < 0 || b > bands[largest].budget) largest = i;
    if (hold + WorkspaceBytes(b) <= b && (best < 0 || b < bands[best].budget)) best = i;
  }
  return best >= 0 ? best : largest;
}

namespace {

// The bands' distinct budgets, largest first (empty without budgets).
std::vector<int64_t> ClassBudgets(const std::vector<TileBand>& bands) {
  std::vector<int64_t> out;
  for (const TileBand& b : bands) {
    if (b.budget <= 0) return {};
    out.push_back(b.budget);
  }
  std::sort(out.begin(), out.end(), std::greater<>());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

int SizeClassOf(const std::vector<TileBand>& bands, int band) {
  if (band < 0 || band >= int(bands.size())) return -1;
  const std::vector<int64_t> budgets = ClassBudgets(bands);
  const auto at = std::find(budgets.begin(), budgets.end(), bands[band].budget);
  return at == budgets.end() ? -1 : int(at - budgets.begin());
}

int SizeClasses(const std::vector<TileBand>& bands) { return int(ClassBudgets(bands).size()); }

int HandlerSizeClass(const std::vector<TileBand>& bands, int64_t budget) {
  const std::vector<int64_t> budgets = ClassBudgets(bands);
  if (budgets.empty() || budget <= 0) return -1;
  for (size_t c = 0; c < budgets.size(); ++c) {
    if (budgets[c] <= budget) return int(c);
  }
  return int(budgets.size()) - 1;
}

Result<std::vector<TileBand>> BandsForBudgets(const JobConfig& job, int64_t rows, int64_t start,
                                              const std::vector<int64_t>& budgets,
                                              int64_t data_bytes, int64_t manager_budget) {
  if (job.partition.strategy != Strategy::kTiles) return std::vector<TileBand>{};
  std::map<int64_t, int64_t, std::greater<>> handlers;  // budget -> handlers, largest first
  for (int64_t b : budgets) {
    if (b > 0) ++handlers[b];
  }
  if (handlers.size() < 2) return std::vector<TileBand>{};
  JobConfig uniform = job;
  uniform.partition.tile_bands.clear();
  std::vector<TileBand> bands;
  std::vector<int64_t> count;
  for (const auto& [budget, n] : handlers) {
    const int64_t cut_for = manager_budget > 0 ? std::min(budget, manager_budget) : budget;
    Result<TaskFit> fit = FitTasks(uniform, rows, 0, start, cut_for, data_bytes);
    // A budget that holds no tile: the uniform cut for the smallest, which says so.
    if (!fit.ok()) return std::vector<TileBand>{};
    if (!bands.empty() && bands.back().edge == fit->task_size) {
      bands.back().budget = budget;  // the same tiles: one band, for the smaller budget
      count.back() += n;
      continue;
    }
    bands.push_back({fit->task_size, 1, budget});
    count.push_back(n);
  }
  if (bands.size() < 2) return std::vector<TileBand>{};  // one edge for all
  // The suffix of bands from k holds sqrt(its handlers' share) of each width.
  const int64_t total = std::accumulate(count.begin(), count.end(), int64_t{0});
  constexpr int64_t kParts = 1024;
  std::vector<int64_t> suffix(bands.size() + 1, 0);
  int64_t after = 0;
  for (size_t k = bands.size(); k-- > 0;) {
    after += count[k];
    suffix[k] = std::llround(double(kParts) * std::sqrt(double(after) / double(total)));
  }
  for (size_t k = 0; k < bands.size(); ++k) {
    bands[k].share = std::max<int64_t>(1, suffix[k] - suffix[k + 1]);
  }
  // Every task of the cut must fit a band, and the smallest budget's handlers must get some.
  JobConfig cut = uniform;
  cut.partition.tile_bands = bands;
  Result<int64_t> in_smallest = TasksInTheirBands(cut, rows, data_bytes);
  if (!in_smallest.ok() || *in_smallest == 0) return std::vector<TileBand>{};
  return bands;
}

}  // namespace acan::runtime
