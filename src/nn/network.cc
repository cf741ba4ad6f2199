#include "nn/network.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nn/conv.h"
#include "nn/rng.h"

namespace acan::nn {

namespace {

Activation ActivationOf(LayerType t) {
  switch (t) {
    case LayerType::kRelu:
      return Activation::kRelu;
    case LayerType::kTanh:
      return Activation::kTanh;
    case LayerType::kSigmoid:
      return Activation::kSigmoid;
    default:
      return Activation::kIdentity;
  }
}

bool IsActivation(LayerType t) {
  return t == LayerType::kRelu || t == LayerType::kTanh || t == LayerType::kSigmoid;
}

}  // namespace

Result<Network> Network::Create(std::vector<LayerConfig> layers, SampleShape input) {
  ACAN_ASSIGN_OR_RETURN(std::vector<SampleShape> shapes, LayerShapes(layers, input));
  Network n;
  n.layers_ = std::move(layers);
  n.input_ = std::move(input);
  n.shapes_ = std::move(shapes);
  for (size_t i = 0; i < n.layers_.size(); ++i) {
    const LayerConfig& l = n.layers_[i];
    const bool conv = l.type == LayerType::kConv2d;
    if (!conv && l.type != LayerType::kLinear) {
      n.first_param_.push_back(-1);
      continue;
    }
    n.first_param_.push_back(static_cast<int>(n.params_.size()));
    ListParam w;
    w.layer = static_cast<int>(i);
    w.rows = l.out;
    w.cols = conv ? l.in * l.kernel_h * l.kernel_w : l.in;
    w.shape = conv ? std::vector<int64_t>{l.out, l.in, l.kernel_h, l.kernel_w}
                   : std::vector<int64_t>{l.out, l.in};
    w.name = fmt::format("{}.weight", i);
    n.params_.push_back(w);
    if (!l.bias) continue;
    ListParam b;
    b.layer = static_cast<int>(i);
    b.bias = true;
    b.rows = l.out;
    b.cols = 1;
    b.shape = {l.out};
    b.name = fmt::format("{}.bias", i);
    n.params_.push_back(b);
  }
  return n;
}

Result<std::vector<Network::TileLayer>> Network::TileLayers() const {
  std::vector<TileLayer> out;
  const int n = static_cast<int>(layers_.size());
  for (int i = 0; i < n; ++i) {
    const LayerConfig& l = layers_[size_t(i)];
    if (first_param_[size_t(i)] < 0) {
      if (out.empty() && l.type != LayerType::kFlatten) {
        return Status::InvalidArgument(fmt::format(
            "partition.strategy = \"tiles\": layer {} ({}) comes before the first layer with "
            "weights; only flatten may (a tile's input is a block of the data's channels)",
            i, ToString(l.type)));
      }
      if (!out.empty()) out.back().end = i + 1;
      continue;
    }
    const SampleShape& in = i == 0 ? input_ : shapes_[size_t(i) - 1];
    TileLayer t;
    t.layer = i;
    t.end = i + 1;
    t.bias = l.bias;
    t.out_units = l.out;
    t.z_shape = shapes_[size_t(i)];
    t.z_per_unit = NumElements(t.z_shape) / l.out;
    if (out.empty()) {
      t.in_units = in[0];
      t.in_per_unit = NumElements(in) / in[0];
    }
    if (l.type == LayerType::kConv2d) {
      t.conv = true;
      t.window = WindowOf(l, in);
      t.k_per_unit = l.kernel_h * l.kernel_w;
    }
    out.push_back(std::move(t));
  }
  // Once each layer's post-ops are known: what a unit becomes after them, which is what a unit
  // of the next layer's input is.
  for (size_t k = 0; k < out.size(); ++k) {
    TileLayer& t = out[k];
    t.h_per_unit = ActivationSize(t.end) / t.out_units;
    if (k > 0) {
      t.in_units = out[k - 1].out_units;
      t.in_per_unit = out[k - 1].h_per_unit;
    }
    if (!t.conv) t.k_per_unit = t.in_per_unit;
  }
  if (!out.empty() && out.back().end != out.back().layer + 1) {
    return Status::InvalidArgument(fmt::format(
        "partition.strategy = \"tiles\": layer {} ({}) comes after the last layer with weights; "
        "the last layer's output must be the loss's input",
        out.back().layer + 1, ToString(layers_[size_t(out.back().layer) + 1].type)));
  }
  return out;
}

Result<Network> Network::PostOps(const TileLayer& t, int64_t units) const {
  SampleShape block = t.z_shape;
  block[0] = units;
  return Create(std::vector<LayerConfig>(layers_.begin() + t.layer + 1, layers_.begin() + t.end),
                std::move(block));
}

int64_t Network::LargestActivation() const {
  int64_t largest = NumElements(input_);
  for (const SampleShape& s : shapes_) largest = std::max(largest, NumElements(s));
  return largest;
}

int64_t Network::NumParameters() const {
  int64_t n = 0;
  for (const ListParam& p : params_) n += p.Size();
  return n;
}

Result<std::vector<std::vector<float>>> Network::InitialParams(std::string_view scheme,
                                                               uint64_t seed) const {
  if (scheme != "xavier_uniform" && scheme != "kaiming_uniform" && scheme != "zeros") {
    return Status::InvalidArgument(fmt::format(
        "unknown model.init \"{}\"; use xavier_uniform | kaiming_uniform | zeros", scheme));
  }
  std::vector<std::vector<float>> out;
  Rng rng(MixSeed(seed, 0x1417));
  for (const ListParam& p : params_) {
    std::vector<float> v(static_cast<size_t>(p.Size()), 0.0f);
    if (!p.bias && scheme != "zeros") {
      const LayerConfig& l = layers_[p.layer];
      const int64_t field = l.type == LayerType::kConv2d ? l.kernel_h * l.kernel_w : 1;
      const double fan_in = double(p.cols), fan_out = double(p.rows * field);
      const float a = static_cast<float>(
          std::sqrt(6.0 / (scheme == "xavier_uniform" ? fan_in + fan_out : fan_in)));
      for (float& x : v) x = rng.Uniform(-a, a);
    }
    out.push_back(std::move(v));
  }
  return out;
}

Status Network::CheckParams(std::span<const float* const> params) const {
  if (params.size() != params_.size()) {
    return Status::InvalidArgument(fmt::format("the network has {} parameter tensors, {} given",
                                               params_.size(), params.size()));
  }
  return Status::Ok();
}

std::pair<int, int> Network::StageLayers(int w0, int w1) const {
  // The list index of weight layer w: the first layer of the list for 0, its end for all of them.
  auto start = [&](int w) {
    if (w == 0) return 0;
    int weights = 0;
    for (size_t i = 0; i < layers_.size(); ++i) {
      if (first_param_[i] >= 0 && weights++ == w) return static_cast<int>(i);
    }
    return static_cast<int>(layers_.size());
  };
  return {start(w0), start(w1)};
}

int64_t Network::ActivationSize(int i) const {
  return NumElements(i == 0 ? input_ : shapes_[size_t(i) - 1]);
}

std::pair<int, int> Network::ParamRange(int i0, int i1) const {
  int p0 = static_cast<int>(params_.size()), p1 = p0;
  for (int i = i0; i < i1; ++i) {
    if (first_param_[size_t(i)] < 0) continue;
    p0 = std::min(p0, first_param_[size_t(i)]);
    p1 = first_param_[size_t(i)] + (layers_[size_t(i)].bias ? 2 : 1);
  }
  return {p0, std::max(p0, p1)};
}

Status Network::Forward(const Batch& batch, std::span<const float* const> params, bool training,
                        std::vector<std::vector<float>>* acts) const {
  ACAN_RETURN_IF_ERROR(CheckParams(params));
  return ForwardRange(batch, 0, static_cast<int>(layers_.size()), batch.x, params, training, acts);
}

Status Network::ForwardRange(const Batch& batch, int i0, int i1, const float* x,
                             std::span<const float* const> params, bool training,
                             std::vector<std::vector<float>>* acts_out) const {
  const int64_t rows = batch.rows;
  const size_t n = layers_.size();
  std::vector<std::vector<float>>& acts = *acts_out;
  acts.resize(n + 1);
  std::vector<float> scratch;
  for (size_t i = size_t(i0); i < size_t(i1); ++i) {
    const LayerConfig& l = layers_[i];
    const SampleShape& in_shape = i == 0 ? input_ : shapes_[i - 1];
    const int64_t in_size = NumElements(in_shape), out_size = NumElements(shapes_[i]);
    const float* in = i == size_t(i0) ? x : acts[i].data();
    std::vector<float>& out = acts[i + 1];
    const int p = first_param_[i];
    const float* bias = p >= 0 && l.bias ? params[size_t(p) + 1] : nullptr;
    switch (l.type) {
      case LayerType::kLinear:
        out.resize(size_t(rows * out_size));
        DenseForward(in, rows, l.in, params[size_t(p)], l.in, l.out, bias, out.data());
        break;
      case LayerType::kConv2d:
        out.resize(size_t(rows * out_size));
        Conv2dForward(WindowOf(l, in_shape), in, rows, params[size_t(p)], params_[size_t(p)].cols,
                      l.out, bias, out.data(), &scratch);
        break;
      case LayerType::kMaxPool2d:
        out.resize(size_t(rows * out_size));
        MaxPool2dForward(WindowOf(l, in_shape), in, rows, out.data());
        break;
      case LayerType::kAvgPool2d:
        out.resize(size_t(rows * out_size));
        AvgPool2dForward(WindowOf(l, in_shape), in, rows, out.data());
        break;
      case LayerType::kFlatten:
      case LayerType::kDropout:
      case LayerType::kRelu:
      case LayerType::kTanh:
      case LayerType::kSigmoid:
        out.assign(in, in + rows * in_size);
        if (IsActivation(l.type)) {
          ApplyActivation(ActivationOf(l.type), out.data(), int64_t(out.size()));
        } else if (l.type == LayerType::kDropout && training) {
          if (batch.samples == nullptr) {
            return Status::InvalidArgument("dropout while training needs the rows' sample indices");
          }
          ApplyDropout(batch.seed, batch.epoch, batch.samples, rows, in_size, l.p, out.data(),
                       batch.Unit0(in_size));
        }
        break;
    }
  }
  return Status::Ok();
}

Result<std::vector<float>> Network::Predict(const float* x, int64_t rows,
                                            std::span<const float* const> params) const {
  std::vector<std::vector<float>> acts;
  Batch b;
  b.x = x;
  b.rows = rows;
  ACAN_RETURN_IF_ERROR(Forward(b, params, false, &acts));
  return std::move(acts.back());
}

Result<LossValue> Network::Run(const Batch& batch, std::span<const float* const> params,
                               LossKind loss, double scale, bool training,
                               std::vector<std::vector<float>>* grads,
                               std::vector<float>* logits) const {
  const int64_t rows = batch.rows;
  const size_t n = layers_.size();
  std::vector<std::vector<float>> acts;
  ACAN_RETURN_IF_ERROR(Forward(batch, params, training, &acts));
  const int64_t outputs = OutputSize();
  std::vector<float> dz;
  if (grads != nullptr) dz.resize(size_t(rows * outputs));
  ACAN_ASSIGN_OR_RETURN(LossValue value,
                        ComputeLoss(loss, acts[n].data(), rows, outputs, batch.targets, scale,
                                    grads != nullptr ? dz.data() : nullptr));
  if (logits != nullptr) *logits = acts[n];
  if (grads == nullptr) return value;
  grads->assign(params_.size(), {});
  BackwardRange(batch, 0, static_cast<int>(n), batch.x, acts, std::move(dz), params, training,
                grads, nullptr);
  return value;
}

void Network::BackwardRange(const Batch& batch, int i0, int i1, const float* x,
                            const std::vector<std::vector<float>>& acts, std::vector<float> dz,
                            std::span<const float* const> params, bool training,
                            std::vector<std::vector<float>>* grads,
                            std::vector<float>* dx_out) const {
  const int64_t rows = batch.rows;
  std::vector<float> scratch, dx;
  for (size_t i = size_t(i1); i-- > size_t(i0);) {
    const LayerConfig& l = layers_[i];
    const SampleShape& in_shape = i == 0 ? input_ : shapes_[i - 1];
    const int64_t in_size = NumElements(in_shape);
    const float* in = i == size_t(i0) ? x : acts[i].data();
    const int p = first_param_[i];
    const bool need_dx = i > size_t(i0) || dx_out != nullptr;
    switch (l.type) {
      case LayerType::kLinear: {
        std::vector<float>& gw = (*grads)[size_t(p)];
        gw.resize(size_t(l.out * l.in));
        WeightGrad(dz.data(), l.out, in, l.in, rows, l.out, l.in, gw.data(), l.in);
        if (l.bias) {
          (*grads)[size_t(p) + 1].resize(size_t(l.out));
          BiasGrad(dz.data(), l.out, rows, l.out, (*grads)[size_t(p) + 1].data());
        }
        if (!need_dx) break;
        dx.resize(size_t(rows * l.in));
        InputGrad(dz.data(), l.out, rows, l.out, params[size_t(p)], l.in, l.in, dx.data(), l.in);
        std::swap(dz, dx);
        break;
      }
      case LayerType::kConv2d: {
        const Window2d g = WindowOf(l, in_shape);
        const int64_t cols = params_[size_t(p)].cols;
        std::vector<float>& gw = (*grads)[size_t(p)];
        gw.resize(size_t(l.out * cols));
        Conv2dWeightGrad(g, in, rows, dz.data(), l.out, gw.data(), cols, &scratch);
        if (l.bias) {
          (*grads)[size_t(p) + 1].resize(size_t(l.out));
          Conv2dBiasGrad(g, dz.data(), rows, l.out, (*grads)[size_t(p) + 1].data());
        }
        if (!need_dx) break;
        dx.resize(size_t(rows * in_size));
        Conv2dInputGrad(g, dz.data(), rows, params[size_t(p)], cols, l.out, dx.data(), &scratch);
        std::swap(dz, dx);
        break;
      }
      case LayerType::kMaxPool2d:
        if (!need_dx) break;
        dx.resize(size_t(rows * in_size));
        MaxPool2dBackward(WindowOf(l, in_shape), in, rows, dz.data(), dx.data());
        std::swap(dz, dx);
        break;
      case LayerType::kAvgPool2d:
        if (!need_dx) break;
        dx.resize(size_t(rows * in_size));
        AvgPool2dBackward(WindowOf(l, in_shape), rows, dz.data(), dx.data());
        std::swap(dz, dx);
        break;
      case LayerType::kRelu:
      case LayerType::kTanh:
      case LayerType::kSigmoid:
        ApplyActivationGrad(ActivationOf(l.type), acts[i + 1].data(), dz.data(),
                            int64_t(dz.size()));
        break;
      case LayerType::kDropout:
        if (training)
          ApplyDropout(batch.seed, batch.epoch, batch.samples, rows, in_size, l.p, dz.data(),
                       batch.Unit0(in_size));
        break;
      case LayerType::kFlatten:
        break;
    }
  }
  if (dx_out != nullptr) *dx_out = std::move(dz);
}

}  // namespace acan::nn
