#include "nn/dataset.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nn/csv.h"
#include "nn/idx.h"
#include "nn/rng.h"

namespace acan::nn {

void Dataset::Truncate(int64_t n) {
  if (n <= 0 || n >= rows) return;
  rows = n;
  x.resize(rows * features);
  y.resize(rows * target_width);
}

Dataset MakeSynthetic(int64_t samples, int64_t inputs, int64_t outputs, bool classification,
                      uint64_t seed) {
  Rng coef_rng(MixSeed(seed, 0xC0EF));
  std::vector<float> a(outputs * inputs);
  const float scale = 2.0f / std::sqrt(static_cast<float>(inputs));
  for (float& v : a) v = coef_rng.Uniform(-1.0f, 1.0f) * scale;
  Dataset d;
  d.rows = samples;
  d.features = inputs;
  d.classification = classification;
  d.target_width = classification ? 1 : outputs;
  d.classes = classification ? outputs : 0;
  d.x.resize(samples * inputs);
  d.y.resize(samples * d.target_width);
  Rng rng(MixSeed(seed, 0xDA7A));
  for (float& v : d.x) v = rng.Uniform(-1.0f, 1.0f);
  for (int64_t r = 0; r < samples; ++r) {
    const float* xr = &d.x[r * inputs];
    int64_t best = 0;
    double best_v = -1e300;
    for (int64_t o = 0; o < outputs; ++o) {
      double dot = 0;
      for (int64_t i = 0; i < inputs; ++i) dot += static_cast<double>(a[o * inputs + i]) * xr[i];
      if (classification) {
        if (dot > best_v) best_v = dot, best = o;
      } else {
        d.y[r * outputs + o] = static_cast<float>(0.8 * std::sin(dot));
      }
    }
    if (classification) d.y[r] = static_cast<float>(best);
  }
  return d;
}

Status CheckDataset(const Dataset& data, const JobConfig& job, const std::string& source) {
  const auto& layers = job.model.layers;
  const bool classify = job.model.loss == LossKind::kSoftmaxCrossEntropy;
  if (data.rows < 1) return Status::InvalidArgument(source + ": the data set has no rows");
  if (data.features != layers.front()) {
    return Status::InvalidArgument(source + ": rows have " + std::to_string(data.features) +
                                   " features but model.layers starts with " +
                                   std::to_string(layers.front()) +
                                   "; make the input width match the data");
  }
  if (classify) {
    if (!data.classification) {
      return Status::InvalidArgument(source + ": softmax_cross_entropy needs class labels");
    }
    if (data.classes > layers.back()) {
      return Status::InvalidArgument(
          source + ": labels go up to " + std::to_string(data.classes - 1) + " but the model has " +
          std::to_string(layers.back()) + " outputs; set the last width to the number of classes");
    }
  } else if (data.target_width != layers.back()) {
    return Status::InvalidArgument(source + ": rows have " + std::to_string(data.target_width) +
                                   " target values but the model has " +
                                   std::to_string(layers.back()) + " outputs");
  }
  return Status::Ok();
}

Result<Dataset> LoadDataset(const JobConfig& job) {
  const auto& layers = job.model.layers;
  const bool classify = job.model.loss == LossKind::kSoftmaxCrossEntropy;
  Dataset d;
  std::string source;
  switch (job.data.source) {
    case DataSource::kSynthetic:
      d = MakeSynthetic(job.data.samples, layers.front(), layers.back(), classify, job.train.seed);
      source = "synthetic data";
      break;
    case DataSource::kCsv: {
      source = job.Resolve(job.data.path);
      CsvOptions opts;
      opts.target_columns = classify ? 1 : layers.back();
      opts.classification = classify;
      ACAN_ASSIGN_OR_RETURN(d, ReadCsv(source, opts));
      break;
    }
    case DataSource::kIdx: {
      source = job.Resolve(job.data.images);
      ACAN_ASSIGN_OR_RETURN(d, ReadIdxDataset(source, job.Resolve(job.data.labels)));
      break;
    }
    case DataSource::kFashionMnist: {
      source = std::string(kFashionMnistDir);
      ACAN_ASSIGN_OR_RETURN(d, LoadFashionMnist(kFashionMnistDir, /*train=*/true));
      break;
    }
  }
  if (job.data.source != DataSource::kSynthetic) d.Truncate(job.data.limit);
  ACAN_RETURN_IF_ERROR(CheckDataset(d, job, source));
  return d;
}

double Accuracy(const float* z, const float* labels, int64_t rows, int64_t classes) {
  if (rows == 0) return 0;
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* zr = z + r * classes;
    if (std::max_element(zr, zr + classes) - zr == static_cast<int64_t>(labels[r])) ++correct;
  }
  return static_cast<double>(correct) / rows;
}

Batcher::Batcher(const Dataset* data, int64_t batch, bool shuffle, uint64_t seed)
    : data_(data), batch_(batch), shuffle_(shuffle), seed_(seed) {}

std::vector<int64_t> Batcher::EpochOrder(int64_t epoch) const {
  std::vector<int64_t> order(data_->rows);
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle_) return order;
  Rng rng(MixSeed(seed_, 0x5EED0000ull + static_cast<uint64_t>(epoch)));
  for (int64_t i = data_->rows - 1; i > 0; --i) {
    std::swap(order[i], order[rng.Below(static_cast<uint64_t>(i) + 1)]);
  }
  return order;
}

int64_t Batcher::BatchRows(int64_t step) const {
  const int64_t index = step % BatchesPerEpoch();
  return std::min(batch_, data_->rows - index * batch_);
}

Batch Batcher::Get(int64_t step) {
  const int64_t epoch = step / BatchesPerEpoch();
  const int64_t index = step % BatchesPerEpoch();
  if (epoch != cached_epoch_) {
    order_ = EpochOrder(epoch);
    cached_epoch_ = epoch;
  }
  Batch b;
  b.rows = BatchRows(step);
  const int64_t f = data_->features, tw = data_->target_width;
  b.x.resize(b.rows * f);
  b.t.resize(b.rows * tw);
  for (int64_t r = 0; r < b.rows; ++r) {
    const int64_t src = order_[index * batch_ + r];
    std::copy_n(&data_->x[src * f], f, &b.x[r * f]);
    std::copy_n(&data_->y[src * tw], tw, &b.t[r * tw]);
  }
  return b;
}

}  // namespace acan::nn
