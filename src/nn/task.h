// One task of a training step: its key, its type, the keys of the tensors it reads and writes,
// and every number its kernel needs. A TaskSpec is self-contained: ExecuteTask (executor.h) needs
// nothing but the spec and the input tensors, so a handler that takes a task from the space can
// run it from EncodeTask's bytes alone. Plain value; thread-safe to copy.
//
// Keys follow the tuple space's key syntax (DESIGN.md section 2): dot-separated tokens of
// [A-Za-z0-9_-]. Task keys start with the task's verb (fwd, act, loss, bwd, bact, mb, upd);
// tensor keys with the tensor's kind; every step-scoped key carries the step as s<step>.
// See docs/nn.md for the full key scheme.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"

namespace acan::nn {

// The coarse class of a task, used to route it to handlers with that capability.
enum class TaskType { kForward, kActivation, kLoss, kBackward, kUpdate };

// What exactly a task computes.
enum class TaskOp {
  kTileForward,     // forward:    zp = a[:, c0:c1] * W[r0:r1, c0:c1]^T (one tile's partial sum)
  kTileActivation,  // activation: h = act(sum_c zp_c + b[r0:r1]), partials summed in c order
  kLoss,            // loss:       [loss, correct] and dz = d loss / dz, from the output blocks
  kTileBackward,    // backward:   gw tile, gb block (c0 == 0), input-gradient partial (layer > 0)
  kTileInputGrad,   // backward:   dz_prev = (sum_r dap_r) * act'(h), partials summed in r order
  kMicroBatch,      // backward:   forward + loss + backward of a micro-batch (data strategy)
  kStageForward,    // forward:    layers [layer, layer_end) on a micro-batch (pipeline)
  kStageBackward,   // backward:   gradients of layers [layer, layer_end) (pipeline)
  kUpdate,          // update:     reduce gradients in input order, then SGD on one shard
  kChain,           // update:     consecutive SGD steps (micro-batch, then every shard's update)
};

std::string_view ToString(TaskType t);  // "forward", "activation", "loss", "backward", "update"
// The type ToString names; InvalidArgument for any other name.
Result<TaskType> ParseTaskType(std::string_view name);
std::string_view ToString(TaskOp op);

struct TaskSpec {
  std::string key;  // e.g. "fwd.s12.l0.r1.c0"
  TaskType type = TaskType::kForward;
  TaskOp op = TaskOp::kTileForward;
  int64_t step = 0;
  std::vector<std::string> inputs;   // tensor keys, in the order ExecuteTask expects them
  std::vector<std::string> outputs;  // tensor keys of ExecuteTask's outputs, in order

  // Model and training constants.
  std::vector<int64_t> widths;  // model.layers
  Activation activation = Activation::kTanh;
  LossKind loss = LossKind::kMse;
  float lr = 0;
  // Chain: the learning rate of each of its steps when they differ (lr decay); empty = lr.
  std::vector<float> lrs;
  float momentum = 0;
  // Geometry.
  int64_t rows = 0;        // batch rows this task sees (a micro-batch, the mini-batch, a chain's)
  int64_t batch = 0;       // rows of the whole mini-batch: the loss is scaled by 1 / batch
  int layer = 0;           // the layer (tiles, update); the first layer of a stage (pipeline)
  int layer_end = 0;       // one past the last layer of a stage
  int64_t r0 = 0, r1 = 0;  // output rows (of the weight) of a tile
  int64_t c0 = 0, c1 = 0;  // input columns (of the weight) of a tile
  int64_t block = 0;       // tile edge (loss and update of the tiles strategy); 0 = not tiled
  // The loss of tiles cut in bands (their blocks differ in width): where each of its parts begins
  // in the output, then the output's width (parts + 1 entries). Empty: parts of `block`.
  std::vector<int64_t> part_edges;
  int parts = 0;      // how many partial sums or gradients this task reduces
  bool bias = false;  // update: the shard is a bias

  // A model given as a list of layers (JobConfig's [[model.layer]], network.h): its layers and
  // one sample's shape; `widths` is then the flattened input and output, `layer` an update's
  // index among the layers with weights. Empty: the widths form.
  std::vector<LayerConfig> net;
  std::vector<int64_t> input_shape;
  // Dropout's mask: the job's seed, and the index of the task's first mini-batch in the run (-1:
  // the step's); row i of a micro-batch starting at row r0 of that mini-batch is the run's sample
  // (mini-batch index) * batch + r0 + i.
  uint64_t seed = 0;
  int64_t batch_index = -1;

  int NumLayers() const { return static_cast<int>(widths.size()) - 1; }
};

// The largest task DecodeTask accepts: layers, and floats in any one of its tensors (rows x a
// width, a weight): 2^31, 8 GiB.
inline constexpr int kMaxTaskLayers = 256;
inline constexpr int64_t kMaxTaskElements = int64_t{1} << 31;

// Compact JSON; DecodeTask(EncodeTask(t)) == t field for field.
std::string EncodeTask(const TaskSpec& task);
Result<TaskSpec> DecodeTask(std::string_view bytes);

}  // namespace acan::nn
