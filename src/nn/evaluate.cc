#include "nn/evaluate.h"

#include <algorithm>
#include <cstdio>

#include "nn/kernels.h"
#include "nn/network.h"

namespace acan::nn {

Result<EvalReport> EvaluateInChunks(const std::vector<int64_t>& widths, const Dataset& data,
                                    LossKind loss, int64_t chunk_rows,
                                    const ChunkForward& forward) {
  const int64_t o = widths.back();
  const bool classify = loss == LossKind::kSoftmaxCrossEntropy;
  if (data.features != widths.front()) {
    return Status::InvalidArgument("evaluation: rows have " + std::to_string(data.features) +
                                   " features but the model's input width is " +
                                   std::to_string(widths.front()));
  }
  EvalReport r;
  r.rows = data.rows;
  std::vector<int64_t> class_correct;
  if (classify) {
    class_correct.assign(o, 0);
    r.class_rows.assign(o, 0);
  }
  int64_t correct = 0;
  for (int64_t r0 = 0; r0 < data.rows; r0 += chunk_rows) {
    const int64_t rows = std::min(chunk_rows, data.rows - r0);
    ACAN_ASSIGN_OR_RETURN(std::span<const float> z,
                          forward(data.Features().data() + r0 * data.features, rows));
    const float* targets = data.Targets().data() + r0 * data.target_width;
    ACAN_ASSIGN_OR_RETURN(LossValue v, ComputeLoss(loss, z.data(), rows, o, targets, 1.0, nullptr));
    r.loss += v.loss;
    correct += v.correct;
    if (classify) {  // ComputeLoss has checked every label is an integer in [0, o)
      for (int64_t i = 0; i < rows; ++i) {
        const float* zr = &z[i * o];
        const auto label = static_cast<int64_t>(targets[i]);
        ++r.class_rows[label];
        if (std::max_element(zr, zr + o) - zr == label) ++class_correct[label];
      }
    }
  }
  if (data.rows > 0) {
    r.loss /= data.rows;
    r.accuracy = classify ? static_cast<double>(correct) / data.rows : 0;
  }
  for (int64_t c = 0; c < static_cast<int64_t>(class_correct.size()); ++c) {
    r.per_class_accuracy.push_back(
        r.class_rows[c] ? static_cast<double>(class_correct[c]) / r.class_rows[c] : 0.0);
  }
  return r;
}

Result<EvalReport> Evaluate(const Model& model, const Dataset& data, const JobConfig& job) {
  InitBlas();
  if (!model.layer.empty()) {
    ACAN_ASSIGN_OR_RETURN(Network net, Network::Create(model.layer, model.input_shape));
    std::vector<const float*> params;
    for (size_t k = 0; k < model.weights.size(); ++k) {
      params.push_back(model.weights[k].data());
      if (!model.biases[k].empty()) params.push_back(model.biases[k].data());
    }
    std::vector<float> z;
    auto forward = [&](const float* x, int64_t rows) -> Result<std::span<const float>> {
      ACAN_ASSIGN_OR_RETURN(z, net.Predict(x, rows, params));
      return std::span<const float>(z);
    };
    return EvaluateInChunks(model.widths, data, job.model.loss, kEvalChunkRows, forward);
  }
  const int L = model.NumLayers();
  std::vector<float> a, h;
  auto forward = [&](const float* x, int64_t rows) -> Result<std::span<const float>> {
    a.assign(x, x + rows * model.widths.front());
    for (int l = 0; l < L; ++l) {
      h.resize(rows * model.widths[l + 1]);
      DenseForward(a.data(), rows, model.widths[l], model.weights[l].data(), model.widths[l],
                   model.widths[l + 1], model.biases[l].data(), h.data());
      if (l + 1 < L)
        ApplyActivation(job.model.activation, h.data(), static_cast<int64_t>(h.size()));
      std::swap(a, h);
    }
    return std::span<const float>(a);
  };
  return EvaluateInChunks(model.widths, data, job.model.loss, kEvalChunkRows, forward);
}

std::string FormatEvalReport(const EvalReport& r, std::string_view prefix,
                             const std::vector<std::string>& class_names) {
  const std::string p(prefix);
  char line[256];
  std::snprintf(line, sizeof(line), "%s_loss %.6f", p.c_str(), r.loss);
  std::string out = line;
  if (!r.per_class_accuracy.empty()) {
    std::snprintf(line, sizeof(line), "  %s_accuracy %.4f", p.c_str(), r.accuracy);
    out += line;
  }
  std::snprintf(line, sizeof(line), "  (%lld rows)\n", static_cast<long long>(r.rows));
  out += line;
  int width = 0;
  for (const std::string& n : class_names) width = std::max(width, static_cast<int>(n.size()));
  for (size_t c = 0; c < r.per_class_accuracy.size(); ++c) {
    const std::string name = c < class_names.size() ? class_names[c] : "";
    std::snprintf(line, sizeof(line), "  class %2zu %-*s %.4f  (%lld rows)\n", c, width,
                  name.c_str(), r.per_class_accuracy[c], static_cast<long long>(r.class_rows[c]));
    out += line;
  }
  return out;
}

}  // namespace acan::nn
