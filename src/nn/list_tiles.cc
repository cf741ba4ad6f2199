// A list of layers in tiles (Plan::TilesTasks, Network::TileLayers): the sizes and kernels of
// its tile, activation, backward and input-grad tasks.
#include "nn/list_tiles.h"

#include "nn/conv.h"
#include "nn/kernels.h"
#include "nn/network.h"

namespace acan::nn {

// Inputs 0 .. parts - 1 summed in that order (a tile's partial outputs, its parts of an input's
// gradient).
std::vector<float> SumParts(TileInputs in, int parts) {
  std::vector<float> sum(in[0].begin(), in[0].end());
  for (int p = 1; p < parts; ++p)
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += in[size_t(p)][i];
  return sum;
}

namespace {

// (DecodeTask has checked that the list builds.)
Network ListNet(const TaskSpec& t) { return *Network::Create(t.net, t.input_shape); }

// A list's tile task (the tiles strategy, Plan::TilesTasks): the layer with weights t.layer
// in units, and for an input-grad task the one before it, whose output block it goes back through.
struct ListTile {
  // (DecodeTask has checked that the list cuts into tiles.)
  explicit ListTile(const TaskSpec& t)
      : net(ListNet(t)), layers(*net.TileLayers()), index(t.layer) {}
  Network net;
  std::vector<Network::TileLayer> layers;
  int index = 0;
  const Network::TileLayer& at() const { return layers[size_t(index)]; }
  const Network::TileLayer& before() const { return layers[size_t(index - 1)]; }
  bool last() const { return index + 1 == static_cast<int>(layers.size()); }
};
ListTile TileOf(const TaskSpec& t) { return ListTile(t); }
bool HasPostOps(const Network::TileLayer& l) { return l.end > l.layer + 1; }
// A tile's input block: units [c0, c1) of the layer's input.
int64_t TileInput(const TaskSpec& t, const Network::TileLayer& l) {
  return t.rows * (t.c1 - t.c0) * l.in_per_unit;
}
int64_t ListTileSize(const TaskSpec& t, const Network::TileLayer& l) {
  return (t.r1 - t.r0) * (t.c1 - t.c0) * l.k_per_unit;
}
// The convolution of a tile: the layer's window over input block [c0, c1) alone.
Window2d TileWindow(const TaskSpec& t, const Network::TileLayer& l) {
  Window2d g = l.window;
  g.channels = t.c1 - t.c0;
  return g;
}
// What the post-ops of output block [u0, u1) of a layer pass the network: the whole mini-batch's
// rows in order (dropout's samples), the mini-batch's index, and the block's units.
struct TileBatch {
  std::vector<int64_t> samples;
  Network::Batch batch;
  TileBatch(const TaskSpec& t, int64_t u0, int64_t u1) : samples(static_cast<size_t>(t.rows)) {
    for (int64_t i = 0; i < t.rows; ++i) samples[size_t(i)] = i;
    batch.rows = t.rows;
    batch.samples = samples.data();
    batch.epoch = t.batch_index >= 0 ? t.batch_index : t.step;
    batch.seed = t.seed;
    batch.block0 = u0;
    batch.block_units = u1 - u0;
  }
};

Status RunListTileForward(const TaskSpec& t, TileInputs in, std::vector<std::vector<float>>* out) {
  const ListTile s = TileOf(t);
  const Network::TileLayer& l = s.at();
  const int64_t n = t.r1 - t.r0, k = (t.c1 - t.c0) * l.k_per_unit;
  std::vector<float>& z = (*out)[0];
  z.resize(size_t(t.rows * n * l.z_per_unit));
  if (l.conv) {
    std::vector<float> scratch;
    Conv2dForward(TileWindow(t, l), in[0].data(), t.rows, in[1].data(), k, n, nullptr, z.data(),
                  &scratch);
  } else {
    DenseForward(in[0].data(), t.rows, k, in[1].data(), k, n, nullptr, z.data());
  }
  return Status::Ok();
}

// The partials summed in order, the bias, the post-ops on the block. Outputs: h, then (when the
// plan asks for it) the block before the post-ops.
Status RunListTileActivation(const TaskSpec& t, TileInputs in,
                             std::vector<std::vector<float>>* out) {
  const ListTile s = TileOf(t);
  const Network::TileLayer& l = s.at();
  const int64_t n = t.r1 - t.r0;
  std::vector<float> z = SumParts(in, t.parts);
  if (l.bias) {
    const float* b = in[size_t(t.parts)].data();
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t j = 0; j < n; ++j) {
        float* plane = &z[size_t((r * n + j) * l.z_per_unit)];
        for (int64_t i = 0; i < l.z_per_unit; ++i) plane[i] += b[j];
      }
  }
  if (!HasPostOps(l)) {
    (*out)[0] = std::move(z);
    return Status::Ok();
  }
  ACAN_ASSIGN_OR_RETURN(Network post, s.net.PostOps(l, n));
  TileBatch b(t, t.r0, t.r1);
  std::vector<std::vector<float>> acts;
  const int end = static_cast<int>(post.layers().size());
  ACAN_RETURN_IF_ERROR(post.ForwardRange(b.batch, 0, end, z.data(), {}, true, &acts));
  (*out)[0] = std::move(acts[size_t(end)]);
  if (out->size() > 1) (*out)[1] = std::move(z);
  return Status::Ok();
}

// A tile's weight gradient, its bias block's (c0 = 0), and its part of d loss / d input block.
// Inputs: d loss / d (output block r before the post-ops), input block c, the weight tile.
Status RunListTileBackward(const TaskSpec& t, TileInputs in, std::vector<std::vector<float>>* out) {
  const ListTile s = TileOf(t);
  const Network::TileLayer& l = s.at();
  const int64_t n = t.r1 - t.r0, k = (t.c1 - t.c0) * l.k_per_unit;
  const float* dz = in[0].data();
  const float* x = in[1].data();
  const float* w = in[2].data();
  size_t o = 0;
  std::vector<float>& gw = (*out)[o++];
  gw.resize(size_t(n * k));
  std::vector<float>* gb = t.c0 == 0 && l.bias ? &(*out)[o++] : nullptr;
  std::vector<float>* dx = t.layer > 0 ? &(*out)[o] : nullptr;
  if (l.conv) {
    const Window2d g = TileWindow(t, l);
    std::vector<float> scratch;
    Conv2dWeightGrad(g, x, t.rows, dz, n, gw.data(), k, &scratch);
    if (gb) {
      gb->resize(size_t(n));
      Conv2dBiasGrad(g, dz, t.rows, n, gb->data());
    }
    if (dx) {
      dx->resize(size_t(TileInput(t, l)));
      Conv2dInputGrad(g, dz, t.rows, w, k, n, dx->data(), &scratch);
    }
    return Status::Ok();
  }
  WeightGrad(dz, n, x, k, t.rows, n, k, gw.data(), k);
  if (gb) {
    gb->resize(size_t(n));
    BiasGrad(dz, n, t.rows, n, gb->data());
  }
  if (dx) {
    dx->resize(size_t(t.rows * k));
    InputGrad(dz, n, t.rows, n, w, k, k, dx->data(), k);
  }
  return Status::Ok();
}

// d loss / d (block [c0, c1) of layer t.layer - 1's output before its post-ops): the parts
// summed in order, then back through the post-ops, run forward again from that block.
Status RunListTileInputGrad(const TaskSpec& t, TileInputs in,
                            std::vector<std::vector<float>>* out) {
  const ListTile s = TileOf(t);
  const Network::TileLayer& l = s.before();
  std::vector<float> d = SumParts(in, t.parts);
  if (!HasPostOps(l)) {
    (*out)[0] = std::move(d);
    return Status::Ok();
  }
  ACAN_ASSIGN_OR_RETURN(Network post, s.net.PostOps(l, t.c1 - t.c0));
  TileBatch b(t, t.c0, t.c1);
  const float* z = in[size_t(t.parts)].data();
  std::vector<std::vector<float>> acts, grads;
  const int end = static_cast<int>(post.layers().size());
  ACAN_RETURN_IF_ERROR(post.ForwardRange(b.batch, 0, end, z, {}, true, &acts));
  std::vector<float> dz;
  post.BackwardRange(b.batch, 0, end, z, acts, std::move(d), {}, true, &grads, &dz);
  (*out)[0] = std::move(dz);
  return Status::Ok();
}

}  // namespace

bool IsTileOp(TaskOp op) {
  return op == TaskOp::kTileForward || op == TaskOp::kTileActivation ||
         op == TaskOp::kTileBackward || op == TaskOp::kTileInputGrad;
}

std::vector<int64_t> ListTileInputSizes(const TaskSpec& t) {
  const ListTile s = TileOf(t);
  const Network::TileLayer& l = s.at();
  const int64_t n = t.r1 - t.r0;
  std::vector<int64_t> out;
  switch (t.op) {
    case TaskOp::kTileForward:
      return {TileInput(t, l), ListTileSize(t, l)};
    case TaskOp::kTileActivation:
      out.assign(size_t(t.parts), t.rows * n * l.z_per_unit);
      if (l.bias) out.push_back(n);
      return out;
    case TaskOp::kTileBackward:
      return {t.rows * n * l.z_per_unit, TileInput(t, l), ListTileSize(t, l)};
    case TaskOp::kTileInputGrad:
      out.assign(size_t(t.parts), TileInput(t, l));
      out.push_back(t.rows * (t.c1 - t.c0) * s.before().z_per_unit);
      return out;
    default:
      return out;
  }
}

std::vector<int64_t> ListTileOutputSizes(const TaskSpec& t) {
  const ListTile s = TileOf(t);
  const Network::TileLayer& l = s.at();
  const int64_t n = t.r1 - t.r0;
  std::vector<int64_t> out;
  switch (t.op) {
    case TaskOp::kTileForward:
      return {t.rows * n * l.z_per_unit};
    case TaskOp::kTileActivation:
      out.push_back(t.rows * n * l.h_per_unit);
      if (HasPostOps(l) && !s.last()) out.push_back(t.rows * n * l.z_per_unit);
      return out;
    case TaskOp::kTileBackward:
      out.push_back(ListTileSize(t, l));
      if (t.c0 == 0 && l.bias) out.push_back(n);
      if (t.layer > 0) out.push_back(TileInput(t, l));
      return out;
    case TaskOp::kTileInputGrad:
      return {t.rows * (t.c1 - t.c0) * s.before().z_per_unit};
    default:
      return out;
  }
}

Status RunListTile(const TaskSpec& t, TileInputs in, std::vector<std::vector<float>>* out) {
  switch (t.op) {
    case TaskOp::kTileForward:
      return RunListTileForward(t, in, out);
    case TaskOp::kTileActivation:
      return RunListTileActivation(t, in, out);
    case TaskOp::kTileBackward:
      return RunListTileBackward(t, in, out);
    case TaskOp::kTileInputGrad:
      return RunListTileInputGrad(t, in, out);
    default:
      return Status::InvalidArgument("task " + t.key + " is not a tile task");
  }
}

}  // namespace acan::nn
