#include "nn/layers.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "nn/network.h"

namespace acan::nn {

std::string ToString(const SampleShape& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? " x " : "") + std::to_string(shape[i]);
  return s;
}

int64_t NumElements(const SampleShape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Window2d WindowOf(const LayerConfig& layer, const SampleShape& input) {
  Window2d g;
  g.channels = input.size() == 3 ? input[0] : 0;
  g.height = input.size() == 3 ? input[1] : 0;
  g.width = input.size() == 3 ? input[2] : 0;
  g.kernel_h = layer.kernel_h;
  g.kernel_w = layer.kernel_w;
  const bool pool = layer.type == LayerType::kMaxPool2d || layer.type == LayerType::kAvgPool2d;
  g.stride = layer.stride > 0 ? layer.stride : pool ? layer.kernel_h : 1;
  g.padding = layer.padding;
  return g;
}

Result<std::vector<SampleShape>> LayerShapes(const std::vector<LayerConfig>& layers,
                                             const SampleShape& input,
                                             const std::vector<std::string>& where) {
  if (layers.empty()) return Status::InvalidArgument("a model's layer list is empty");
  if (layers.size() > kMaxLayers) {
    return Status::InvalidArgument(fmt::format("{} layers, at most {}", layers.size(), kMaxLayers));
  }
  // Every size is bounded before it is multiplied, so that no list (a task's, from the space)
  // overflows: a dimension, a kernel, a stride, a padding at most kMaxDim, a sample's floats
  // and a weight's at most kMaxElements.
  auto bounded = [](const SampleShape& s) {
    int64_t n = 1;
    for (int64_t d : s) {
      if (d < 1 || d > kMaxDim || n > kMaxElements / d) return false;
      n *= d;
    }
    return true;
  };
  if (!(input.size() == 1 || input.size() == 3) || !bounded(input)) {
    return Status::InvalidArgument(fmt::format(
        "the input shape {} is not [features] or [channels, height, width] of at most {} floats",
        ToString(input), kMaxElements));
  }
  auto at = [&](size_t i) {
    return (i < where.size() && !where[i].empty() ? where[i] + ": " : std::string()) +
           fmt::format("layer {} ({}): ", i, ToString(layers[i].type));
  };
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerConfig& l = layers[i];
    for (int64_t v : {l.in, l.out, l.kernel_h, l.kernel_w, l.stride, l.padding}) {
      if (v < 0 || v > kMaxDim) {
        return Status::InvalidArgument(
            fmt::format("{}a size of {} is out of range [0, {}]", at(i), v, kMaxDim));
      }
    }
    if (l.type == LayerType::kConv2d || l.type == LayerType::kLinear) {
      if (!bounded({std::max<int64_t>(l.out, 1), std::max<int64_t>(l.in, 1),
                    std::max<int64_t>(l.kernel_h, 1), std::max<int64_t>(l.kernel_w, 1)})) {
        return Status::InvalidArgument(
            fmt::format("{}its weight has more than {} floats", at(i), kMaxElements));
      }
    }
  }
  std::vector<SampleShape> shapes;
  SampleShape in = input;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerConfig& l = layers[i];
    const std::string from =
        i == 0 ? "the input"
               : fmt::format("the output of layer {} ({})", i - 1, ToString(layers[i - 1].type));
    auto fail = [&](const std::string& what) { return Status::InvalidArgument(at(i) + what); };
    SampleShape out = in;
    switch (l.type) {
      case LayerType::kConv2d:
      case LayerType::kMaxPool2d:
      case LayerType::kAvgPool2d: {
        const bool conv = l.type == LayerType::kConv2d;
        if (in.size() != 3) {
          return fail(
              fmt::format("expects channels x height x width, gets {} ({})", ToString(in), from));
        }
        if (conv && l.in != in[0]) {
          return fail(fmt::format("expects {} input channels, gets {} ({}, {})", l.in, in[0],
                                  ToString(in), from));
        }
        if (conv && l.out < 1) return fail("out_channels must be >= 1");
        if (l.kernel_h < 1 || l.kernel_w < 1) return fail("kernel_size must be >= 1");
        if (l.stride < 0) return fail("stride must be >= 1");
        if (l.padding < 0) return fail("padding must be >= 0");
        if (!conv && (2 * l.padding > l.kernel_h || 2 * l.padding > l.kernel_w)) {
          return fail(fmt::format("padding {} is more than half the kernel {} x {}", l.padding,
                                  l.kernel_h, l.kernel_w));
        }
        const Window2d g = WindowOf(l, in);
        if (!g.Valid()) {
          return fail(fmt::format("a kernel of {} x {} with padding {} does not fit {} ({})",
                                  l.kernel_h, l.kernel_w, l.padding, ToString(in), from));
        }
        out = {conv ? l.out : in[0], g.OutHeight(), g.OutWidth()};
        break;
      }
      case LayerType::kFlatten:
        out = {NumElements(in)};
        break;
      case LayerType::kLinear:
        if (l.in < 1 || l.out < 1) return fail("in_features and out_features must be >= 1");
        if (in.size() != 1) {
          return fail(fmt::format("expects {} inputs, gets {} ({}; put a flatten layer before it)",
                                  l.in, ToString(in), from));
        }
        if (in[0] != l.in) {
          return fail(fmt::format("expects {} inputs, gets {} ({})", l.in, in[0], from));
        }
        out = {l.out};
        break;
      case LayerType::kDropout:
        if (!(l.p >= 0 && l.p < 1)) return fail(fmt::format("p must be in [0, 1), is {}", l.p));
        break;
      case LayerType::kRelu:
      case LayerType::kTanh:
      case LayerType::kSigmoid:
        break;
    }
    if (!bounded(out)) return fail(fmt::format("its output {} is too large", ToString(out)));
    shapes.push_back(out);
    in = out;
  }
  return shapes;
}

Result<SampleShape> ListInputShape(const ModelConfig& model, DataSource source) {
  if (!model.input_shape.empty()) {
    const auto& s = model.input_shape;
    bool ok = s.size() == 1 || s.size() == 3;
    for (int64_t d : s) ok = ok && d >= 1;
    if (!ok) {
      return Status::InvalidArgument(
          "model.input_shape must be [features] or [channels, height, width], each >= 1");
    }
    return s;
  }
  if (source == DataSource::kFashionMnist) return SampleShape{1, 28, 28};
  if (!model.layer.empty() && model.layer.front().type == LayerType::kLinear) {
    return SampleShape{model.layer.front().in};
  }
  return Status::InvalidArgument(
      fmt::format("model.input_shape is needed: the data source {} does not give one sample's "
                  "shape (e.g. input_shape = [1, 28, 28])",
                  ToString(source)));
}

bool AsDenseStack(const std::vector<LayerConfig>& layers, const SampleShape& input,
                  std::vector<int64_t>* widths, Activation* activation) {
  size_t i = 0;
  while (i < layers.size() && layers[i].type == LayerType::kFlatten) ++i;
  std::vector<int64_t> w = {NumElements(input)};
  std::optional<Activation> act;
  bool want_linear = true;
  for (; i < layers.size(); ++i) {
    const LayerConfig& l = layers[i];
    if (want_linear) {
      if (l.type != LayerType::kLinear || !l.bias) return false;
      w.push_back(l.out);
      want_linear = false;
      continue;
    }
    Activation a;
    switch (l.type) {
      case LayerType::kRelu:
        a = Activation::kRelu;
        break;
      case LayerType::kTanh:
        a = Activation::kTanh;
        break;
      case LayerType::kSigmoid:
        a = Activation::kSigmoid;
        break;
      default:
        return false;
    }
    if (act && *act != a) return false;
    act = a;
    want_linear = true;
  }
  if (want_linear || w.size() < 2) return false;  // empty, or an activation last
  *widths = std::move(w);
  if (act) *activation = *act;
  return true;
}

Status CheckLayerList(const JobConfig& job) {
  const std::vector<int64_t>& layers = job.model.layers;
  Result<SampleShape> input = ListInputShape(job.model, job.data.source);
  if (!input.ok()) return input.status();
  Result<std::vector<SampleShape>> shapes = LayerShapes(job.model.layer, *input);
  if (!shapes.ok()) return shapes.status();
  std::vector<int64_t> widths;
  Activation activation = job.model.activation;
  if (!AsDenseStack(job.model.layer, *input, &widths, &activation)) {
    if (job.partition.strategy == Strategy::kTiles) {
      if (!job.partition.tile_bands.empty()) {
        return Status::InvalidArgument(
            "partition.tile_bands: a list of layers is cut in tiles of partition.task_size "
            "alone, not in bands");
      }
      Result<Network> net = Network::Create(job.model.layer, *input);
      if (!net.ok()) return net.status();
      if (Result<std::vector<Network::TileLayer>> tiles = net->TileLayers(); !tiles.ok()) {
        return Status::InvalidArgument("model.layer: " + std::string(tiles.status().message()));
      }
    }
    if (!job.runtime.handler_memory.empty() || job.runtime.manager_memory > 0) {
      return Status::InvalidArgument(
          "model.layer: memory budgets do not cover a list of layers yet (issue 45)");
    }
    const std::vector<int64_t> ends = {NumElements(*input), NumElements(shapes->back())};
    if (layers != ends) {
      return Status::InvalidArgument(
          "model.layers must be the layer list's flattened input and output widths");
    }
  } else if (widths != layers || activation != job.model.activation) {
    return Status::InvalidArgument(
        "model.layers and model.activation must be the layer list's widths and activation");
  }
  return Status::Ok();
}

}  // namespace acan::nn
