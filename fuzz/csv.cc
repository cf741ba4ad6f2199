// CSV data: ParseCsv on any text, as regression (1 or 2 target columns) and as classification.
#include "nn/csv.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto [targets, classification] :
       {std::pair<int64_t, bool>{1, false}, {2, false}, {1, true}}) {
    acan::nn::CsvOptions o;
    o.target_columns = targets;
    o.classification = classification;
    (void)acan::nn::ParseCsv(text, "fuzz.csv", o);
  }
  return 0;
}
