#include "nn/dataset.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nn/csv.h"
#include "nn/idx.h"
#include "nn/rng.h"
#include "nn/safetensors.h"

namespace acan::nn {

void Dataset::Truncate(int64_t n) {
  if (n <= 0 || n >= rows) return;
  rows = n;
  if (mapped) {
    mapped->x = mapped->x.first(rows * features);
    mapped->y = mapped->y.first(rows * target_width);
    return;
  }
  x.resize(rows * features);
  y.resize(rows * target_width);
}

std::string DataSha256(const Dataset& data) {
  const std::vector<float> shape = {float(data.rows), float(data.features),
                                    float(data.target_width)};
  return FloatsSha256({shape, data.Features(), data.Targets()});
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

namespace {

// The rows of one split as stored (before scaling), with `source` naming them for messages.
struct RawSplit {
  Dataset data;
  std::string source;
};

Result<RawSplit> ReadTrainSplit(const JobConfig& job) {
  const auto& layers = job.model.layers;
  const bool classify = job.model.loss == LossKind::kSoftmaxCrossEntropy;
  RawSplit s;
  switch (job.data.source) {
    case DataSource::kSynthetic:
      s.data =
          MakeSynthetic(job.data.samples, layers.front(), layers.back(), classify, job.train.seed);
      s.source = "synthetic data";
      return s;
    case DataSource::kCsv: {
      s.source = job.Resolve(job.data.path);
      CsvOptions opts;
      opts.target_columns = classify ? 1 : layers.back();
      opts.classification = classify;
      ACAN_ASSIGN_OR_RETURN(s.data, ReadCsv(s.source, opts));
      break;
    }
    case DataSource::kIdx: {
      s.source = job.Resolve(job.data.images);
      ACAN_ASSIGN_OR_RETURN(s.data, ReadIdxDataset(s.source, job.Resolve(job.data.labels)));
      break;
    }
    case DataSource::kFashionMnist: {
      s.source = std::string(kFashionMnistDir) + "/train-*";
      ACAN_ASSIGN_OR_RETURN(s.data, LoadFashionMnist(kFashionMnistDir, /*train=*/true));
      break;
    }
  }
  s.data.Truncate(job.data.limit);
  return s;
}

Result<std::optional<RawSplit>> ReadTestSplit(const JobConfig& job) {
  if (!job.data.HasTestSplit()) return std::optional<RawSplit>();
  const bool classify = job.model.loss == LossKind::kSoftmaxCrossEntropy;
  RawSplit s;
  switch (job.data.source) {
    case DataSource::kSynthetic:
      return std::optional<RawSplit>();
    case DataSource::kCsv: {
      s.source = job.Resolve(job.data.test_path);
      CsvOptions opts;
      opts.target_columns = classify ? 1 : job.model.layers.back();
      opts.classification = classify;
      ACAN_ASSIGN_OR_RETURN(s.data, ReadCsv(s.source, opts));
      break;
    }
    case DataSource::kIdx: {
      if (job.data.test_images.empty() || job.data.test_labels.empty()) {
        return Status::InvalidArgument(
            "an idx test split needs both data.test_images and data.test_labels");
      }
      s.source = job.Resolve(job.data.test_images);
      ACAN_ASSIGN_OR_RETURN(s.data, ReadIdxDataset(s.source, job.Resolve(job.data.test_labels)));
      break;
    }
    case DataSource::kFashionMnist: {
      s.source = std::string(kFashionMnistDir) + "/t10k-*";
      ACAN_ASSIGN_OR_RETURN(s.data, LoadFashionMnist(kFashionMnistDir, /*train=*/false));
      break;
    }
  }
  s.data.Truncate(job.data.test_limit);
  return std::optional<RawSplit>(std::move(s));
}

Status CheckTestAgainstTrain(const Dataset& test, const Dataset& train, const std::string& source) {
  if (test.features != train.features) {
    return Status::InvalidArgument(source + ": test rows have " + std::to_string(test.features) +
                                   " features but training rows have " +
                                   std::to_string(train.features) +
                                   "; the test split must come from the same kind of data");
  }
  return Status::Ok();
}

}  // namespace

void ScaleInputs(InputScale scale, Dataset* data) {
  if (scale != InputScale::kUnit) return;
  for (float& v : data->x) v *= 1.0f / 255.0f;
}

void ApplyStandardization(const std::vector<float>& mean, const std::vector<float>& std,
                          Dataset* data) {
  const int64_t f = data->features;
  std::vector<float> inv(f);
  for (int64_t j = 0; j < f; ++j) inv[j] = 1.0f / std[j];
  for (int64_t r = 0; r < data->rows; ++r) {
    float* xr = &data->x[r * f];
    for (int64_t j = 0; j < f; ++j) xr[j] = (xr[j] - mean[j]) * inv[j];
  }
  data->feature_mean = mean;
  data->feature_std = std;
}

void Standardize(Dataset* data) {
  const int64_t f = data->features;
  std::vector<double> sum(f, 0.0), sq(f, 0.0);
  for (int64_t r = 0; r < data->rows; ++r) {
    const float* xr = &data->x[r * f];
    for (int64_t j = 0; j < f; ++j) sum[j] += xr[j];
  }
  std::vector<float> mean(f), std(f);
  const double n = std::max<int64_t>(data->rows, 1);
  for (int64_t j = 0; j < f; ++j) mean[j] = static_cast<float>(sum[j] / n);
  for (int64_t r = 0; r < data->rows; ++r) {
    const float* xr = &data->x[r * f];
    for (int64_t j = 0; j < f; ++j) {
      const double d = static_cast<double>(xr[j]) - mean[j];
      sq[j] += d * d;
    }
  }
  for (int64_t j = 0; j < f; ++j) {
    const double s = std::sqrt(sq[j] / n);
    std[j] = s < 1e-6 ? 1.0f : static_cast<float>(s);
  }
  ApplyStandardization(mean, std, data);
}

Result<Dataset> LoadDataset(const JobConfig& job) {
  ACAN_ASSIGN_OR_RETURN(RawSplit s, ReadTrainSplit(job));
  ACAN_RETURN_IF_ERROR(CheckDataset(s.data, job, s.source));
  ScaleInputs(job.data.EffectiveScale(), &s.data);
  if (job.data.standardize) Standardize(&s.data);
  return std::move(s.data);
}

Result<std::optional<Dataset>> LoadTestDataset(const JobConfig& job, const Dataset& train) {
  ACAN_ASSIGN_OR_RETURN(std::optional<RawSplit> s, ReadTestSplit(job));
  if (!s) return std::optional<Dataset>();
  ACAN_RETURN_IF_ERROR(CheckDataset(s->data, job, s->source + " (test split)"));
  ACAN_RETURN_IF_ERROR(CheckTestAgainstTrain(s->data, train, s->source + " (test split)"));
  ScaleInputs(job.data.EffectiveScale(), &s->data);
  if (job.data.standardize) {
    if (static_cast<int64_t>(train.feature_mean.size()) != train.features) {
      return Status::InvalidArgument(
          "data.standardize is set but the training set given for its statistics was not "
          "standardised; load it with LoadDataset for the same job");
    }
    ApplyStandardization(train.feature_mean, train.feature_std, &s->data);
  }
  return std::optional<Dataset>(std::move(s->data));
}

Result<std::optional<Dataset>> LoadTestDataset(const JobConfig& job) {
  if (!job.data.HasTestSplit()) return std::optional<Dataset>();
  if (job.data.standardize) {
    ACAN_ASSIGN_OR_RETURN(Dataset train, LoadDataset(job));
    return LoadTestDataset(job, train);
  }
  // Without standardisation only the widths of the training rows matter.
  Dataset shape;
  shape.features = job.model.layers.front();
  return LoadTestDataset(job, shape);
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
  const float* x = data_->Features().data();
  const float* y = data_->Targets().data();
  b.x.resize(b.rows * f);
  b.t.resize(b.rows * tw);
  for (int64_t r = 0; r < b.rows; ++r) {
    const int64_t src = order_[index * batch_ + r];
    std::copy_n(x + src * f, f, &b.x[r * f]);
    std::copy_n(y + src * tw, tw, &b.t[r * tw]);
  }
  return b;
}

}  // namespace acan::nn
