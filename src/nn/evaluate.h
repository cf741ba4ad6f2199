// Evaluation of a model on a data set: forward passes only, in chunks, no state kept. Gives the
// mean loss and, for classification, the accuracy overall and per class; FormatEvalReport
// renders it for a terminal. Pure functions of their arguments; thread-safe once InitBlas has run
// (Evaluate calls it).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
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

// Rows per chunk of Evaluate's forward passes. The loss is summed chunk by chunk, so only the same
// cutting promises bitwise the same loss.
constexpr int64_t kEvalChunkRows = 256;

// The model's outputs (rows x outputs) for the inputs x (rows x features). The span may point
// into the function's own buffer; it need stay valid only until the next call.
using ChunkForward = std::function<Result<std::span<const float>>(const float* x, int64_t rows)>;

// The part of an evaluation that does not depend on where the weights are, shared by Evaluate
// and EvaluateStreamed (model_stream.h): checks the data against the input width widths.front(),
// runs `forward` over the rows in chunks of chunk_rows, and sums each chunk's loss and accuracy
// into the report. REQUIRES: chunk_rows >= 1.
Result<EvalReport> EvaluateInChunks(const std::vector<int64_t>& widths, const Dataset& data,
                                    LossKind loss, int64_t chunk_rows, const ChunkForward& forward);

// Lines such as "test_loss 0.3012  test_accuracy 0.8911 (10000 rows)" and, for classification,
// one line per class ("  class 0 T-shirt/top  0.8430  (1000 rows)"). `prefix` is "test" or
// "train"; `class_names` (optional) labels the classes.
std::string FormatEvalReport(const EvalReport& r, std::string_view prefix,
                             const std::vector<std::string>& class_names = {});

}  // namespace acan::nn
