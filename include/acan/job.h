// The job file: model, data, training, partition, runtime and chaos settings of one training run.
//
// A job is described by a TOML file with the sections [model], [data], [train], [partition],
// [runtime] and [chaos] (see docs/nn.md and DESIGN.md section 6a). ParseJobFile/ParseJobString
// turn it into a JobConfig of plain values; unknown keys, wrong types and out-of-range values are
// InvalidArgument errors that name the key and its line. Every field has a documented default, so
// a section may be omitted. JobConfig is a plain value: copy it freely between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acan/export.h"
#include "acan/status.h"

namespace acan {

// Non-linearity between layers; the last layer is always linear.
enum class Activation { kRelu, kTanh, kSigmoid, kIdentity };
// mse = (1/B) sum_b sum_o 1/2 (y-t)^2; softmax_cross_entropy = (1/B) sum_b -log softmax(z_b)[t_b].
enum class LossKind { kMse, kSoftmaxCrossEntropy };
enum class DataSource { kSynthetic, kCsv, kIdx, kFashionMnist };
// Input scaling applied when the data is loaded: none keeps the values; unit divides every feature
// by 255 (pixel bytes to [0, 1]); auto is unit for idx and fashion-mnist, none otherwise.
enum class InputScale { kAuto, kNone, kUnit };
// tiles: each layer's weight split into task_size x task_size blocks; data: a task is the
// forward+backward of a micro-batch of task_size rows; pipeline: stages of layers, each task one
// stage on a micro-batch of task_size rows; chain: a task runs task_size consecutive SGD steps
// (mini-batches) on the whole model, so one hand-over through the space serves many small steps
// (bitwise the same weights as data with one micro-batch per step).
enum class Strategy { kTiles, kData, kPipeline, kChain };

ACAN_EXPORT std::string_view ToString(Activation a);
ACAN_EXPORT std::string_view ToString(LossKind l);
ACAN_EXPORT std::string_view ToString(DataSource d);
ACAN_EXPORT std::string_view ToString(Strategy s);
ACAN_EXPORT std::string_view ToString(InputScale s);
ACAN_EXPORT Result<Activation> ParseActivation(std::string_view name);
ACAN_EXPORT Result<LossKind> ParseLossKind(std::string_view name);
ACAN_EXPORT Result<DataSource> ParseDataSource(std::string_view name);
ACAN_EXPORT Result<Strategy> ParseStrategy(std::string_view name);
ACAN_EXPORT Result<InputScale> ParseInputScale(std::string_view name);

// A layer of the list form of a model ([[model.layer]] tables, in order), with PyTorch's names
// for its parameters: conv2d (in_channels, out_channels, kernel_size, stride = 1, padding = 0,
// bias = true), max_pool2d and avg_pool2d (kernel_size, stride = kernel_size, padding = 0),
// flatten, linear (in_features, out_features, bias = true), relu, tanh, sigmoid, dropout (p = 0.5).
enum class LayerType {
  kConv2d,
  kMaxPool2d,
  kAvgPool2d,
  kFlatten,
  kLinear,
  kRelu,
  kTanh,
  kSigmoid,
  kDropout
};
ACAN_EXPORT std::string_view ToString(LayerType t);
ACAN_EXPORT Result<LayerType> ParseLayerType(std::string_view name);

struct LayerConfig {
  LayerType type = LayerType::kLinear;
  int64_t in = 0;                      // linear: in_features; conv2d: in_channels
  int64_t out = 0;                     // linear: out_features; conv2d: out_channels
  int64_t kernel_h = 0, kernel_w = 0;  // conv2d, pools: kernel_size (an integer or [h, w])
  int64_t stride = 0;                  // conv2d: 1 when 0; pools: kernel_size when 0
  int64_t padding = 0;
  bool bias = true;  // conv2d, linear
  double p = 0.5;    // dropout: the probability of dropping a unit, in [0, 1)
  bool operator==(const LayerConfig&) const = default;
};

struct ModelConfig {
  std::vector<int64_t> layers = {44, 44, 1};  // widths: input, hidden..., output
  // The list form, [[model.layer]] (empty: the widths above). A list that is a stack of linear
  // layers with one activation between them (after an optional flatten) is trained as those
  // widths and that activation; others (convolutions, pooling, dropout) train as a list
  // (nn::Network) with the data, pipeline and chain strategies (docs/nn.md). `layers` then holds
  // the list's input and output widths, flattened.
  std::vector<LayerConfig> layer;
  // One sample's shape, [features] or [channels, height, width]; empty: the data set's
  // (fashion-mnist: [1, 28, 28]; the first linear layer's in_features otherwise).
  std::vector<int64_t> input_shape;
  Activation activation = Activation::kTanh;
  LossKind loss = LossKind::kMse;
  // "xavier_uniform" | "kaiming_uniform" | "zeros", or a path to a .safetensors file (relative
  // paths are resolved against JobConfig::base_dir).
  std::string init = "xavier_uniform";
};

struct ACAN_EXPORT DataConfig {
  DataSource source = DataSource::kSynthetic;
  int64_t samples = 100;  // synthetic only: number of samples
  int64_t limit = 0;      // csv, idx, fashion-mnist: 0 = every row, n = the first n rows
  std::string path;       // csv
  std::string images;     // idx
  std::string labels;     // idx
  bool shuffle = true;    // seeded by train.seed and the epoch; false keeps file order

  // Input preprocessing, the same for the training and the test rows.
  InputScale scale = InputScale::kAuto;
  // Per-feature (x - mean) / std with mean and std of the training rows (after scale and limit),
  // applied to the test rows too; a feature with std < 1e-6 is only centred.
  bool standardize = false;

  // The held-out test split: csv takes test_path, idx takes test_images and test_labels (none
  // given: no test split); fashion-mnist always uses the package's t10k files.
  std::string test_path;    // csv
  std::string test_images;  // idx
  std::string test_labels;  // idx
  int64_t test_limit = 0;   // 0 = every test row, n = the first n

  // The scale in effect: `scale`, with auto resolved for `source`.
  InputScale EffectiveScale() const;
  // True when the job names a test split (fashion-mnist always has one).
  bool HasTestSplit() const;
};

struct ACAN_EXPORT TrainConfig {
  int64_t epochs = 2;
  int64_t batch = 1;
  double lr = 0.05;
  double momentum = 0.0;  // 0 = plain SGD; else v = m*v + g, w -= lr*v
  // Step decay of the learning rate: step s uses lr * lr_decay^floor(s / lr_decay_steps)
  // (lr_decay_steps = 0: constant lr). In steps, not epochs, so every process computes it from the
  // step alone; one epoch is ceil(rows / batch) steps.
  double lr_decay = 1.0;
  int64_t lr_decay_steps = 0;

  // The learning rate of global step `step`, as a float (what the update tasks use).
  float LearningRate(int64_t step) const;
  uint64_t seed = 42;
};

// A band of a tiles job's grid: a share of every width (the model's input, each layer's output)
// cut into blocks of `edge`. The bands lie in their order, band i over [W * S_i / S, W * S_(i+1) /
// S) of a width W (S_i: the shares before band i, S: all of them; integer division); a block at a
// band's end is as wide as what is left. A weight tile spans a row block and a column block, so
// tiles of bands with different edges differ in size. With budgets, each band is cut for handlers
// of that budget: a task goes only to handlers whose budget is at least the smallest band budget
// that holds it (runtime/core/budget.h).
inline constexpr size_t kMaxTileBands = 16;
inline constexpr int64_t kMaxTileBandShare = int64_t{1} << 20;
struct TileBand {
  int64_t edge = 0;    // >= 1
  int64_t share = 1;   // >= 1
  int64_t budget = 0;  // bytes: the handler budget the band is cut for (0: none; all or none)
  bool operator==(const TileBand&) const = default;
};

struct PartitionConfig {
  Strategy strategy = Strategy::kData;
  int64_t task_size = 0;  // tile edge, micro-batch rows or chain steps; 0 = automatic
  int64_t stages = 0;     // pipeline only: number of stages; 0 = one stage per layer
  // Tiles only: a grid of bands whose tiles differ in size (empty: tiles of task_size). Written
  // tile_bands = [{edge = 888, share = 1, budget = "32MiB"}, {edge = 444, share = 3, ...}]; the
  // runtime cuts one when the handlers' budgets differ (task_size = 0 and no bands given).
  std::vector<TileBand> tile_bands;
};

struct RuntimeConfig {
  int64_t handlers = 4;
  int64_t window = 1;
  std::string space = "mem:";
  // Copy a task the window waits on for a faster idle handler when a slow one holds it
  // (speculative execution: time for compute, the slow copy's work is thrown away).
  bool speculate = false;
  // Memory budgets in bytes (0: none): what a process may hold of acan's own data (tensors,
  // cached parameters, task inputs and outputs, its data set) on top of its baseline. The
  // handlers' budgets are cycled over handlers (one value: the same for all). A tiles job is cut
  // into tiles whose tasks fit the smallest handler budget; a handler refuses a task that does
  // not fit its own. Written `handler_memory = "16MiB"` (or a list), `manager_memory = "16MiB"`.
  std::vector<int64_t> handler_memory;
  int64_t manager_memory = 0;
};

struct ChaosConfig {
  bool enabled = false;         // true when the [chaos] section is present
  std::vector<double> speeds;   // per-handler slow-down factors, cycled over handlers
  double speed_change_s = 0;    // 0 = speeds never change
  double crash_interval_s = 0;  // 0 = no crashes
  double crash_probability = 0;
  bool crash_manager = false;
  // The two intervals in steps instead of seconds (> 0 replaces the seconds): the run times its
  // first fault-free steps and scales by their median, so the regime is the same on any machine.
  double speed_change_steps = 0;
  double crash_interval_steps = 0;
};

struct ACAN_EXPORT JobConfig {
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  PartitionConfig partition;
  RuntimeConfig runtime;
  ChaosConfig chaos;
  std::string base_dir;  // directory of the job file ("" for a string); resolves relative paths

  // Resolves `path` against base_dir unless it is absolute or empty.
  std::string Resolve(const std::string& path) const;
};

// Parses and validates a job file. `source_name` names the text in error messages.
ACAN_EXPORT Result<JobConfig> ParseJobFile(const std::string& path);
ACAN_EXPORT Result<JobConfig> ParseJobString(std::string_view text,
                                             std::string_view source_name = "<string>");
// Checks ranges and cross-field rules (e.g. csv needs data.path). Called by the parsers; call it
// again after overriding fields from the command line.
ACAN_EXPORT Status ValidateJob(const JobConfig& job);
// The job as a job file that ParseJobString reads back to the same configuration, relative paths
// resolved against base_dir (so another process, in another directory, finds the same files).
ACAN_EXPORT std::string ToToml(const JobConfig& job);

}  // namespace acan
