// The partition plan: how one training step (one mini-batch) becomes a graph of tasks.
//
// A Plan is built from a JobConfig and a task size (tile edge for tiles, micro-batch rows for
// data and pipeline, mini-batches per task for chain) and is cheap to rebuild, so a runtime may
// change the task size between steps (chain excepted: there the task size sets what a step is).
// StepTasks lists a step's tasks with deterministic keys, explicit input and output tensor keys,
// and every reduction in a fixed order; each task is a pure function of its inputs (ExecuteTask),
// so any executor that runs the graph produces bitwise the reference result.
//
// Parameters are sharded per tensor: shard `param.l<i>.w` is layers.<i>.weight, `param.l<i>.b` is
// layers.<i>.bias, and with momentum `mom.l<i>.w|b` holds the velocity. The tiles strategy shards
// each tensor by its tiles instead (`param.l<i>.w.r<r>.c<c>`, a bias by its row blocks
// `param.l<i>.b.r<r>`), so that no task, and no process, needs a whole layer: its shards, and so
// its keys, follow the task size (or the job's tile bands, whose tiles differ in size: Cuts),
// which is then fixed for a run. These keys are step-free: the
// runtime versions them (version = updates applied);
// a step-s task that reads `param.*` reads version s (W = 1), and the step's update task for a
// shard reads version s and writes version s + 1 under the same key. Every other key is scoped
// to its step by the token s<step>. A Plan is immutable after Create: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"
#include "nn/model.h"
#include "nn/network.h"
#include "nn/task.h"
#include "nn/tensor.h"

namespace acan::nn {

struct ShardSpec {
  std::string key;           // "param.l0.w", or a tile's "param.l0.w.r1.c2"
  std::string momentum_key;  // "mom.l0.w", or "" without momentum
  std::string name;          // the tensor it is part of: "layers.0.weight"
  std::string tile;          // ".r1.c2" (a weight's tile), ".r1" (a bias's block), "" (whole)
  int layer = 0;
  bool bias = false;
  std::vector<int64_t> shape;         // the shard's own shape
  std::vector<int64_t> tensor_shape;  // the whole tensor's
  // The part of the tensor it holds: rows [r0, r1), columns [c0, c1) (a bias: one column).
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;

  int64_t Size() const { return (r1 - r0) * (c1 - c0); }
  // A row's length in the whole tensor, as a matrix of tensor_shape[0] rows: the product of the
  // dimensions after the first (a conv2d weight [out, in, kh, kw]: in * kh * kw; a bias: 1).
  int64_t RowLength() const;
  // The shard's values, from the tensor's rows [first_row, ...) (row-major, whole rows; 0: the
  // whole tensor), and back into them.
  std::vector<float> Slice(std::span<const float> rows, int64_t first_row = 0) const;
  void Place(std::span<const float> shard, std::vector<float>* rows, int64_t first_row = 0) const;
};

// A keyed tensor as produced by the plan (inputs, initial state).
using KeyedTensor = std::pair<std::string, std::vector<float>>;

class Plan {
 public:
  Plan() = default;  // an empty plan; use Create
  // `task_size` overrides job.partition.task_size when >= 0; 0 picks the default (tiles: 128,
  // data and pipeline: the whole mini-batch, chain: ChainSteps). `epoch_rows` is the training
  // set's size; the chain strategy needs it to map its steps to mini-batches (other strategies,
  // and plans used only for their shards, may pass 0).
  static Result<Plan> Create(const JobConfig& job, int64_t task_size = -1, int64_t epoch_rows = 0);

  // The weights and biases of the job's model.
  static int64_t Parameters(const JobConfig& job);
  // Chain: how many mini-batches a task runs when the task size is 0, about 2^19 weights x rows
  // of work (a few hundred steps of the note's 44-44-1 toy), at most an epoch.
  static int64_t ChainSteps(const JobConfig& job, int64_t epoch_rows);
  // step_batch() of the plan Create(job, task_size, epoch_rows) would make.
  static int64_t StepBatch(const JobConfig& job, int64_t task_size, int64_t epoch_rows);

  Strategy strategy() const { return strategy_; }
  int64_t task_size() const { return task_size_; }  // 0 = whole mini-batch (data, pipeline)
  // Rows of one step: the mini-batch, or for chain task_size consecutive mini-batches (a step
  // is then one chain task, and a version counts chain steps). Batchers cut steps of this size.
  int64_t step_batch() const { return step_batch_; }
  const std::vector<int64_t>& widths() const { return widths_; }
  int NumLayers() const { return static_cast<int>(widths_.size()) - 1; }
  // The model's layers when it is a list of layers (Model::layer), else empty.
  const std::vector<LayerConfig>& net() const { return net_; }
  // Pipeline: the stages as [first layer, end layer).
  const std::vector<std::pair<int, int>>& stages() const { return stages_; }

  // The parameter shards, in model order (weight then bias per layer).
  const std::vector<ShardSpec>& shards() const { return shards_; }
  // Version-0 state: each shard's tensor from `model`, and zero velocities with momentum.
  std::vector<KeyedTensor> InitialState(const Model& model) const;
  // The same state a shard at a time, drawn by `init` (whose scheme's biases are zeros), for a
  // process that must not hold the model: `emit(key, tensor)` once per key.
  Status ForEachInitialShard(
      const InitialWeights& init,
      const std::function<Status(const std::string&, std::vector<float>)>& emit) const;
  // A model from shard tensors (`get(key)` returns the shard's current values; a tile of the
  // wrong size, such as the empty one of a failed read, is left out: zeros).
  template <typename Get>
  Model ModelFromState(Get get) const;
  // Where a width (the input's, a layer's output's) is cut into blocks (tiles: of task_size, or
  // the job's tile bands): 0, the ends of the blocks in order, the last `width`. Other strategies
  // do not cut widths: {0, width}.
  std::vector<int64_t> Cuts(int64_t width) const;
  // True when a step of this plan reads the state of `other`'s shards under the same keys (the
  // tiles strategy's shards follow its task size; the others' do not).
  bool SameShards(const Plan& other) const;

  // The step's input tensors (x and targets, split as the strategy's tasks read them), made from
  // its mini-batch of `rows` rows; x is rows x widths[0], t is rows x target width.
  std::vector<KeyedTensor> StepInputs(int64_t step, int64_t rows, const std::vector<float>& x,
                                      const std::vector<float>& t) const;
  // Their keys alone, in the same order (no tensor is made).
  std::vector<std::string> StepInputKeys(int64_t step, int64_t rows) const;
  // The one with key `key`, bitwise the StepInputs entry; NotFound when the step has none.
  Result<std::vector<float>> StepInput(int64_t step, int64_t rows, std::string_view key,
                                       const std::vector<float>& x,
                                       const std::vector<float>& t) const;
  // Every task of step `step` whose mini-batch has `rows` rows, in an order that satisfies
  // their dependencies (the reference trainer runs them in exactly this order).
  std::vector<TaskSpec> StepTasks(int64_t step, int64_t rows) const;
  // Keys of the step's metrics tensors ([loss, correct] each); their sum, in this order, is the
  // mini-batch's mean loss and its count of correct predictions.
  std::vector<std::string> MetricKeys(int64_t step, int64_t rows) const;

  // True for parameter and velocity keys (versioned state, not scoped to a step).
  static bool IsStateKey(std::string_view key);

 private:
  // A step input: rows [r0, r1) and columns [c0, c1) of x, or of the targets.
  struct InputPart {
    std::string key;
    bool targets = false;
    int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  };
  std::vector<InputPart> InputParts(int64_t step, int64_t rows) const;
  std::vector<float> MakeInput(const InputPart& part, const std::vector<float>& x,
                               const std::vector<float>& t) const;
  TaskSpec Base(int64_t step, int64_t rows) const;
  void TilesTasks(int64_t step, int64_t rows, std::vector<TaskSpec>* out) const;
  void MicroBatchTasks(int64_t step, int64_t rows, std::vector<TaskSpec>* out) const;
  void UpdateTasks(int64_t step, int64_t rows, std::vector<TaskSpec>* out) const;
  void ChainTask(int64_t step, int64_t rows, std::vector<TaskSpec>* out) const;
  void ListStageTasks(int64_t step, int64_t rows, int64_t k, std::vector<TaskSpec>* out) const;
  struct TileCut {
    std::vector<int64_t> rows, cols;  // Cuts of its output units and of its input units
    bool bias = true;
    bool keeps_z = false;
  };
  TileCut TileCutOf(int l) const;
  void MakeStages(int64_t stages);
  int64_t MicroRows(int64_t rows) const;  // micro-batch rows for a mini-batch of `rows`

  Strategy strategy_ = Strategy::kData;
  int64_t task_size_ = 0;
  int64_t step_batch_ = 1;
  int64_t epoch_rows_ = 0;
  std::vector<int64_t> widths_;
  Activation activation_ = Activation::kTanh;
  LossKind loss_ = LossKind::kMse;
  TrainConfig train_;  // the learning rate of each step (TrainConfig::LearningRate)
  float momentum_ = 0;
  std::vector<std::pair<int, int>> stages_;
  std::vector<ShardSpec> shards_;
  std::vector<TileBand> bands_;  // the job's tile bands (tiles): empty, tiles of task_size_
  // A layer list's (Model::layer): its layers and one sample's shape; widths_ is then its
  // flattened input and output, and a shard's `layer` its index among the layers with weights.
  std::vector<LayerConfig> net_;
  std::vector<int64_t> input_shape_;
  int weight_layers_ = 0;  // layers with weights: NumLayers() for the widths form
  std::vector<Network::TileLayer> tile_layers_;  // a list's layers with weights cut in tiles
};

template <typename Get>
Model Plan::ModelFromState(Get get) const {
  Model m;
  m.widths = widths_;
  m.layer = net_;
  m.input_shape = input_shape_;
  m.weights.resize(weight_layers_);
  m.biases.resize(weight_layers_);
  for (const ShardSpec& s : shards_) {
    std::vector<float>& tensor = (s.bias ? m.biases : m.weights)[s.layer];
    if (s.tile.empty()) {
      tensor = get(s.key);
    } else {
      tensor.resize(s.tensor_shape[0] * s.RowLength());
      const std::vector<float> tile = get(s.key);
      // One `get` could not read (it says so to its caller) gives nothing to place.
      if (tile.size() == static_cast<size_t>(s.Size())) s.Place(tile, &tensor);
    }
  }
  return m;
}

}  // namespace acan::nn
