// Evaluation of a model on a data set: forward passes only, in chunks, no state kept. Gives the
// mean loss and, for classification, the accuracy overall and per class; FormatEvalReport
// renders it for a terminal. Pure functions of their arguments; thread-safe once InitBlas has run
// (Evaluate calls it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"
#include "nn/dataset.h"
#include "nn/model.h"

namespace acan::nn {

struct EvalReport {
  int64_t rows = 0;
  double loss = 0;      // mean per-row loss (the job's model.loss)
  double accuracy = 0;  // classification: fraction of rows whose argmax is the label; else 0
  // Classification, one entry per model output (class): rows of that label whose argmax is the
  // label, over the rows of that label (0 when no row has the label). Empty for regression.
  std::vector<double> per_class_accuracy;
  std::vector<int64_t> class_rows;  // rows per label, same indexing
};

// Loss and accuracy of `model` on `data` with job.model's activation and loss.
// REQUIRES: model.widths matches data (features in, labels < outputs), e.g. both from `job`.
Result<EvalReport> Evaluate(const Model& model, const Dataset& data, const JobConfig& job);

// Lines such as "test_loss 0.3012  test_accuracy 0.8911 (10000 rows)" and, for classification,
// one line per class ("  class 0 T-shirt/top  0.8430  (1000 rows)"). `prefix` is "test" or
// "train"; `class_names` (optional) labels the classes.
std::string FormatEvalReport(const EvalReport& r, std::string_view prefix,
                             const std::vector<std::string>& class_names = {});

}  // namespace acan::nn
