#include "nn/executor.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

#include "nn/kernels.h"
#include "nn/list_tiles.h"
#include "nn/network.h"

namespace acan::nn {
namespace {

using Inputs = std::span<const std::span<const float>>;

int64_t TargetWidth(const TaskSpec& t) { return t.loss == LossKind::kMse ? t.widths.back() : 1; }
int64_t WeightSize(const TaskSpec& t, int l) { return t.widths[l + 1] * t.widths[l]; }
// The tile of the weight a tile task reads: rows [r0, r1), columns [c0, c1), a shard of its own.
int64_t TileSize(const TaskSpec& t) { return (t.r1 - t.r0) * (t.c1 - t.c0); }
// The floats of the shard an update task steps: rows [r0, r1) of its tensor, columns [c0, c1) of
// a weight.
int64_t UpdateSize(const TaskSpec& t) { return (t.r1 - t.r0) * (t.bias ? 1 : t.c1 - t.c0); }
// Width of block r when `n` is split into blocks of `block` (0 = one block).
int64_t BlockWidth(int64_t n, int64_t block, int64_t r) {
  if (block == 0) return n;
  return std::min(n, (r + 1) * block) - r * block;
}

// Where part p of a loss's output blocks begins, and its width: part_edges when the tiles are cut
// in bands, else blocks of `block`.
std::pair<int64_t, int64_t> LossPart(const TaskSpec& t, int64_t p) {
  if (!t.part_edges.empty()) return {t.part_edges[p], t.part_edges[p + 1] - t.part_edges[p]};
  return {p * t.block, BlockWidth(t.widths.back(), t.block, p)};
}
Activation ActOf(const TaskSpec& t, int layer) {
  return layer == t.NumLayers() - 1 ? Activation::kIdentity : t.activation;
}

// h_l for l in [l0, l1) from a (rows x widths[l0]); w/b point at each layer's parameters.
void ForwardLayers(const TaskSpec& t, const float* a, int l0, int l1, const float* const* w,
                   const float* const* b, std::vector<std::vector<float>>* hs) {
  const float* in = a;
  for (int l = l0; l < l1; ++l) {
    std::vector<float>& h = (*hs)[l - l0];
    h.resize(t.rows * t.widths[l + 1]);
    DenseForward(in, t.rows, t.widths[l], w[l - l0], t.widths[l], t.widths[l + 1], b[l - l0],
                 h.data());
    ApplyActivation(ActOf(t, l), h.data(), static_cast<int64_t>(h.size()));
    in = h.data();
  }
}

// Backward through layers [l0, l1): dz is d loss / dz of layer l1-1 (consumed), acts[l - l0] is
// the input of layer l. Writes *gw[l - l0] / *gb[l - l0] per layer and, when dz_prev is not null,
// d loss / dz of layer l0-1.
void BackwardLayers(const TaskSpec& t, std::vector<float> dz, int l0, int l1,
                    const std::vector<const float*>& acts, const float* const* w,
                    std::vector<float>* const* gw, std::vector<float>* const* gb,
                    std::vector<float>* dz_prev) {
  std::vector<float> scratch;
  for (int l = l1 - 1; l >= l0; --l) {
    const int64_t in = t.widths[l], out = t.widths[l + 1];
    const int i = l - l0;
    gw[i]->resize(out * in);
    gb[i]->resize(out);
    WeightGrad(dz.data(), out, acts[i], in, t.rows, out, in, gw[i]->data(), in);
    BiasGrad(dz.data(), out, t.rows, out, gb[i]->data());
    if (l == l0 && dz_prev == nullptr) break;
    std::vector<float>& da = l == l0 ? *dz_prev : scratch;
    da.resize(t.rows * in);
    InputGrad(dz.data(), out, t.rows, out, w[i], in, in, da.data(), in);
    ApplyActivationGrad(ActOf(t, l - 1), acts[i], da.data(), static_cast<int64_t>(da.size()));
    if (l != l0) std::swap(dz, scratch);
  }
}

Status RunLoss(const TaskSpec& t, Inputs in, std::vector<std::vector<float>>* out) {
  const int64_t o = t.widths.back();
  const int parts = std::max(1, t.parts);
  const float* z = in[0].data();
  std::vector<float> whole;
  if (parts > 1) {  // gather the row blocks into rows x o
    whole.resize(t.rows * o);
    for (int p = 0; p < parts; ++p) {
      const auto [off, w] = LossPart(t, p);
      for (int64_t r = 0; r < t.rows; ++r)
        std::copy_n(in[p].data() + r * w, w, &whole[r * o + off]);
    }
    z = whole.data();
  }
  std::vector<float> whole_dz;
  std::vector<float>& dz = parts == 1 ? (*out)[1] : whole_dz;
  dz.resize(t.rows * o);
  ACAN_ASSIGN_OR_RETURN(LossValue v, ComputeLoss(t.loss, z, t.rows, o, in[parts].data(),
                                                 1.0 / static_cast<double>(t.batch), dz.data()));
  (*out)[0] = {static_cast<float>(v.loss), static_cast<float>(v.correct)};
  if (parts == 1) return Status::Ok();
  for (int p = 0; p < parts; ++p) {
    const auto [off, w] = LossPart(t, p);
    std::vector<float>& d = (*out)[1 + p];
    d.resize(t.rows * w);
    for (int64_t r = 0; r < t.rows; ++r) std::copy_n(&dz[r * o + off], w, &d[r * w]);
  }
  return Status::Ok();
}

void RunUpdate(const TaskSpec& t, Inputs in, std::vector<std::vector<float>>* out) {
  const int64_t n = UpdateSize(t);
  std::vector<float>& w = (*out)[0];
  w.resize(n);
  const float* g = in[1].data();
  if (t.parts > 1) {
    // Sum the micro-batch gradients in input order and step, element by element, in one pass
    // over memory (the same additions in the same order as summing whole tensors first).
    const float* v = t.momentum > 0 ? in[1 + t.parts].data() : nullptr;
    float* v_out = nullptr;
    if (v != nullptr) {
      (*out)[1].resize(n);
      v_out = (*out)[1].data();
    }
    const float* wi = in[0].data();
    float* wo = w.data();
    const float lr = t.lr, m = t.momentum;
    constexpr int64_t kChunk = 1024;  // a chunk of the sum stays in L1
    float acc[kChunk];
    for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
      const int64_t len = std::min(kChunk, n - i0);
      std::copy_n(in[1].data() + i0, len, acc);
      for (int p = 1; p < t.parts; ++p) {
        const float* gp = in[1 + p].data() + i0;
        for (int64_t i = 0; i < len; ++i) acc[i] += gp[i];
      }
      SgdUpdate(wi + i0, acc, v ? v + i0 : nullptr, lr, m, len, wo + i0,
                v_out ? v_out + i0 : nullptr);
    }
    return;
  }
  if (t.momentum > 0) {
    std::vector<float>& v = (*out)[1];
    v.resize(n);
    SgdUpdate(in[0].data(), g, in[1 + t.parts].data(), t.lr, t.momentum, n, w.data(), v.data());
  } else {
    SgdUpdate(in[0].data(), g, nullptr, t.lr, 0, n, w.data(), nullptr);
  }
}

// The network of a task on a list of layers (DecodeTask has checked that it builds).
Network NetOf(const TaskSpec& t) { return *Network::Create(t.net, t.input_shape); }

// The sizes of the model's shards in order: each layer's weight and bias, or a list's parameters.
void AppendShardSizes(const TaskSpec& t, std::vector<int64_t>* s) {
  if (!t.net.empty()) {
    const Network net = NetOf(t);
    for (const ListParam& p : net.params()) s->push_back(p.Size());
    return;
  }
  for (int l = 0; l < t.NumLayers(); ++l) s->insert(s->end(), {WeightSize(t, l), t.widths[l + 1]});
}
size_t NumShards(const TaskSpec& t) {
  return t.net.empty() ? size_t(2 * t.NumLayers()) : NetOf(t).params().size();
}

// What a task on a list of layers passes the network besides its tensors: its rows [r0, r0 +
// rows) of the mini-batch with index batch_index (the step when -1), which key dropout's mask.
struct ListBatch {
  std::vector<int64_t> samples;
  Network::Batch batch;
  explicit ListBatch(const TaskSpec& t) : samples(static_cast<size_t>(t.rows)) {
    for (int64_t i = 0; i < t.rows; ++i) samples[size_t(i)] = t.r0 + i;
    batch.rows = t.rows;
    batch.samples = samples.data();
    batch.epoch = t.batch_index >= 0 ? t.batch_index : t.step;
    batch.seed = t.seed;
  }
};

// A micro-batch on a list of layers: the network's pass, loss and backward on its rows.
Status RunListMicroBatch(const TaskSpec& t, Inputs in, std::vector<std::vector<float>>* out) {
  const Network net = NetOf(t);
  std::vector<const float*> params;
  for (size_t i = 0; i < net.params().size(); ++i) params.push_back(in[2 + i].data());
  ListBatch b(t);
  b.batch.x = in[0].data();
  b.batch.targets = in[1].data();
  std::vector<std::vector<float>> grads;
  ACAN_ASSIGN_OR_RETURN(LossValue v, net.Run(b.batch, params, t.loss,
                                             1.0 / static_cast<double>(t.batch), true, &grads));
  (*out)[0] = {static_cast<float>(v.loss), static_cast<float>(v.correct)};
  for (size_t i = 0; i < grads.size(); ++i) (*out)[1 + i] = std::move(grads[i]);
  return Status::Ok();
}

// A list's pipeline stage (weight layers [t.layer, t.layer_end)): its layers and parameters.
struct ListStage {
  Network net;
  int i0 = 0, i1 = 0;  // its layers
  int p0 = 0, p1 = 0;  // its parameters
};
ListStage StageOf(const TaskSpec& t) {
  ListStage s{NetOf(t)};
  std::tie(s.i0, s.i1) = s.net.StageLayers(t.layer, t.layer_end);
  std::tie(s.p0, s.p1) = s.net.ParamRange(s.i0, s.i1);
  return s;
}
void AppendStageParamSizes(const ListStage& s, std::vector<int64_t>* out) {
  for (int p = s.p0; p < s.p1; ++p) out->push_back(s.net.params()[size_t(p)].Size());
}
// A pointer for each parameter of the network: the stage's from the task's inputs, from input
// `first` on; the others null (the stage reads no other).
std::vector<const float*> StageParams(const ListStage& s, Inputs in, size_t first) {
  std::vector<const float*> params(s.net.params().size(), nullptr);
  for (int p = s.p0; p < s.p1; ++p) params[size_t(p)] = in[first + size_t(p - s.p0)].data();
  return params;
}

// A list's stage forward: the stage's output from its input. Inputs: the stage's input, its
// parameters.
Status RunListStageForward(const TaskSpec& t, Inputs in, std::vector<std::vector<float>>* out) {
  const ListStage s = StageOf(t);
  const std::vector<const float*> params = StageParams(s, in, 1);
  ListBatch b(t);
  std::vector<std::vector<float>> acts;
  ACAN_RETURN_IF_ERROR(s.net.ForwardRange(b.batch, s.i0, s.i1, in[0].data(), params, true, &acts));
  (*out)[0] = std::move(acts[size_t(s.i1)]);
  return Status::Ok();
}

// A list's stage backward: the stage forward again from its input, then back through it.
// Inputs: d loss / d (the stage's output), the stage's input, its parameters. Outputs: their
// gradients, then (not the first stage) d loss / d (the stage's input).
Status RunListStageBackward(const TaskSpec& t, Inputs in, std::vector<std::vector<float>>* out) {
  const ListStage s = StageOf(t);
  const std::vector<const float*> params = StageParams(s, in, 2);
  ListBatch b(t);
  std::vector<std::vector<float>> acts, grads(s.net.params().size());
  ACAN_RETURN_IF_ERROR(s.net.ForwardRange(b.batch, s.i0, s.i1, in[1].data(), params, true, &acts));
  const bool first = t.layer == 0;
  std::vector<float> dx;
  s.net.BackwardRange(b.batch, s.i0, s.i1, in[1].data(), acts,
                      std::vector<float>(in[0].begin(), in[0].end()), params, true, &grads,
                      first ? nullptr : &dx);
  for (int p = s.p0; p < s.p1; ++p) (*out)[size_t(p - s.p0)] = std::move(grads[size_t(p)]);
  if (!first) (*out)[size_t(s.p1 - s.p0)] = std::move(dx);
  return Status::Ok();
}

// The chain: mini-batch after mini-batch, exactly the data strategy's micro-batch task (one
// micro-batch) and then the update task of each shard, run through ExecuteTask with the same
// specs the data plan makes, so the bits match it. The running state lives in the outputs.
Status RunChain(const TaskSpec& t, Inputs in, std::vector<std::vector<float>>* out) {
  const int shards = static_cast<int>(NumShards(t));
  const bool momentum = t.momentum > 0;
  const int64_t f = t.widths[0], tw = TargetWidth(t);
  for (int i = 0; i < (momentum ? 2 * shards : shards); ++i)
    (*out)[1 + i].assign(in[2 + i].begin(), in[2 + i].end());

  // The specs the data plan makes for one mini-batch (keys are placeholders: only counts matter).
  auto inner = [&](TaskType type, TaskOp op, size_t inputs, size_t outputs) {
    TaskSpec s;
    s.key = t.key;
    s.type = type;
    s.op = op;
    s.step = t.step;
    s.widths = t.widths;
    s.activation = t.activation;
    s.loss = t.loss;
    s.momentum = t.momentum;
    s.net = t.net;
    s.input_shape = t.input_shape;
    s.seed = t.seed;
    s.inputs.assign(inputs, t.key);
    s.outputs.assign(outputs, t.key);
    return s;
  };
  TaskSpec mb = inner(TaskType::kBackward, TaskOp::kMicroBatch, 2 + shards, 1 + shards);
  mb.layer_end = t.layer_end;
  std::vector<TaskSpec> updates;
  std::vector<ListParam> params;
  if (!t.net.empty()) params = NetOf(t).params();
  for (int s = 0, weights = 0; s < shards; ++s) {
    updates.push_back(
        inner(TaskType::kUpdate, TaskOp::kUpdate, momentum ? 3 : 2, momentum ? 2 : 1));
    TaskSpec& u = updates.back();
    u.parts = 1;
    if (!t.net.empty()) {  // the whole tensor, as the data plan's update reads it
      u.bias = params[size_t(s)].bias;
      weights += u.bias ? 0 : 1;
      u.layer = weights - 1;
      u.r1 = params[size_t(s)].rows;
      u.c1 = params[size_t(s)].cols;
      continue;
    }
    u.layer = s / 2;
    u.bias = s % 2 == 1;
    u.r1 = t.widths[u.layer + 1];
    u.c1 = u.bias ? 1 : t.widths[u.layer];
  }
  std::vector<std::span<const float>> mb_in(2 + shards), up_in(momentum ? 3 : 2);
  std::vector<std::vector<float>> grads, state(momentum ? 2 : 1);
  double loss = 0, correct = 0;
  for (int64_t j = 0; j < t.parts; ++j) {
    const int64_t r0 = j * t.batch, rows = std::min(t.batch, t.rows - r0);
    mb.rows = mb.batch = rows;
    if (t.batch_index >= 0) mb.batch_index = t.batch_index + j;
    mb_in[0] = in[0].subspan(r0 * f, rows * f);
    mb_in[1] = in[1].subspan(r0 * tw, rows * tw);
    for (int i = 0; i < shards; ++i) mb_in[2 + i] = (*out)[1 + i];
    ACAN_RETURN_IF_ERROR(ExecuteTask(mb, mb_in, &grads));
    loss += double(grads[0][0]) * double(rows);
    correct += grads[0][1];
    for (int s = 0; s < shards; ++s) {
      TaskSpec& u = updates[s];
      u.rows = u.batch = rows;
      u.lr = t.lrs.empty() ? t.lr : t.lrs[j];
      state[0] = std::move((*out)[1 + s]);  // updated in place
      if (momentum) state[1] = std::move((*out)[1 + shards + s]);
      up_in[0] = state[0];
      up_in[1] = grads[1 + s];
      if (momentum) up_in[2] = state[1];
      ACAN_RETURN_IF_ERROR(ExecuteTask(u, up_in, &state));
      (*out)[1 + s] = std::move(state[0]);
      if (momentum) (*out)[1 + shards + s] = std::move(state[1]);
    }
  }
  (*out)[0] = {static_cast<float>(loss / double(t.rows)), static_cast<float>(correct)};
  return Status::Ok();
}

}  // namespace

std::vector<int64_t> InputSizes(const TaskSpec& t) {
  std::vector<int64_t> s;
  if (!t.net.empty() && IsTileOp(t.op)) return ListTileInputSizes(t);
  switch (t.op) {
    case TaskOp::kTileForward:
      return {t.rows * (t.c1 - t.c0), TileSize(t)};
    case TaskOp::kTileActivation:
      s.assign(t.parts, t.rows * (t.r1 - t.r0));
      s.push_back(t.r1 - t.r0);
      return s;
    case TaskOp::kLoss:
      for (int p = 0; p < std::max(1, t.parts); ++p) s.push_back(t.rows * LossPart(t, p).second);
      s.push_back(t.rows * TargetWidth(t));
      return s;
    case TaskOp::kTileBackward:
      return {t.rows * (t.r1 - t.r0), t.rows * (t.c1 - t.c0), TileSize(t)};
    case TaskOp::kTileInputGrad:
      s.assign(t.parts + 1, t.rows * (t.c1 - t.c0));
      return s;
    case TaskOp::kMicroBatch:
      s = {t.rows * t.widths[0], t.rows * TargetWidth(t)};
      AppendShardSizes(t, &s);
      return s;
    case TaskOp::kStageForward:
      if (!t.net.empty()) {
        const ListStage st = StageOf(t);
        s = {t.rows * st.net.ActivationSize(st.i0)};
        AppendStageParamSizes(st, &s);
        return s;
      }
      s = {t.rows * t.widths[t.layer]};
      for (int l = t.layer; l < t.layer_end; ++l)
        s.insert(s.end(), {WeightSize(t, l), t.widths[l + 1]});
      return s;
    case TaskOp::kStageBackward:
      if (!t.net.empty()) {
        const ListStage st = StageOf(t);
        s = {t.rows * st.net.ActivationSize(st.i1), t.rows * st.net.ActivationSize(st.i0)};
        AppendStageParamSizes(st, &s);
        return s;
      }
      s = {t.rows * t.widths[t.layer_end], t.rows * t.widths[t.layer]};
      for (int l = t.layer; l + 1 < t.layer_end; ++l) s.push_back(t.rows * t.widths[l + 1]);
      for (int l = t.layer; l < t.layer_end; ++l) s.push_back(WeightSize(t, l));
      return s;
    case TaskOp::kUpdate:
      s.assign(1 + t.parts + (t.momentum > 0 ? 1 : 0), UpdateSize(t));
      return s;
    case TaskOp::kChain:
      s = {t.rows * t.widths[0], t.rows * TargetWidth(t)};
      AppendShardSizes(t, &s);
      if (t.momentum > 0) AppendShardSizes(t, &s);
      return s;
  }
  return s;
}

std::vector<int64_t> OutputSizes(const TaskSpec& t) {
  std::vector<int64_t> s;
  if (!t.net.empty() && IsTileOp(t.op)) return ListTileOutputSizes(t);
  switch (t.op) {
    case TaskOp::kTileForward:
    case TaskOp::kTileActivation:
      return {t.rows * (t.r1 - t.r0)};
    case TaskOp::kLoss:
      s.push_back(2);
      for (int p = 0; p < std::max(1, t.parts); ++p) s.push_back(t.rows * LossPart(t, p).second);
      return s;
    case TaskOp::kTileBackward:
      s.push_back((t.r1 - t.r0) * (t.c1 - t.c0));
      if (t.c0 == 0) s.push_back(t.r1 - t.r0);
      if (t.layer > 0) s.push_back(t.rows * (t.c1 - t.c0));
      return s;
    case TaskOp::kTileInputGrad:
      return {t.rows * (t.c1 - t.c0)};
    case TaskOp::kMicroBatch:
      s.push_back(2);
      AppendShardSizes(t, &s);
      return s;
    case TaskOp::kStageForward:
      if (!t.net.empty()) {
        const ListStage st = StageOf(t);
        return {t.rows * st.net.ActivationSize(st.i1)};
      }
      for (int l = t.layer; l < t.layer_end; ++l) s.push_back(t.rows * t.widths[l + 1]);
      return s;
    case TaskOp::kStageBackward:
      if (!t.net.empty()) {
        const ListStage st = StageOf(t);
        AppendStageParamSizes(st, &s);
        if (t.layer > 0) s.push_back(t.rows * st.net.ActivationSize(st.i0));
        return s;
      }
      for (int l = t.layer; l < t.layer_end; ++l)
        s.insert(s.end(), {WeightSize(t, l), t.widths[l + 1]});
      if (t.layer > 0) s.push_back(t.rows * t.widths[t.layer]);
      return s;
    case TaskOp::kUpdate:
      s.assign(t.momentum > 0 ? 2 : 1, UpdateSize(t));
      return s;
    case TaskOp::kChain:
      s.push_back(2);
      AppendShardSizes(t, &s);
      if (t.momentum > 0) AppendShardSizes(t, &s);
      return s;
  }
  return s;
}

int64_t TaskWork(const TaskSpec& t) {
  int64_t work = 0;
  for (int64_t n : InputSizes(t)) work += n;
  for (int64_t n : OutputSizes(t)) work += n;
  return work;
}

Status ExecuteTask(const TaskSpec& t, Inputs in, std::vector<std::vector<float>>* out) {
  InitBlas();
  const std::vector<int64_t> sizes = InputSizes(t);
  if (in.size() != sizes.size() || in.size() != t.inputs.size()) {
    return Status::InvalidArgument("task " + t.key + ": got " + std::to_string(in.size()) +
                                   " inputs, expected " + std::to_string(sizes.size()) +
                                   " (the task names " + std::to_string(t.inputs.size()) + ")");
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (static_cast<int64_t>(in[i].size()) != sizes[i]) {
      return Status::InvalidArgument("task " + t.key + ": input " + t.inputs[i] + " has " +
                                     std::to_string(in[i].size()) + " values, expected " +
                                     std::to_string(sizes[i]) +
                                     " (a tensor of another step or task size?)");
    }
  }
  if (t.outputs.size() != OutputSizes(t).size()) {
    return Status::InvalidArgument("task " + t.key + ": names " + std::to_string(t.outputs.size()) +
                                   " outputs, its kernel makes " +
                                   std::to_string(OutputSizes(t).size()));
  }
  out->resize(t.outputs.size());
  const int L = t.NumLayers();
  if (!t.net.empty() && IsTileOp(t.op)) return RunListTile(t, in, out);
  switch (t.op) {
    case TaskOp::kTileForward: {
      const int64_t k = t.c1 - t.c0;
      (*out)[0].resize(t.rows * (t.r1 - t.r0));
      DenseForward(in[0].data(), t.rows, k, in[1].data(), k, t.r1 - t.r0, nullptr,
                   (*out)[0].data());
      break;
    }
    case TaskOp::kTileActivation: {
      const int64_t n = t.r1 - t.r0;
      std::vector<float>& h = (*out)[0];
      h = SumParts(in, t.parts);
      const float* b = in[t.parts].data();
      for (int64_t r = 0; r < t.rows; ++r)
        for (int64_t j = 0; j < n; ++j) h[r * n + j] += b[j];
      ApplyActivation(ActOf(t, t.layer), h.data(), static_cast<int64_t>(h.size()));
      break;
    }
    case TaskOp::kLoss:
      ACAN_RETURN_IF_ERROR(RunLoss(t, in, out));
      break;
    case TaskOp::kTileBackward: {
      const int64_t n = t.r1 - t.r0, k = t.c1 - t.c0;
      const float* w = in[2].data();
      size_t o = 0;
      (*out)[o].resize(n * k);
      WeightGrad(in[0].data(), n, in[1].data(), k, t.rows, n, k, (*out)[o++].data(), k);
      if (t.c0 == 0) {
        (*out)[o].resize(n);
        BiasGrad(in[0].data(), n, t.rows, n, (*out)[o++].data());
      }
      if (t.layer > 0) {
        (*out)[o].resize(t.rows * k);
        InputGrad(in[0].data(), n, t.rows, n, w, k, k, (*out)[o].data(), k);
      }
      break;
    }
    case TaskOp::kTileInputGrad: {
      std::vector<float>& d = (*out)[0];
      d = SumParts(in, t.parts);
      ApplyActivationGrad(ActOf(t, t.layer - 1), in[t.parts].data(), d.data(),
                          static_cast<int64_t>(d.size()));
      break;
    }
    case TaskOp::kMicroBatch: {
      if (!t.net.empty()) return RunListMicroBatch(t, in, out);
      std::vector<const float*> w(L), b(L), acts(L);
      for (int l = 0; l < L; ++l) w[l] = in[2 + 2 * l].data(), b[l] = in[3 + 2 * l].data();
      std::vector<std::vector<float>> hs(L);
      ForwardLayers(t, in[0].data(), 0, L, w.data(), b.data(), &hs);
      acts[0] = in[0].data();
      for (int l = 1; l < L; ++l) acts[l] = hs[l - 1].data();
      std::vector<float> dz(t.rows * t.widths.back());
      ACAN_ASSIGN_OR_RETURN(
          LossValue v, ComputeLoss(t.loss, hs.back().data(), t.rows, t.widths.back(), in[1].data(),
                                   1.0 / static_cast<double>(t.batch), dz.data()));
      (*out)[0] = {static_cast<float>(v.loss), static_cast<float>(v.correct)};
      std::vector<std::vector<float>*> gw(L), gb(L);
      for (int l = 0; l < L; ++l) gw[l] = &(*out)[1 + 2 * l], gb[l] = &(*out)[2 + 2 * l];
      BackwardLayers(t, std::move(dz), 0, L, acts, w.data(), gw.data(), gb.data(), nullptr);
      break;
    }
    case TaskOp::kStageForward: {
      if (!t.net.empty()) return RunListStageForward(t, in, out);
      const int n = t.layer_end - t.layer;
      std::vector<const float*> w(n), b(n);
      for (int i = 0; i < n; ++i) w[i] = in[1 + 2 * i].data(), b[i] = in[2 + 2 * i].data();
      ForwardLayers(t, in[0].data(), t.layer, t.layer_end, w.data(), b.data(), out);
      break;
    }
    case TaskOp::kStageBackward: {
      if (!t.net.empty()) return RunListStageBackward(t, in, out);
      const int n = t.layer_end - t.layer;
      std::vector<const float*> acts(n), w(n);
      for (int i = 0; i < n; ++i) acts[i] = in[1 + i].data();
      for (int i = 0; i < n; ++i) w[i] = in[1 + n + i].data();
      std::vector<std::vector<float>*> gw(n), gb(n);
      for (int i = 0; i < n; ++i) gw[i] = &(*out)[2 * i], gb[i] = &(*out)[2 * i + 1];
      BackwardLayers(t, std::vector<float>(in[0].begin(), in[0].end()), t.layer, t.layer_end, acts,
                     w.data(), gw.data(), gb.data(), t.layer > 0 ? &(*out)[2 * n] : nullptr);
      break;
    }
    case TaskOp::kUpdate:
      RunUpdate(t, in, out);
      break;
    case TaskOp::kChain:
      if (t.parts != (t.rows + t.batch - 1) / t.batch) {
        return Status::InvalidArgument("task " + t.key + ": " + std::to_string(t.parts) +
                                       " steps do not cut " + std::to_string(t.rows) +
                                       " rows into mini-batches of " + std::to_string(t.batch));
      }
      if (!t.lrs.empty() && static_cast<int64_t>(t.lrs.size()) != t.parts) {
        return Status::InvalidArgument("task " + t.key + ": " + std::to_string(t.lrs.size()) +
                                       " learning rates for " + std::to_string(t.parts) + " steps");
      }
      ACAN_RETURN_IF_ERROR(RunChain(t, in, out));
      break;
  }
  return Status::Ok();
}

}  // namespace acan::nn
