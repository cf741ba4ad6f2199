// Job files (TOML): ParseJobString on any text either gives a configuration or an error that
// names the key; a configuration written back (JobToToml) parses to the same file again.
#include "acan/job.h"

#include <cstdlib>
#include <string_view>

#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  acan::fuzz::SetFuzzLimits();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto job = acan::ParseJobString(text, "fuzz.toml");
  if (job.ok()) {
    const std::string again = acan::ToToml(*job);
    auto reread = acan::ParseJobString(again, "again.toml");
    if (!reread.ok() || acan::ToToml(*reread) != again) std::abort();
  }
  return 0;
}
