// Row cache files (nn/row_cache.h): any bytes as <dir>/<key>.rows through MapRowCache, which maps
// the file and checks its header's sizes against its length and both hashes before it hands rows
// out. Property: rows handed out have the sizes their file holds.
#include "nn/row_cache.h"

#include <cstdlib>

#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string key = "fuzzkey";
  acan::fuzz::WriteScratch(key + ".rows", data, size);
  auto rows = acan::nn::MapRowCache(acan::fuzz::ScratchDir(), key);
  if (!rows.ok() || !rows->has_value()) return 0;
  const acan::nn::Dataset& d = (*rows)->data;
  const size_t floats = static_cast<size_t>(d.rows) * (d.features + d.target_width);
  if (floats * sizeof(float) > size) std::abort();
  return 0;
}
