#include "nn/model.h"

#include <cmath>

#include "nn/layers.h"
#include "nn/network.h"
#include "nn/rng.h"
#include "nn/safetensors.h"

namespace acan::nn {

int64_t Model::NumParameters() const {
  int64_t n = 0;
  for (int l = 0; l < NumLayers(); ++l) n += weights[l].size() + biases[l].size();
  return n;
}

std::string WeightName(int layer) { return "layers." + std::to_string(layer) + ".weight"; }
std::string BiasName(int layer) { return "layers." + std::to_string(layer) + ".bias"; }

Result<InitialWeights> InitialWeights::Create(const std::vector<int64_t>& widths,
                                              std::string_view init, uint64_t seed) {
  if (widths.size() < 2) {
    return Status::InvalidArgument("a model needs at least two widths (input, output)");
  }
  Scheme scheme;
  if (init == "xavier_uniform") {
    scheme = kXavier;
  } else if (init == "kaiming_uniform") {
    scheme = kKaiming;
  } else if (init == "zeros") {
    scheme = kZeros;
  } else {
    return Status::InvalidArgument("unknown model.init \"" + std::string(init) +
                                   "\"; use xavier_uniform | kaiming_uniform | zeros or a "
                                   ".safetensors file");
  }
  return InitialWeights(widths, scheme, seed);
}

InitialWeights::InitialWeights(std::vector<int64_t> widths, Scheme scheme, uint64_t seed)
    : widths_(std::move(widths)), scheme_(scheme), seed_(MixSeed(seed, 0x1417)) {
  // One draw per weight, layer after layer, each row-major (biases draw nothing).
  uint64_t draws = 0;
  for (size_t l = 0; l + 1 < widths_.size(); ++l) {
    first_.push_back(draws);
    draws += uint64_t(widths_[l] * widths_[l + 1]);
  }
}

std::vector<float> InitialWeights::Part(int layer, int64_t r0, int64_t r1, int64_t c0,
                                        int64_t c1) const {
  const int64_t in = widths_[layer], out = widths_[layer + 1], cols = c1 - c0;
  std::vector<float> w((r1 - r0) * cols, 0.0f);
  if (scheme_ == kZeros) return w;
  const double fan = scheme_ == kXavier ? static_cast<double>(in + out) : in;
  const float a = static_cast<float>(std::sqrt(6.0 / fan));
  for (int64_t r = r0; r < r1; ++r) {
    Rng rng(seed_);
    rng.Skip(first_[layer] + uint64_t(r * in + c0));
    for (int64_t c = 0; c < cols; ++c) w[(r - r0) * cols + c] = rng.Uniform(-a, a);
  }
  return w;
}

Result<Model> InitModel(const std::vector<int64_t>& widths, std::string_view init, uint64_t seed) {
  ACAN_ASSIGN_OR_RETURN(InitialWeights weights, InitialWeights::Create(widths, init, seed));
  Model m;
  m.widths = widths;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    m.weights.push_back(weights.Part(static_cast<int>(l), 0, widths[l + 1], 0, widths[l]));
    m.biases.emplace_back(widths[l + 1], 0.0f);
  }
  return m;
}

bool IsLayerList(const ModelConfig& model) {
  std::vector<int64_t> widths;
  Activation activation;
  return !model.layer.empty() && !AsDenseStack(model.layer, {1}, &widths, &activation);
}

Result<std::vector<int64_t>> LayerListInput(const JobConfig& job) {
  return ListInputShape(job.model, job.data.source);
}

namespace {

Result<Model> ListModel(const Network& net, std::vector<std::vector<float>> params) {
  Model m;
  m.layer = net.layers();
  m.input_shape = net.input();
  m.widths = {net.InputSize(), net.OutputSize()};
  for (size_t i = 0; i < params.size(); ++i) {
    if (net.params()[i].bias) {
      m.biases.back() = std::move(params[i]);
    } else {
      m.weights.push_back(std::move(params[i]));
      m.biases.emplace_back();
    }
  }
  return m;
}

}  // namespace

Result<Model> ListModelFromTensors(const TensorMap& tensors, const std::vector<LayerConfig>& layers,
                                   const std::vector<int64_t>& input_shape,
                                   std::string_view source) {
  ACAN_ASSIGN_OR_RETURN(Network net, Network::Create(layers, input_shape));
  std::vector<std::vector<float>> params;
  for (const ListParam& p : net.params()) {
    auto it = tensors.find(p.name);
    if (it == tensors.end()) {
      return Status::InvalidArgument(std::string(source) + ": tensor \"" + p.name +
                                     "\" is missing; layer " + std::to_string(p.layer) + " (" +
                                     std::string(ToString(layers[p.layer].type)) +
                                     ") needs it with shape " + nn::ToString(p.shape));
    }
    if (it->second.shape != p.shape) {
      return Status::InvalidArgument(std::string(source) + ": tensor \"" + p.name +
                                     "\" has shape " + nn::ToString(it->second.shape) +
                                     " but layer " + std::to_string(p.layer) + " needs " +
                                     nn::ToString(p.shape));
    }
    params.push_back(it->second.data);
  }
  if (tensors.size() != params.size()) {
    for (const auto& [name, t] : tensors) {
      bool expected = false;
      for (const ListParam& p : net.params()) expected = expected || p.name == name;
      if (!expected) {
        return Status::InvalidArgument(std::string(source) + ": unexpected tensor \"" + name +
                                       "\"; the model's layers have no such parameter");
      }
    }
  }
  return ListModel(net, std::move(params));
}

Result<Model> LoadJobModel(const std::string& path, const JobConfig& job) {
  if (!IsLayerList(job.model)) return LoadModel(path, job.model.layers);
  ACAN_ASSIGN_OR_RETURN(TensorMap t, ReadSafetensors(path));
  ACAN_ASSIGN_OR_RETURN(std::vector<int64_t> input, LayerListInput(job));
  return ListModelFromTensors(t, job.model.layer, input, path);
}

Result<Model> InitialModel(const JobConfig& job) {
  const std::string& init = job.model.init;
  if (IsLayerList(job.model)) {
    ACAN_ASSIGN_OR_RETURN(std::vector<int64_t> input, LayerListInput(job));
    if (init.size() > 12 && init.ends_with(".safetensors")) {
      return LoadJobModel(job.Resolve(init), job);
    }
    ACAN_ASSIGN_OR_RETURN(Network net, Network::Create(job.model.layer, input));
    ACAN_ASSIGN_OR_RETURN(auto params, net.InitialParams(init, job.train.seed));
    return ListModel(net, std::move(params));
  }
  if (init.size() > 12 && init.ends_with(".safetensors")) {
    return LoadModel(job.Resolve(init), job.model.layers);
  }
  return InitModel(job.model.layers, init, job.train.seed);
}

TensorMap ModelToTensors(const Model& model) {
  TensorMap t;
  if (!model.layer.empty()) {
    Result<Network> net = Network::Create(model.layer, model.input_shape);
    if (!net.ok()) return t;  // a model made by ListModel always checks out
    size_t k = 0;
    for (const ListParam& p : net->params()) {
      t[p.name] = Tensor{p.shape, p.bias ? model.biases[k - 1] : model.weights[k]};
      k += p.bias ? 0 : 1;
    }
    return t;
  }
  for (int l = 0; l < model.NumLayers(); ++l) {
    t[WeightName(l)] = Tensor{{model.widths[l + 1], model.widths[l]}, model.weights[l]};
    t[BiasName(l)] = Tensor{{model.widths[l + 1]}, model.biases[l]};
  }
  return t;
}

namespace {
std::string ShapeString(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}
}  // namespace

Result<Model> ModelFromTensors(const TensorMap& tensors, const std::vector<int64_t>& widths,
                               std::string_view source) {
  const std::string src(source);
  Model m;
  m.widths = widths;
  size_t used = 0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    const int layer = static_cast<int>(l);
    const std::pair<std::string, std::vector<int64_t>> want[] = {
        {WeightName(layer), {widths[l + 1], widths[l]}}, {BiasName(layer), {widths[l + 1]}}};
    for (const auto& [name, shape] : want) {
      auto it = tensors.find(name);
      if (it == tensors.end()) {
        return Status::InvalidArgument(src + ": tensor \"" + name + "\" is missing; model.layers " +
                                       ShapeString(widths) + " needs it with shape " +
                                       ShapeString(shape));
      }
      if (it->second.shape != shape) {
        return Status::InvalidArgument(src + ": tensor \"" + name + "\" has shape " +
                                       ShapeString(it->second.shape) + " but model.layers " +
                                       ShapeString(widths) + " needs " + ShapeString(shape) +
                                       "; the file was made for another model");
      }
      ++used;
    }
    m.weights.push_back(tensors.at(want[0].first).data);
    m.biases.push_back(tensors.at(want[1].first).data);
  }
  if (used != tensors.size()) {
    for (const auto& [name, t] : tensors) {
      const bool known =
          name.starts_with("layers.") && (name.ends_with(".weight") || name.ends_with(".bias"));
      bool expected = false;
      for (int l = 0; l + 1 < static_cast<int>(widths.size()); ++l)
        expected = expected || name == WeightName(l) || name == BiasName(l);
      if (!expected) {
        return Status::InvalidArgument(
            src + ": unexpected tensor \"" + name + "\"" +
            (known ? "; the file has more layers than model.layers " + ShapeString(widths)
                   : "; only layers.<i>.weight and layers.<i>.bias are expected"));
      }
    }
  }
  return m;
}

Result<Model> LoadModel(const std::string& path, const std::vector<int64_t>& widths) {
  ACAN_ASSIGN_OR_RETURN(TensorMap t, ReadSafetensors(path));
  return ModelFromTensors(t, widths, path);
}

Status SaveModel(const std::string& path, const Model& model) {
  return WriteSafetensors(path, ModelToTensors(model));
}

std::string ModelSha256(const Model& model) { return TensorsSha256(ModelToTensors(model)); }

}  // namespace acan::nn
