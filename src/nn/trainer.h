// The reference trainer: runs a plan's task graph in one thread, task after task in StepTasks
// order, keeping tensors in an in-memory map from key to immutable Buffer. It is the definition
// of a correct result: a distributed run with window 1 and the same plan must end with bitwise
// the same weights. Not thread-safe; one trainer per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"
#include "nn/dataset.h"
#include "nn/evaluate.h"  // EvalReport, Evaluate (declared here before they had a file)
#include "nn/model.h"
#include "nn/plan.h"

namespace acan::nn {

struct StepReport {
  int64_t step = 0;
  int64_t rows = 0;
  double loss = 0;      // mean loss over the mini-batch (before the update)
  int64_t correct = 0;  // classification: correct predictions in the mini-batch
};

struct EpochReport {
  int64_t epoch = 0;
  double loss = 0;      // mean over the epoch's samples, measured before each update
  double accuracy = 0;  // classification: fraction correct over the epoch; else 0
  int64_t steps = 0;
  double seconds = 0;
};

class ReferenceTrainer {
 public:
  // The plan uses job.partition (task_size < 0: job.partition.task_size).
  static Result<std::unique_ptr<ReferenceTrainer>> Create(const JobConfig& job, const Model& init,
                                                          Dataset data, int64_t task_size = -1);

  // Changes the task size from the next step on (rebuilds the plan; results stay equal up to
  // rounding, and bitwise for the same task size).
  Status SetTaskSize(int64_t task_size);

  const Plan& plan() const { return plan_; }
  int64_t BatchesPerEpoch() const { return batcher_->BatchesPerEpoch(); }
  int64_t next_step() const { return next_step_; }

  // Runs the next step's tasks.
  Result<StepReport> Step();
  // Runs one epoch (its steps must start at an epoch boundary).
  Result<EpochReport> Epoch();
  // Runs job.train.epochs epochs; `on_epoch` (optional) sees each report.
  Result<std::vector<EpochReport>> Train(
      const std::function<void(const EpochReport&)>& on_epoch = nullptr);

  // The current parameters.
  Model CurrentModel() const;
  // A state tensor (param.* or mom.*) by key, or null.
  Buffer StateTensor(const std::string& key) const;
  // Loss and accuracy of the current model over the whole data set.
  Result<EvalReport> Evaluate() const;

 private:
  ReferenceTrainer() = default;
  Status RunTask(const TaskSpec& task);
  // Buffers made here are non-const objects behind a const view, so the sole owner may take
  // the vector back for reuse (saves an allocation and a zeroing pass per tensor and step).
  static Buffer Share(std::vector<float> v);
  void Recycle(Buffer b);

  JobConfig job_;
  Plan plan_;
  std::unique_ptr<Dataset> data_;
  std::unique_ptr<Batcher> batcher_;
  int64_t next_step_ = 0;
  std::unordered_map<std::string, Buffer> state_;    // param.* and mom.*
  std::unordered_map<std::string, Buffer> tensors_;  // the running step's tensors
  std::vector<std::span<const float>> in_spans_;
  std::vector<std::vector<float>> outputs_;
  std::unordered_map<size_t, std::vector<std::vector<float>>> pool_;  // by size
};

}  // namespace acan::nn
