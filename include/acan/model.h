// Models: the parameters of a dense network as named tensors, with PyTorch's names and shapes
// (`layers.<i>.weight` [out, in], `layers.<i>.bias` [out]), loaded from and saved to safetensors
// files, and evaluated on a job's data.
//
// A Model is a plain value: copy it, move it, read it from any number of threads. LoadModel,
// SaveModel and Evaluate are thread-safe (SaveModel writes a temporary file and renames it, so a
// crash never leaves half a model behind).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acan/export.h"
#include "acan/job.h"
#include "acan/status.h"

namespace acan {

struct ModelTensor {
  std::string name;            // "layers.0.weight"
  std::vector<int64_t> shape;  // [out, in] for a weight, [out] for a bias
  std::vector<float> values;   // row-major, shape's product of them
};

class ACAN_EXPORT Model {
 public:
  Model() = default;

  // A model from its tensors: layers.<i>.weight and layers.<i>.bias for i = 0..L-1, in any order;
  // the widths follow from the weights' shapes. A missing, surplus or mis-shaped tensor is
  // InvalidArgument naming it and `source` (e.g. a file name).
  static Result<Model> FromTensors(std::vector<ModelTensor> tensors,
                                   std::string_view source = "<tensors>");
  // A freshly initialised model of the job's [model] section (model.init: a scheme name such as
  // "xavier_uniform", seeded by train.seed, or a safetensors file).
  static Result<Model> Initial(const JobConfig& job);

  // Widths: input, hidden..., output. For a model given as a list of layers ([[model.layer]]
  // that is not a dense stack), its flattened input and output.
  const std::vector<int64_t>& widths() const { return widths_; }
  // A list of layers' model: its layers, and one sample's shape; its tensors are named and shaped
  // as nn.Sequential's state_dict ("0.weight" [out, in, kh, kw], ...). Empty for a dense model.
  const std::vector<LayerConfig>& layers() const { return layers_; }
  const std::vector<int64_t>& input_shape() const { return input_shape_; }
  int num_layers() const { return widths_.empty() ? 0 : static_cast<int>(widths_.size()) - 1; }
  // Layer by layer, weight then bias: layers.0.weight, layers.0.bias, layers.1.weight, ...
  const std::vector<ModelTensor>& tensors() const { return tensors_; }
  // The tensor called `name`, or null.
  const ModelTensor* Find(std::string_view name) const;
  int64_t NumParameters() const;
  // SHA-256 (hex) of the parameters' float32 bytes, tensors in name order: summary.json's
  // weights_sha256, equal for two models exactly when their weights are bitwise equal.
  std::string Sha256() const;

 private:
  friend class ModelAccess;
  std::vector<int64_t> widths_;
  std::vector<ModelTensor> tensors_;
  std::vector<LayerConfig> layers_;
  std::vector<int64_t> input_shape_;
};

// Reads a safetensors file (F32 tensors with the names above). A short, damaged or foreign file
// is DataLoss or InvalidArgument naming the file, the tensor and the byte offsets.
ACAN_EXPORT Result<Model> LoadModel(const std::string& path);
// Reads a model file for a job: a dense job's as LoadModel (Evaluate checks its widths against
// the job's), a list of layers' with nn.Sequential's names, checked layer by layer against the
// job's list.
ACAN_EXPORT Result<Model> LoadModel(const std::string& path, const JobConfig& job);
ACAN_EXPORT Status SaveModel(const Model& model, const std::string& path);

struct EvalResult {
  std::string split;  // "test" (the job's held-out split) or "train" (it has none)
  int64_t rows = 0;
  double loss = 0;  // mean per-row loss, the job's model.loss
  bool classification = false;
  double accuracy = 0;  // classification: fraction of rows whose argmax is the label
  // Classification, one entry per class (model output): the accuracy on the rows of that label
  // (0 when there is none) and how many rows have it.
  std::vector<double> per_class_accuracy;
  std::vector<int64_t> class_rows;
};

// Evaluates `model` on the job's test split, or on its training set when it names none, with the
// job's activation, loss and input preprocessing. InvalidArgument when the model's widths are not
// the job's model.layers.
ACAN_EXPORT Result<EvalResult> Evaluate(const Model& model, const JobConfig& job);

}  // namespace acan
