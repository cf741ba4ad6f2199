// Training and test data in memory and the mini-batch schedule. A Dataset holds features and
// targets as row-major float32; LoadDataset builds the training set from the job's [data] section
// (synthetic, csv, idx or the fashion-mnist package), LoadTestDataset the held-out test split,
// both preprocessed alike (data.scale, data.standardize with the training set's statistics) and
// checked against the model's input and output widths. Batcher
// turns a global step number into its mini-batch: epoch = step / BatchesPerEpoch(), rows taken in
// a per-epoch order shuffled with (seed, epoch), so any process computes the same batch for a
// step. Dataset is a plain value; a Batcher is not thread-safe (it caches the current epoch).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"

namespace acan::nn {

struct Dataset {
  int64_t rows = 0;
  int64_t features = 0;
  int64_t target_width = 0;     // regression: outputs per row; classification: 1 (the label)
  bool classification = false;  // targets are integral class labels
  int64_t classes = 0;          // classification: 1 + the largest label
  std::vector<float> x;         // rows x features (empty when `mapped`)
  std::vector<float> y;         // rows x target_width (empty when `mapped`)
  // When data.standardize: the training rows' per-feature mean and divisor, already applied to x
  // (a test split carries its training set's figures). Empty otherwise.
  std::vector<float> feature_mean;
  std::vector<float> feature_std;

  // Rows mapped read-only from a row cache file (row_cache.h) instead of held in x and y: every
  // copy of this value shares the mapping, and so does every process of the host that maps the
  // same file. Only readers of Features() and Targets() see them; the preprocessing functions
  // below REQUIRE a dataset that is not mapped.
  struct Mapped {
    std::span<const float> x, y;
    std::shared_ptr<const void> owner;  // keeps the mapping alive
  };
  std::optional<Mapped> mapped;

  // The rows x features inputs and rows x target_width targets, wherever they are.
  std::span<const float> Features() const { return mapped ? mapped->x : std::span<const float>(x); }
  std::span<const float> Targets() const { return mapped ? mapped->y : std::span<const float>(y); }

  // Keeps the first n rows (n <= 0 or n >= rows: unchanged).
  void Truncate(int64_t n);
};

// SHA-256 (hex) of the rows: the shape (rows, features, target width as floats), the inputs and
// the targets. Two processes with equal hashes make the same mini-batches.
std::string DataSha256(const Dataset& data);

// The feasibility task's data: inputs uniform in [-1, 1); a regression target
// t_o = 0.8 * sin(a_o . x) with seeded a_o ~ U(-1, 1)^n / sqrt(n) * 2, or, when `classification`,
// the label argmax_o (a_o . x) over `outputs` classes. Deterministic for a seed.
Dataset MakeSynthetic(int64_t samples, int64_t inputs, int64_t outputs, bool classification,
                      uint64_t seed);

// The training set of a job's [data] section: read, cut to data.limit rows, scaled
// (data.EffectiveScale()), standardised when data.standardize, and checked against model.layers
// and model.loss.
Result<Dataset> LoadDataset(const JobConfig& job);

// The held-out test split (data.test_* keys; fashion-mnist: the t10k files), cut to
// data.test_limit rows and preprocessed as the training set; nullopt when the job has none.
// With data.standardize this overload loads the training set for its statistics; the other takes
// them from `train` (the result of LoadDataset for the same job).
Result<std::optional<Dataset>> LoadTestDataset(const JobConfig& job);
Result<std::optional<Dataset>> LoadTestDataset(const JobConfig& job, const Dataset& train);

// x <- x / 255 for InputScale::kUnit; nothing for kNone. REQUIRES: scale != kAuto.
void ScaleInputs(InputScale scale, Dataset* data);
// Fits feature_mean/feature_std on data's rows (std < 1e-6 becomes 1) and standardises them.
void Standardize(Dataset* data);
// x <- (x - mean) / std per feature with given statistics, which `data` then carries.
// REQUIRES: mean.size() == std.size() == data->features.
void ApplyStandardization(const std::vector<float>& mean, const std::vector<float>& std,
                          Dataset* data);

// Checks a dataset's widths against the model: features == layers[0]; regression targets ==
// layers.back(); classification labels < layers.back().
Status CheckDataset(const Dataset& data, const JobConfig& job, const std::string& source);

// Fraction of rows whose argmax of z[rows, classes] equals the label (classification).
double Accuracy(const float* z, const float* labels, int64_t rows, int64_t classes);

struct Batch {
  int64_t rows = 0;
  std::vector<float> x;  // rows x features
  std::vector<float> t;  // rows x target_width
};

class Batcher {
 public:
  // REQUIRES: data outlives the Batcher; batch >= 1.
  Batcher(const Dataset* data, int64_t batch, bool shuffle, uint64_t seed);

  int64_t BatchesPerEpoch() const { return (data_->rows + batch_ - 1) / batch_; }
  // Rows of the mini-batch of global step `step` (the last batch of an epoch may be smaller).
  int64_t BatchRows(int64_t step) const;
  // The mini-batch of global step `step`.
  Batch Get(int64_t step);
  // Row order of an epoch: identity without shuffle, else a Fisher-Yates permutation.
  std::vector<int64_t> EpochOrder(int64_t epoch) const;

 private:
  const Dataset* data_;
  int64_t batch_;
  bool shuffle_;
  uint64_t seed_;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> order_;
};

}  // namespace acan::nn
