#include "nn/trainer.h"

#include <chrono>

#include "nn/executor.h"
#include "nn/kernels.h"

namespace acan::nn {

Result<std::unique_ptr<ReferenceTrainer>> ReferenceTrainer::Create(const JobConfig& job,
                                                                   const Model& init, Dataset data,
                                                                   int64_t task_size) {
  InitBlas();
  ACAN_RETURN_IF_ERROR(ValidateJob(job));
  if (init.widths != job.model.layers) {
    return Status::InvalidArgument("the initial model's widths differ from model.layers");
  }
  ACAN_RETURN_IF_ERROR(CheckDataset(data, job, "training data"));
  std::unique_ptr<ReferenceTrainer> t(new ReferenceTrainer());
  t->job_ = job;
  ACAN_ASSIGN_OR_RETURN(t->plan_, Plan::Create(job, task_size, data.rows));
  t->data_ = std::make_unique<Dataset>(std::move(data));
  t->batcher_ = std::make_unique<Batcher>(t->data_.get(), t->plan_.step_batch(), job.data.shuffle,
                                          job.train.seed);
  for (auto& [key, v] : t->plan_.InitialState(init)) t->state_[key] = Share(std::move(v));
  return t;
}

Status ReferenceTrainer::SetTaskSize(int64_t task_size) {
  if (job_.partition.strategy == Strategy::kChain) {
    return Status::InvalidArgument("the chain strategy's task size fixes its steps: set it once");
  }
  ACAN_ASSIGN_OR_RETURN(Plan next, Plan::Create(job_, task_size, data_->rows));
  if (!next.SameShards(plan_)) {  // tiles: the state is cut again, to the new tiles
    const Model params = CurrentModel();
    const Model velocities = plan_.ModelFromState([&](const std::string& key) {
      for (const ShardSpec& s : plan_.shards()) {
        if (s.key == key && !s.momentum_key.empty()) return *state_.at(s.momentum_key);
      }
      return std::vector<float>();
    });
    std::unordered_map<std::string, Buffer> state;
    for (const ShardSpec& s : next.shards()) {
      const auto& from = s.bias ? params.biases[s.layer] : params.weights[s.layer];
      state[s.key] = Share(s.Slice(from));
      if (s.momentum_key.empty()) continue;
      state[s.momentum_key] =
          Share(s.Slice(s.bias ? velocities.biases[s.layer] : velocities.weights[s.layer]));
    }
    state_ = std::move(state);
  }
  plan_ = std::move(next);
  return Status::Ok();
}

Buffer ReferenceTrainer::Share(std::vector<float> v) {
  return Buffer(new std::vector<float>(std::move(v)));
}

void ReferenceTrainer::Recycle(Buffer b) {
  if (!b || b.use_count() != 1 || b->empty()) return;
  auto& free = pool_[b->size()];
  if (free.size() < 8) free.push_back(std::move(const_cast<std::vector<float>&>(*b)));
}

Status ReferenceTrainer::RunTask(const TaskSpec& task) {
  in_spans_.clear();
  for (const std::string& key : task.inputs) {
    auto& map = Plan::IsStateKey(key) ? state_ : tensors_;
    auto it = map.find(key);
    if (it == map.end()) {
      return Status::Internal("task " + task.key + " reads " + key +
                              ", which no earlier task produced (plan order bug)");
    }
    in_spans_.emplace_back(*it->second);
  }
  const std::vector<int64_t> sizes = OutputSizes(task);
  outputs_.resize(sizes.size());
  if (task.op == TaskOp::kUpdate) {
    // Every other task of the step has run, so this trainer is the sole owner of the shard's
    // current version: donate it (and the velocity) as the output storage, updated in place.
    for (size_t i = 0; i < task.outputs.size(); ++i) {
      auto it = state_.find(task.outputs[i]);
      if (it != state_.end() && it->second.use_count() == 1) {
        outputs_[i] = std::move(const_cast<std::vector<float>&>(*it->second));
        in_spans_[i == 0 ? 0 : in_spans_.size() - 1] = outputs_[i];
        it->second.reset();
      }
    }
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (outputs_[i].size() == static_cast<size_t>(sizes[i])) continue;
    auto it = pool_.find(static_cast<size_t>(sizes[i]));
    if (it != pool_.end() && !it->second.empty()) {
      outputs_[i] = std::move(it->second.back());
      it->second.pop_back();
    }
  }
  ACAN_RETURN_IF_ERROR(ExecuteTask(task, in_spans_, &outputs_));
  in_spans_.clear();
  for (size_t i = 0; i < task.outputs.size(); ++i) {
    const std::string& key = task.outputs[i];
    Buffer& slot = (Plan::IsStateKey(key) ? state_ : tensors_)[key];
    Buffer old = std::move(slot);
    slot = Share(std::move(outputs_[i]));
    Recycle(std::move(old));
  }
  return Status::Ok();
}

Result<StepReport> ReferenceTrainer::Step() {
  const int64_t step = next_step_;
  Batch batch = batcher_->Get(step);
  tensors_.clear();
  for (auto& [key, v] : plan_.StepInputs(step, batch.rows, batch.x, batch.t))
    tensors_[key] = Share(std::move(v));
  for (const TaskSpec& task : plan_.StepTasks(step, batch.rows)) {
    ACAN_RETURN_IF_ERROR(RunTask(task));
  }
  StepReport r;
  r.step = step;
  r.rows = batch.rows;
  for (const std::string& key : plan_.MetricKeys(step, batch.rows)) {
    const std::vector<float>& m = *tensors_.at(key);
    r.loss += m[0];
    r.correct += static_cast<int64_t>(m[1]);
  }
  for (auto& [key, buffer] : tensors_) Recycle(std::move(buffer));
  tensors_.clear();
  ++next_step_;
  return r;
}

Result<EpochReport> ReferenceTrainer::Epoch() {
  const auto start = std::chrono::steady_clock::now();
  EpochReport e;
  e.epoch = next_step_ / BatchesPerEpoch();
  int64_t rows = 0, correct = 0;
  double loss_sum = 0;
  const int64_t n = BatchesPerEpoch() - next_step_ % BatchesPerEpoch();
  for (int64_t i = 0; i < n; ++i) {
    ACAN_ASSIGN_OR_RETURN(StepReport s, Step());
    loss_sum += s.loss * s.rows;
    rows += s.rows;
    correct += s.correct;
    ++e.steps;
  }
  e.loss = rows ? loss_sum / rows : 0;
  e.accuracy = data_->classification && rows ? static_cast<double>(correct) / rows : 0;
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return e;
}

Result<std::vector<EpochReport>> ReferenceTrainer::Train(
    const std::function<void(const EpochReport&)>& on_epoch) {
  std::vector<EpochReport> out;
  for (int64_t e = 0; e < job_.train.epochs; ++e) {
    ACAN_ASSIGN_OR_RETURN(EpochReport r, Epoch());
    if (on_epoch) on_epoch(r);
    out.push_back(r);
  }
  return out;
}

Model ReferenceTrainer::CurrentModel() const {
  return plan_.ModelFromState([&](const std::string& key) { return *state_.at(key); });
}

Buffer ReferenceTrainer::StateTensor(const std::string& key) const {
  auto it = state_.find(key);
  return it == state_.end() ? nullptr : it->second;
}

Result<EvalReport> ReferenceTrainer::Evaluate() const {
  return nn::Evaluate(CurrentModel(), *data_, job_);
}

}  // namespace acan::nn
