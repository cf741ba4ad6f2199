// CSV training data: each row holds the features, then the target(s) (regression) or an integral
// class label (classification). Comma-separated, optional header row (detected when the first
// row has a non-numeric cell), blank lines ignored. Ragged rows and non-numeric cells are
// InvalidArgument errors naming the file, row, column and byte offset. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "acan/status.h"
#include "nn/dataset.h"

namespace acan::nn {

struct CsvOptions {
  int64_t target_columns = 1;   // trailing columns that are targets (classification: 1)
  bool classification = false;  // the target column is a label: an integer >= 0
};

Result<Dataset> ParseCsv(std::string_view text, std::string_view source, const CsvOptions& opts);
Result<Dataset> ReadCsv(const std::string& path, const CsvOptions& opts);

}  // namespace acan::nn
