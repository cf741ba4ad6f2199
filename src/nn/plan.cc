#include "nn/plan.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "nn/network.h"
#include "nn/plan_keys.h"

namespace acan::nn {
namespace {

constexpr int64_t kDefaultTile = 128;

using plan_keys::Blocks;
using plan_keys::MomKey;
using plan_keys::ParamKey;
using plan_keys::S;
using plan_keys::T;

}  // namespace

bool Plan::IsStateKey(std::string_view key) {
  return key.starts_with("param.") || key.starts_with("mom.");
}

int64_t Plan::Parameters(const JobConfig& job) {
  if (IsLayerList(job.model)) {
    Result<std::vector<int64_t>> input = LayerListInput(job);
    Result<Network> net =
        input.ok() ? Network::Create(job.model.layer, *input) : Result<Network>(input.status());
    return net.ok() ? net->NumParameters() : 0;
  }
  int64_t n = 0;
  for (size_t l = 0; l + 1 < job.model.layers.size(); ++l) {
    n += (job.model.layers[l] + 1) * job.model.layers[l + 1];
  }
  return n;
}

int64_t Plan::ChainSteps(const JobConfig& job, int64_t epoch_rows) {
  constexpr int64_t kChainWork = int64_t{1} << 19;
  const int64_t weights = Parameters(job);
  int64_t k = std::max<int64_t>(1, kChainWork / std::max<int64_t>(1, weights * job.train.batch));
  if (epoch_rows > 0) k = std::min(k, Blocks(epoch_rows, job.train.batch));
  return k;
}

int64_t Plan::StepBatch(const JobConfig& job, int64_t task_size, int64_t epoch_rows) {
  if (job.partition.strategy != Strategy::kChain) return job.train.batch;
  const int64_t k = task_size >= 0 ? task_size : job.partition.task_size;
  return job.train.batch * (k > 0 ? k : ChainSteps(job, epoch_rows));
}

Result<Plan> Plan::Create(const JobConfig& job, int64_t task_size, int64_t epoch_rows) {
  ACAN_RETURN_IF_ERROR(ValidateJob(job));
  Plan p;
  p.strategy_ = job.partition.strategy;
  p.task_size_ = task_size >= 0 ? task_size : job.partition.task_size;
  if (p.task_size_ == 0 && p.strategy_ == Strategy::kTiles) p.task_size_ = kDefaultTile;
  if (p.strategy_ == Strategy::kTiles && !job.partition.tile_bands.empty()) {
    p.bands_ = job.partition.tile_bands;
    p.task_size_ = p.bands_[0].edge;  // the smallest edge, for what reports one
    for (const TileBand& b : p.bands_) p.task_size_ = std::min(p.task_size_, b.edge);
  }
  if (p.task_size_ == 0 && p.strategy_ == Strategy::kChain)
    p.task_size_ = ChainSteps(job, epoch_rows);
  p.epoch_rows_ = epoch_rows;
  p.step_batch_ = StepBatch(job, p.task_size_, epoch_rows);
  p.widths_ = job.model.layers;
  p.activation_ = job.model.activation;
  p.loss_ = job.model.loss;
  p.train_ = job.train;
  p.momentum_ = static_cast<float>(job.train.momentum);
  if (IsLayerList(job.model)) {
    ACAN_ASSIGN_OR_RETURN(p.input_shape_, LayerListInput(job));
    ACAN_ASSIGN_OR_RETURN(Network net, Network::Create(job.model.layer, p.input_shape_));
    p.net_ = job.model.layer;
    p.widths_ = {net.InputSize(), net.OutputSize()};
    const bool tiled = p.strategy_ == Strategy::kTiles;
    if (tiled) {
      if (!p.bands_.empty()) {
        return Status::InvalidArgument(
            "partition.tile_bands: a list of layers is cut in tiles of task_size alone, not in "
            "bands");
      }
      ACAN_ASSIGN_OR_RETURN(p.tile_layers_, net.TileLayers());
    }
    for (const ListParam& param : net.params()) {
      if (!param.bias) ++p.weight_layers_;
      const int w = p.weight_layers_ - 1;
      // Tiles: a weight's tiles are blocks of its output units (rows) by blocks of its input
      // units (columns: k_per_unit each), a bias's its row blocks; else the tensor whole.
      std::vector<int64_t> rows = {0, param.rows}, cols = {0, param.cols};
      if (tiled) {
        const Network::TileLayer& tl = p.tile_layers_[size_t(w)];
        rows = p.Cuts(tl.out_units);
        cols = param.bias ? std::vector<int64_t>{0, 1} : p.Cuts(tl.in_units);
        if (!param.bias) {
          for (int64_t& c : cols) c *= tl.k_per_unit;
        }
      }
      for (size_t r = 0; r + 1 < rows.size(); ++r) {
        for (size_t c = 0; c + 1 < cols.size(); ++c) {
          ShardSpec s;
          s.layer = w;
          s.bias = param.bias;
          s.tile = tiled ? T('r', int64_t(r)) + (param.bias ? "" : T('c', int64_t(c))) : "";
          s.key = ParamKey(s.layer, s.bias) + s.tile;
          s.momentum_key = p.momentum_ > 0 ? MomKey(s.layer, s.bias) + s.tile : "";
          s.name = param.name;
          s.r0 = rows[r], s.r1 = rows[r + 1];
          s.c0 = cols[c], s.c1 = cols[c + 1];
          s.tensor_shape = param.shape;
          s.shape = tiled ? (param.bias ? std::vector<int64_t>{s.r1 - s.r0}
                                        : std::vector<int64_t>{s.r1 - s.r0, s.c1 - s.c0})
                          : param.shape;
          p.shards_.push_back(std::move(s));
        }
      }
    }
    p.MakeStages(job.partition.stages);
    return p;
  }
  const int layers = p.NumLayers();
  p.weight_layers_ = layers;
  p.MakeStages(job.partition.stages);
  for (int l = 0; l < layers; ++l) {
    const int64_t in = p.widths_[l], out = p.widths_[l + 1];
    // Whole tensors, or (tiles) the weight's tiles row block by row block, then the bias's blocks.
    const bool tiled = p.strategy_ == Strategy::kTiles;
    const std::vector<int64_t> rows = tiled ? p.Cuts(out) : std::vector<int64_t>{0, out};
    const std::vector<int64_t> cols = tiled ? p.Cuts(in) : std::vector<int64_t>{0, in};
    const int64_t nr = int64_t(rows.size()) - 1, nc = int64_t(cols.size()) - 1;
    for (bool bias : {false, true}) {
      for (int64_t r = 0; r < nr; ++r) {
        for (int64_t c = 0; c < (bias ? 1 : nc); ++c) {
          ShardSpec s;
          s.tile = tiled ? T('r', r) + (bias ? "" : T('c', c)) : "";
          s.key = ParamKey(l, bias) + s.tile;
          s.momentum_key = p.momentum_ > 0 ? MomKey(l, bias) + s.tile : "";
          s.name = bias ? BiasName(l) : WeightName(l);
          s.layer = l;
          s.bias = bias;
          s.r0 = rows[r], s.r1 = rows[r + 1];
          s.c0 = bias ? 0 : cols[c], s.c1 = bias ? 1 : cols[c + 1];
          s.tensor_shape = bias ? std::vector<int64_t>{out} : std::vector<int64_t>{out, in};
          s.shape = bias ? std::vector<int64_t>{s.r1 - s.r0}
                         : std::vector<int64_t>{s.r1 - s.r0, s.c1 - s.c0};
          p.shards_.push_back(std::move(s));
        }
      }
    }
  }
  return p;
}

// Stages of layers with weights (a list's stage also takes the layers without weights after
// them: Network::StageLayers): `stages` of them, 0 = one a layer.
void Plan::MakeStages(int64_t stages) {
  const int layers = weight_layers_;
  const int n = stages == 0 ? layers : static_cast<int>(std::min<int64_t>(stages, layers));
  for (int s = 0; s < n; ++s) stages_.emplace_back(s * layers / n, (s + 1) * layers / n);
}

std::vector<KeyedTensor> Plan::InitialState(const Model& model) const {
  std::vector<KeyedTensor> out;
  for (const ShardSpec& s : shards_) {
    const std::vector<float>& v = s.bias ? model.biases[s.layer] : model.weights[s.layer];
    out.emplace_back(s.key, s.Slice(v));
    if (!s.momentum_key.empty()) out.emplace_back(s.momentum_key, std::vector<float>(s.Size()));
  }
  return out;
}

std::vector<int64_t> Plan::Cuts(int64_t width) const {
  std::vector<int64_t> cuts{0};
  auto cut = [&](int64_t from, int64_t to, int64_t edge) {
    for (int64_t at = from + edge; at < to; at += edge) cuts.push_back(at);
    if (to > from) cuts.push_back(to);
  };
  if (strategy_ != Strategy::kTiles) {
    cuts.push_back(width);
    return cuts;
  }
  if (bands_.empty()) {
    cut(0, width, task_size_);
    return cuts;
  }
  int64_t total = 0, before = 0;
  for (const TileBand& b : bands_) total += b.share;
  for (const TileBand& b : bands_) {
    const int64_t from = width * before / total;
    before += b.share;
    cut(from, width * before / total, b.edge);
  }
  return cuts;
}

bool Plan::SameShards(const Plan& other) const {
  if (shards_.size() != other.shards_.size()) return false;
  for (size_t i = 0; i < shards_.size(); ++i) {
    if (shards_[i].key != other.shards_[i].key || shards_[i].shape != other.shards_[i].shape)
      return false;
  }
  return true;
}

int64_t ShardSpec::RowLength() const {
  if (bias) return 1;
  return std::accumulate(tensor_shape.begin() + 1, tensor_shape.end(), int64_t{1},
                         std::multiplies<>());
}

std::vector<float> ShardSpec::Slice(std::span<const float> rows, int64_t first_row) const {
  const int64_t ld = RowLength(), cols = c1 - c0;
  std::vector<float> out(Size());
  for (int64_t r = r0; r < r1; ++r)
    std::copy_n(&rows[(r - first_row) * ld + c0], cols, &out[(r - r0) * cols]);
  return out;
}

void ShardSpec::Place(std::span<const float> shard, std::vector<float>* rows,
                      int64_t first_row) const {
  const int64_t ld = RowLength(), cols = c1 - c0;
  for (int64_t r = r0; r < r1; ++r)
    std::copy_n(&shard[(r - r0) * cols], cols, &(*rows)[(r - first_row) * ld + c0]);
}

Status Plan::ForEachInitialShard(
    const InitialWeights& init,
    const std::function<Status(const std::string&, std::vector<float>)>& emit) const {
  if (!net_.empty()) {
    return Status::InvalidArgument(
        "a model given as a list of layers is not drawn shard by shard (memory budgets) yet");
  }
  for (const ShardSpec& s : shards_) {
    ACAN_RETURN_IF_ERROR(emit(
        s.key, s.bias ? std::vector<float>(s.Size()) : init.Part(s.layer, s.r0, s.r1, s.c0, s.c1)));
    if (!s.momentum_key.empty()) {
      ACAN_RETURN_IF_ERROR(emit(s.momentum_key, std::vector<float>(s.Size())));
    }
  }
  return Status::Ok();
}

int64_t Plan::MicroRows(int64_t rows) const {
  return task_size_ == 0 ? rows : std::min(task_size_, rows);
}

// Where each step input comes from: rows [r0, r1) and columns [c0, c1) of x, or of the targets.
std::vector<Plan::InputPart> Plan::InputParts(int64_t step, int64_t rows) const {
  std::vector<InputPart> out;
  const int64_t in = widths_[0];
  const int64_t tw = loss_ == LossKind::kMse ? widths_.back() : 1;
  if (strategy_ == Strategy::kTiles) {
    // (A list's input is cut in blocks of its first layer's input units: channels.)
    std::vector<int64_t> cols = Cuts(net_.empty() ? in : tile_layers_[0].in_units);
    if (!net_.empty()) {
      for (int64_t& c : cols) c *= tile_layers_[0].in_per_unit;
    }
    for (size_t c = 0; c + 1 < cols.size(); ++c) {
      out.push_back({S("x", step) + T('c', int64_t(c)), false, 0, rows, cols[c], cols[c + 1]});
    }
    out.push_back({S("t", step), true, 0, rows, 0, tw});
    return out;
  }
  if (strategy_ == Strategy::kChain) {
    out.push_back({S("x", step), false, 0, rows, 0, in});
    out.push_back({S("t", step), true, 0, rows, 0, tw});
    return out;
  }
  const int64_t m = MicroRows(rows);
  for (int64_t k = 0; k < Blocks(rows, m); ++k) {
    const int64_t a = k * m, b = std::min(rows, a + m);
    out.push_back({S("x", step) + T('m', k), false, a, b, 0, in});
    out.push_back({S("t", step) + T('m', k), true, a, b, 0, tw});
  }
  return out;
}

std::vector<float> Plan::MakeInput(const InputPart& part, const std::vector<float>& x,
                                   const std::vector<float>& t) const {
  const std::vector<float>& from = part.targets ? t : x;
  const int64_t width = part.targets ? (loss_ == LossKind::kMse ? widths_.back() : 1) : widths_[0];
  const int64_t cols = part.c1 - part.c0;
  std::vector<float> out((part.r1 - part.r0) * cols);
  for (int64_t r = part.r0; r < part.r1; ++r) {
    std::copy(&from[r * width + part.c0], &from[r * width + part.c1], &out[(r - part.r0) * cols]);
  }
  return out;
}

std::vector<KeyedTensor> Plan::StepInputs(int64_t step, int64_t rows, const std::vector<float>& x,
                                          const std::vector<float>& t) const {
  std::vector<KeyedTensor> out;
  for (InputPart& part : InputParts(step, rows)) {
    std::vector<float> tensor = MakeInput(part, x, t);
    out.emplace_back(std::move(part.key), std::move(tensor));
  }
  return out;
}

std::vector<std::string> Plan::StepInputKeys(int64_t step, int64_t rows) const {
  std::vector<std::string> out;
  for (InputPart& part : InputParts(step, rows)) out.push_back(std::move(part.key));
  return out;
}

Result<std::vector<float>> Plan::StepInput(int64_t step, int64_t rows, std::string_view key,
                                           const std::vector<float>& x,
                                           const std::vector<float>& t) const {
  for (const InputPart& part : InputParts(step, rows)) {
    if (part.key == key) return MakeInput(part, x, t);
  }
  return Status::NotFound("step " + std::to_string(step) + " has no input '" + std::string(key) +
                          "'");
}

std::vector<std::string> Plan::MetricKeys(int64_t step, int64_t rows) const {
  if (strategy_ == Strategy::kTiles || strategy_ == Strategy::kChain) return {S("met", step)};
  std::vector<std::string> keys;
  for (int64_t k = 0; k < Blocks(rows, MicroRows(rows)); ++k)
    keys.push_back(S("met", step) + T('m', k));
  return keys;
}

TaskSpec Plan::Base(int64_t step, int64_t rows) const {
  TaskSpec t;
  t.step = step;
  t.widths = widths_;
  t.activation = activation_;
  t.loss = loss_;
  t.lr = train_.LearningRate(step);
  t.momentum = momentum_;
  t.rows = rows;
  t.batch = rows;
  t.net = net_;
  t.input_shape = input_shape_;
  if (!net_.empty()) t.seed = train_.seed;
  return t;
}

std::vector<TaskSpec> Plan::StepTasks(int64_t step, int64_t rows) const {
  std::vector<TaskSpec> out;
  if (strategy_ == Strategy::kChain) {
    ChainTask(step, rows, &out);
    return out;
  }
  if (strategy_ == Strategy::kTiles) {
    TilesTasks(step, rows, &out);
  } else {
    MicroBatchTasks(step, rows, &out);
  }
  UpdateTasks(step, rows, &out);
  return out;
}

// Layer l of the tiles strategy as its tasks see it: where its outputs (rows) and inputs
// (columns) are cut, whether it has a bias, and whether its activation task also hands on the
// block before the post-ops (a list's layer with post-ops that a later layer goes back through).
void Plan::MicroBatchTasks(int64_t step, int64_t rows, std::vector<TaskSpec>* out) const {
  const int64_t m = MicroRows(rows);
  const int64_t nk = Blocks(rows, m);
  const int layers = NumLayers();
  for (int64_t k = 0; k < nk; ++k) {
    const std::string mk = T('m', k);
    const int64_t mrows = std::min(rows, (k + 1) * m) - k * m;
    auto h = [&](int l) { return S("h", step) + T('l', l) + mk; };
    auto act_in = [&](int l) { return l == 0 ? S("x", step) + mk : h(l - 1); };
    if (strategy_ == Strategy::kData) {
      TaskSpec t = Base(step, mrows);
      t.batch = rows;
      t.key = S("mb", step) + mk;
      t.type = TaskType::kBackward;
      t.op = TaskOp::kMicroBatch;
      t.layer = 0;
      t.layer_end = layers;
      t.inputs = {S("x", step) + mk, S("t", step) + mk};
      t.outputs = {S("met", step) + mk};
      if (!net_.empty()) {
        t.layer_end = weight_layers_;
        t.r0 = k * m;  // its rows of the mini-batch (dropout's samples)
        t.r1 = t.r0 + mrows;
        for (const ShardSpec& s : shards_) {
          t.inputs.push_back(s.key);
          t.outputs.push_back(S(s.bias ? "gb" : "gw", step) + T('l', s.layer) + mk);
        }
        out->push_back(std::move(t));
        continue;
      }
      for (int l = 0; l < layers; ++l) {
        t.inputs.push_back(ParamKey(l, false));
        t.inputs.push_back(ParamKey(l, true));
        t.outputs.push_back(S("gw", step) + T('l', l) + mk);
        t.outputs.push_back(S("gb", step) + T('l', l) + mk);
      }
      out->push_back(std::move(t));
      continue;
    }
    if (!net_.empty()) {
      ListStageTasks(step, rows, k, out);
      continue;
    }
    for (size_t p = 0; p < stages_.size(); ++p) {
      const auto [l0, l1] = stages_[p];
      TaskSpec t = Base(step, mrows);
      t.batch = rows;
      t.key = S("fwd", step) + T('p', static_cast<int64_t>(p)) + mk;
      t.type = TaskType::kForward;
      t.op = TaskOp::kStageForward;
      t.layer = l0;
      t.layer_end = l1;
      t.inputs = {act_in(l0)};
      for (int l = l0; l < l1; ++l) {
        t.inputs.push_back(ParamKey(l, false));
        t.inputs.push_back(ParamKey(l, true));
        t.outputs.push_back(h(l));
      }
      out->push_back(std::move(t));
    }
    {
      TaskSpec t = Base(step, mrows);
      t.batch = rows;
      t.key = S("loss", step) + mk;
      t.type = TaskType::kLoss;
      t.op = TaskOp::kLoss;
      t.layer = layers - 1;
      t.parts = 1;
      t.inputs = {h(layers - 1), S("t", step) + mk};
      t.outputs = {S("met", step) + mk, S("dz", step) + T('l', layers - 1) + mk};
      out->push_back(std::move(t));
    }
    for (size_t p = stages_.size(); p-- > 0;) {
      const auto [l0, l1] = stages_[p];
      TaskSpec t = Base(step, mrows);
      t.batch = rows;
      t.key = S("bwd", step) + T('p', static_cast<int64_t>(p)) + mk;
      t.type = TaskType::kBackward;
      t.op = TaskOp::kStageBackward;
      t.layer = l0;
      t.layer_end = l1;
      t.inputs = {S("dz", step) + T('l', l1 - 1) + mk, act_in(l0)};
      for (int l = l0; l + 1 < l1; ++l) t.inputs.push_back(h(l));
      for (int l = l0; l < l1; ++l) t.inputs.push_back(ParamKey(l, false));
      for (int l = l0; l < l1; ++l) {
        t.outputs.push_back(S("gw", step) + T('l', l) + mk);
        t.outputs.push_back(S("gb", step) + T('l', l) + mk);
      }
      if (l0 > 0) t.outputs.push_back(S("dz", step) + T('l', l0 - 1) + mk);
      out->push_back(std::move(t));
    }
  }
}

// A list's pipeline on micro-batch k: each stage's forward task makes the stage's output alone
// (h of its last weight layer), the loss task the loss's gradient, and each stage's backward task
// runs the stage forward again from its input (the same bytes: the pass is a pure function of
// them) before going back through it, so a stage hands over one activation each way. Its
// gradients are keyed as the data strategy's micro-batch task keys them.
void Plan::ListStageTasks(int64_t step, int64_t rows, int64_t k, std::vector<TaskSpec>* out) const {
  const int64_t m = MicroRows(rows);
  const std::string mk = T('m', k);
  const int64_t mrows = std::min(rows, (k + 1) * m) - k * m;
  const int last = weight_layers_ - 1;
  auto h = [&](int l) { return S("h", step) + T('l', l) + mk; };
  auto act_in = [&](int l) { return l == 0 ? S("x", step) + mk : h(l - 1); };
  auto base = [&](int l0, int l1) {
    TaskSpec t = Base(step, mrows);
    t.batch = rows;
    t.layer = l0;
    t.layer_end = l1;
    t.r0 = k * m;  // its rows of the mini-batch (dropout's samples)
    t.r1 = t.r0 + mrows;
    return t;
  };
  // The keys of the parameters of weight layers [l0, l1), or of their gradients.
  auto stage_params = [&](int l0, int l1, bool grads, std::vector<std::string>* keys) {
    for (const ShardSpec& s : shards_) {
      if (s.layer < l0 || s.layer >= l1) continue;
      keys->push_back(grads ? S(s.bias ? "gb" : "gw", step) + T('l', s.layer) + mk : s.key);
    }
  };
  for (size_t p = 0; p < stages_.size(); ++p) {
    const auto [l0, l1] = stages_[p];
    TaskSpec t = base(l0, l1);
    t.key = S("fwd", step) + T('p', static_cast<int64_t>(p)) + mk;
    t.type = TaskType::kForward;
    t.op = TaskOp::kStageForward;
    t.inputs = {act_in(l0)};
    stage_params(l0, l1, false, &t.inputs);
    t.outputs = {h(l1 - 1)};
    out->push_back(std::move(t));
  }
  {
    TaskSpec t = base(last, last + 1);
    t.key = S("loss", step) + mk;
    t.type = TaskType::kLoss;
    t.op = TaskOp::kLoss;
    t.parts = 1;
    t.inputs = {h(last), S("t", step) + mk};
    t.outputs = {S("met", step) + mk, S("dz", step) + T('l', last) + mk};
    out->push_back(std::move(t));
  }
  for (size_t p = stages_.size(); p-- > 0;) {
    const auto [l0, l1] = stages_[p];
    TaskSpec t = base(l0, l1);
    t.key = S("bwd", step) + T('p', static_cast<int64_t>(p)) + mk;
    t.type = TaskType::kBackward;
    t.op = TaskOp::kStageBackward;
    t.inputs = {S("dz", step) + T('l', l1 - 1) + mk, act_in(l0)};
    stage_params(l0, l1, false, &t.inputs);
    stage_params(l0, l1, true, &t.outputs);
    if (l0 > 0) t.outputs.push_back(S("dz", step) + T('l', l0 - 1) + mk);
    out->push_back(std::move(t));
  }
}

// One task runs the step's mini-batches one after another on the whole model: each one exactly
// the data strategy's micro-batch task (a single micro-batch) and then its update tasks, so the
// weights are bitwise those of the data strategy with task size 0, whatever the chain length.
void Plan::ChainTask(int64_t step, int64_t rows, std::vector<TaskSpec>* out) const {
  TaskSpec t = Base(step, rows);
  t.key = S("chain", step);
  t.type = TaskType::kUpdate;  // it writes the next version of every shard
  t.op = TaskOp::kChain;
  t.layer = 0;
  t.layer_end = weight_layers_;
  t.batch = train_.batch;
  t.parts = static_cast<int>(Blocks(rows, train_.batch));
  // The global mini-batch index of the chain's first step: chains never cross an epoch.
  const int64_t batches = epoch_rows_ > 0 ? Blocks(epoch_rows_, train_.batch) : 0;
  const int64_t chains = batches > 0 ? Blocks(batches, task_size_) : 0;
  const int64_t first =
      chains > 0 ? (step / chains) * batches + (step % chains) * task_size_ : step * task_size_;
  t.lr = train_.LearningRate(first);
  if (!net_.empty()) t.batch_index = first;
  for (int64_t j = 1; j < t.parts && t.lrs.empty(); ++j) {
    if (train_.LearningRate(first + j) != t.lr) {
      for (int64_t i = 0; i < t.parts; ++i) t.lrs.push_back(train_.LearningRate(first + i));
    }
  }
  t.inputs = {S("x", step), S("t", step)};
  t.outputs = {S("met", step)};
  for (const ShardSpec& s : shards_) {
    t.inputs.push_back(s.key);
    t.outputs.push_back(s.key);
  }
  for (const ShardSpec& s : shards_) {
    if (s.momentum_key.empty()) continue;
    t.inputs.push_back(s.momentum_key);
    t.outputs.push_back(s.momentum_key);
  }
  out->push_back(std::move(t));
}

void Plan::UpdateTasks(int64_t step, int64_t rows, std::vector<TaskSpec>* out) const {
  for (const ShardSpec& s : shards_) {
    TaskSpec t = Base(step, rows);
    t.key = S("upd", step) + T('l', s.layer) + (s.bias ? ".b" : ".w") + s.tile;
    t.type = TaskType::kUpdate;
    t.op = TaskOp::kUpdate;
    t.layer = s.layer;
    t.bias = s.bias;
    t.r0 = s.r0, t.r1 = s.r1, t.c0 = s.c0, t.c1 = s.c1;
    t.inputs = {s.key};
    const std::string g = S(s.bias ? "gb" : "gw", step) + T('l', s.layer);
    if (strategy_ == Strategy::kTiles) {
      t.inputs.push_back(g + s.tile);  // a tile's gradient is whole: one task made it
    } else {
      for (int64_t k = 0; k < Blocks(rows, MicroRows(rows)); ++k) t.inputs.push_back(g + T('m', k));
    }
    t.parts = static_cast<int>(t.inputs.size()) - 1;
    t.outputs = {s.key};
    if (!s.momentum_key.empty()) {
      t.inputs.push_back(s.momentum_key);
      t.outputs.push_back(s.momentum_key);
    }
    out->push_back(std::move(t));
  }
}

}  // namespace acan::nn
