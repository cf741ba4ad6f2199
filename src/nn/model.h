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
#include "nn/rng.h"
#include "nn/tensor.h"

namespace acan::nn {

struct Model {
  std::vector<int64_t> widths;              // input, hidden..., output
  std::vector<std::vector<float>> weights;  // layer l: widths[l+1] x widths[l], row-major
  std::vector<std::vector<float>> biases;   // layer l: widths[l+1]

  int NumLayers() const { return static_cast<int>(weights.size()); }
  int64_t NumParameters() const;
};

std::string WeightName(int layer);  // "layers.<layer>.weight"
std::string BiasName(int layer);    // "layers.<layer>.bias"

// Initialises a model: "xavier_uniform" (U(-a, a), a = sqrt(6 / (in + out))), "kaiming_uniform"
// (a = sqrt(6 / in), for relu) or "zeros"; biases start at zero. Deterministic for a seed.
Result<Model> InitModel(const std::vector<int64_t>& widths, std::string_view init, uint64_t seed);

// A scheme's initial weights drawn a few rows at a time, in InitModel's order (layer after layer,
// each weight row-major), for a process that must not hold the whole model (a manager with a
// memory budget): the same numbers as InitModel(widths, init, seed), whose biases are zeros.
class InitialRows {
 public:
  // InvalidArgument for an unknown scheme or fewer than two widths, as InitModel.
  static Result<InitialRows> Create(const std::vector<int64_t>& widths, std::string_view init,
                                    uint64_t seed);
  // The next `rows` rows of layer `layer`'s weight ([widths[layer + 1], widths[layer]]).
  // REQUIRES: the layers in order and, within a layer, its rows in order, each drawn once.
  std::vector<float> Next(int layer, int64_t rows);
  const std::vector<int64_t>& widths() const { return widths_; }

 private:
  enum Scheme { kXavier, kKaiming, kZeros };
  InitialRows(std::vector<int64_t> widths, Scheme scheme, uint64_t seed)
      : widths_(std::move(widths)), scheme_(scheme), rng_(MixSeed(seed, 0x1417)) {}
  std::vector<int64_t> widths_;
  Scheme scheme_;
  Rng rng_;  // carried from call to call: one stream over the whole model
};

// The job's initial model: model.init as a scheme name, or as a safetensors path.
Result<Model> InitialModel(const JobConfig& job);

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
