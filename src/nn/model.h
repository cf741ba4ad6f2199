// A dense model's parameters: per layer a weight [out, in] and a bias [out], named as PyTorch
// names them (`layers.<i>.weight`, `layers.<i>.bias`). Initialisation is seeded and reproducible;
// models load from and save to safetensors files. Model is a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"
#include "nn/tensor.h"

namespace acan::nn {

struct Model {
  std::vector<int64_t> widths;              // input, hidden..., output
  std::vector<std::vector<float>> weights;  // layer l: widths[l+1] x widths[l], row-major
  std::vector<std::vector<float>> biases;   // layer l: widths[l+1]
  // A model given as a list of layers that is not a dense stack (IsLayerList): its layers and
  // one sample's shape. weights[k] and biases[k] are then those of the k-th layer with weights
  // ([out, in * kh * kw]; biases[k] empty without a bias), named and shaped as nn.Sequential's
  // (network.h), and widths holds the flattened input and output.
  std::vector<LayerConfig> layer;
  std::vector<int64_t> input_shape;

  int NumLayers() const { return static_cast<int>(weights.size()); }
  int64_t NumParameters() const;
};

std::string WeightName(int layer);  // "layers.<layer>.weight"
std::string BiasName(int layer);    // "layers.<layer>.bias"

// Initialises a model: "xavier_uniform" (U(-a, a), a = sqrt(6 / (in + out))), "kaiming_uniform"
// (a = sqrt(6 / in), for relu) or "zeros"; biases start at zero. Deterministic for a seed.
Result<Model> InitModel(const std::vector<int64_t>& widths, std::string_view init, uint64_t seed);

// A scheme's initial weights, any part of any layer drawn on its own (the generator skips to it),
// for a process that must not hold the whole model (a manager with a memory budget): the same
// numbers as InitModel(widths, init, seed), whose biases are zeros.
class InitialWeights {
 public:
  // InvalidArgument for an unknown scheme or fewer than two widths, as InitModel.
  static Result<InitialWeights> Create(const std::vector<int64_t>& widths, std::string_view init,
                                       uint64_t seed);
  // Rows [r0, r1) and columns [c0, c1) of layer `layer`'s weight ([widths[layer + 1],
  // widths[layer]]), row-major.
  std::vector<float> Part(int layer, int64_t r0, int64_t r1, int64_t c0, int64_t c1) const;
  const std::vector<int64_t>& widths() const { return widths_; }

 private:
  enum Scheme { kXavier, kKaiming, kZeros };
  InitialWeights(std::vector<int64_t> widths, Scheme scheme, uint64_t seed);
  std::vector<int64_t> widths_;
  Scheme scheme_;
  uint64_t seed_;                // the stream's (MixSeed of the job's): one over the whole model
  std::vector<uint64_t> first_;  // each layer's first draw in it
};

// Whether a job's model is a list of layers trained as such (not a dense stack, which trains as
// its widths).
bool IsLayerList(const ModelConfig& model);
// One sample's shape for a layer-list job (ListInputShape with the job's data source).
Result<std::vector<int64_t>> LayerListInput(const JobConfig& job);

// The job's initial model: model.init as a scheme name, or as a safetensors path.
Result<Model> InitialModel(const JobConfig& job);
// A model file for a job: LoadModel with the job's widths, or for a list of layers its tensors
// checked against the list (ListModelFromTensors).
Result<Model> LoadJobModel(const std::string& path, const JobConfig& job);
// A layer list's model from tensors named and shaped as nn.Sequential's state_dict.
Result<Model> ListModelFromTensors(const TensorMap& tensors, const std::vector<LayerConfig>& layers,
                                   const std::vector<int64_t>& input_shape,
                                   std::string_view source);

// Tensors named and shaped as PyTorch's state_dict of an nn.Sequential-like `layers` list.
TensorMap ModelToTensors(const Model& model);
// Checks that `tensors` holds exactly the parameters of `widths` with the right shapes.
Result<Model> ModelFromTensors(const TensorMap& tensors, const std::vector<int64_t>& widths,
                               std::string_view source);

// safetensors I/O of a model; LoadModel checks names and shapes against `widths`.
Result<Model> LoadModel(const std::string& path, const std::vector<int64_t>& widths);
Status SaveModel(const std::string& path, const Model& model);
// SHA-256 (hex) of the parameter bytes, tensors in name order (see TensorsSha256).
std::string ModelSha256(const Model& model);

}  // namespace acan::nn
