// The public model API (acan/model.h) over the nn module's model, safetensors and evaluation.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "acan/model.h"
#include "nn/dataset.h"
#include "nn/model_api_internal.h"
#include "nn/safetensors.h"

namespace acan {

// Builds a list of layers' public model (its tensors already checked by the nn module).
class ModelAccess {
 public:
  static Model List(const nn::Model& m) {
    Model out;
    out.widths_ = m.widths;
    out.layers_ = m.layer;
    out.input_shape_ = m.input_shape;
    for (auto& [name, t] : nn::ModelToTensors(m)) out.tensors_.push_back({name, t.shape, t.data});
    return out;
  }
};

namespace nn {

acan::Model ToPublicModel(const Model& model) {
  if (!model.layer.empty()) return ModelAccess::List(model);
  std::vector<ModelTensor> tensors;
  for (int l = 0; l < model.NumLayers(); ++l) {
    tensors.push_back({WeightName(l), {model.widths[l + 1], model.widths[l]}, model.weights[l]});
    tensors.push_back({BiasName(l), {model.widths[l + 1]}, model.biases[l]});
  }
  // The tensors are those of a valid model by construction.
  return acan::Model::FromTensors(std::move(tensors), "<model>").value();
}

Model FromPublicModel(const acan::Model& model) {
  if (!model.layers().empty()) {
    TensorMap map;
    for (const ModelTensor& t : model.tensors()) map[t.name] = Tensor{t.shape, t.values};
    // Made by ToPublicModel or LoadModel(path, job), which checked the tensors against the list.
    return ListModelFromTensors(map, model.layers(), model.input_shape(), "<model>").value();
  }
  Model m;
  m.widths = model.widths();
  for (int l = 0; l < model.num_layers(); ++l) {
    m.weights.push_back(model.Find(WeightName(l))->values);
    m.biases.push_back(model.Find(BiasName(l))->values);
  }
  return m;
}

EvalResult ToPublicEval(const EvalReport& r, std::string split, bool classification) {
  EvalResult out;
  out.split = std::move(split);
  out.rows = r.rows;
  out.loss = r.loss;
  out.classification = classification;
  out.accuracy = r.accuracy;
  out.per_class_accuracy = r.per_class_accuracy;
  out.class_rows = r.class_rows;
  return out;
}

}  // namespace nn

Result<Model> Model::FromTensors(std::vector<ModelTensor> tensors, std::string_view source) {
  nn::TensorMap map;
  for (ModelTensor& t : tensors) {
    const std::string name = t.name;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    if (n != static_cast<int64_t>(t.values.size())) {
      return Status::InvalidArgument(fmt::format("{}: tensor \"{}\" has {} values, its shape {} {}",
                                                 source, name, t.values.size(),
                                                 fmt::join(t.shape, "x"), n));
    }
    if (!map.emplace(name, nn::Tensor{std::move(t.shape), std::move(t.values)}).second) {
      return Status::InvalidArgument(fmt::format("{}: tensor \"{}\" appears twice", source, name));
    }
  }
  // The widths from the weights' shapes: layers.0.weight is [w1, w0], layers.i.weight [w(i+1), wi].
  std::vector<int64_t> widths;
  for (int l = 0;; ++l) {
    auto it = map.find(nn::WeightName(l));
    if (it == map.end()) break;
    if (it->second.shape.size() != 2) {
      return Status::InvalidArgument(
          fmt::format("{}: tensor \"{}\" has {} dimensions, not 2 [out, in]", source, it->first,
                      it->second.shape.size()));
    }
    if (l == 0) widths.push_back(it->second.shape[1]);
    widths.push_back(it->second.shape[0]);
  }
  if (widths.empty()) {
    return Status::InvalidArgument(
        fmt::format("{}: no tensor \"layers.0.weight\"; a model is layers.<i>.weight [out, in] "
                    "and layers.<i>.bias [out]",
                    source));
  }
  // Shapes, missing biases and surplus tensors are checked against those widths.
  ACAN_ASSIGN_OR_RETURN(nn::Model m, nn::ModelFromTensors(map, widths, source));
  Model out;
  out.widths_ = m.widths;
  for (int l = 0; l < m.NumLayers(); ++l) {
    out.tensors_.push_back(
        {nn::WeightName(l), {m.widths[l + 1], m.widths[l]}, std::move(m.weights[l])});
    out.tensors_.push_back({nn::BiasName(l), {m.widths[l + 1]}, std::move(m.biases[l])});
  }
  return out;
}

Result<Model> Model::Initial(const JobConfig& job) {
  ACAN_ASSIGN_OR_RETURN(nn::Model m, nn::InitialModel(job));
  return nn::ToPublicModel(m);
}

const ModelTensor* Model::Find(std::string_view name) const {
  for (const ModelTensor& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

int64_t Model::NumParameters() const {
  int64_t n = 0;
  for (const ModelTensor& t : tensors_) n += static_cast<int64_t>(t.values.size());
  return n;
}

std::string Model::Sha256() const { return nn::ModelSha256(nn::FromPublicModel(*this)); }

Result<Model> LoadModel(const std::string& path) {
  ACAN_ASSIGN_OR_RETURN(nn::TensorMap map, nn::ReadSafetensors(path));
  std::vector<ModelTensor> tensors;
  for (auto& [name, t] : map) tensors.push_back({name, std::move(t.shape), std::move(t.data)});
  return Model::FromTensors(std::move(tensors), path);
}

Result<Model> LoadModel(const std::string& path, const JobConfig& job) {
  if (!nn::IsLayerList(job.model)) return LoadModel(path);  // Evaluate checks its widths
  ACAN_ASSIGN_OR_RETURN(nn::Model m, nn::LoadJobModel(path, job));
  return nn::ToPublicModel(m);
}

Status SaveModel(const Model& model, const std::string& path) {
  if (model.num_layers() == 0) {
    return Status::InvalidArgument(fmt::format("cannot save an empty model to '{}'", path));
  }
  return nn::SaveModel(path, nn::FromPublicModel(model));
}

Result<EvalResult> Evaluate(const Model& model, const JobConfig& job) {
  if (model.widths() != job.model.layers) {
    return Status::InvalidArgument(
        fmt::format("the model's widths [{}] are not the job's model.layers [{}]",
                    fmt::join(model.widths(), ", "), fmt::join(job.model.layers, ", ")));
  }
  ACAN_ASSIGN_OR_RETURN(std::optional<nn::Dataset> test, nn::LoadTestDataset(job));
  std::string split = "test";
  if (!test) {
    ACAN_ASSIGN_OR_RETURN(test, nn::LoadDataset(job));
    split = "train";
  }
  ACAN_ASSIGN_OR_RETURN(nn::EvalReport r, nn::Evaluate(nn::FromPublicModel(model), *test, job));
  return nn::ToPublicEval(r, split, test->classification);
}

}  // namespace acan
