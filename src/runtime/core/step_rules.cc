#include "runtime/core/step_rules.h"

#include <fmt/format.h>

#include <algorithm>

namespace acan::runtime {

int64_t VersionToRead(nn::TaskType type, int64_t step, int64_t current) {
  return type == nn::TaskType::kUpdate ? step : std::min(current, step);
}

ReportMeaning MeaningOf(const StepTask* t, const DoneMessage& msg) {
  if (t == nullptr) return ReportMeaning::kLate;
  if (t->done) return ReportMeaning::kDuplicate;
  if (!msg.missing.empty()) {
    // Only the report of the copy in flight counts: an older copy's is stale.
    return !t->dispatched || msg.attempt < t->attempt ? ReportMeaning::kStaleMissing
                                                      : ReportMeaning::kMissingInputs;
  }
  if (!msg.refused.empty()) {
    return !t->dispatched || msg.attempt < t->attempt ? ReportMeaning::kStaleMissing
                                                      : ReportMeaning::kRefused;
  }
  if (!msg.error.empty()) return ReportMeaning::kFailed;
  return ReportMeaning::kFirst;
}

Status StepMetrics::Add(std::span<const float> metric, int64_t rows) {
  if (metric.size() != 2) {
    return Status::DataLoss(
        fmt::format("a step's metrics hold [loss, correct], got {} values", metric.size()));
  }
  loss_sum += double(metric[0]) * double(rows);
  correct += static_cast<int64_t>(metric[1]);
  return Status::Ok();
}

void FinishStep(Progress* progress, int64_t step, int64_t rows, int64_t batches_per_epoch,
                const StepMetrics& metrics) {
  const int64_t epoch = step / batches_per_epoch;
  if (progress->epochs.size() <= size_t(epoch)) progress->epochs.resize(epoch + 1);
  EpochTotals& e = progress->epochs.at(epoch);
  e.loss_sum += metrics.loss_sum;
  e.correct += metrics.correct;
  e.rows += rows;
  progress->next_step = step + 1;
  progress->finished = progress->next_step >= progress->total_steps;
}

}  // namespace acan::runtime
