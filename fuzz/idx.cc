// IDX data files, plain or gzip: the bytes as a file through ReadMaybeGzip (a gzip stream that
// inflates past the data limit is refused while it inflates), then ParseIdx as images (3
// dimensions) and as labels (1).
#include "nn/idx.h"

#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  acan::fuzz::SetFuzzLimits();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = acan::fuzz::WriteScratch("data.idx", data, size);
  auto bytes = acan::nn::ReadMaybeGzip(path);
  if (!bytes.ok()) return 0;
  (void)acan::nn::ParseIdx(*bytes, path, 3);
  (void)acan::nn::ParseIdx(*bytes, path, 1);
  return 0;
}
