#include "common/limits.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace acan {
namespace {

void FromEnv(const char* name, uint64_t* bytes) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return;
  std::string_view s(text);
  uint64_t scale = 1;
  switch (s.back()) {
    case 'K':
      scale = uint64_t{1} << 10;
      break;
    case 'M':
      scale = uint64_t{1} << 20;
      break;
    case 'G':
      scale = uint64_t{1} << 30;
      break;
    default:
      break;
  }
  if (scale != 1) s.remove_suffix(1);
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || n == 0 || n > UINT64_MAX / scale) {
    std::fprintf(stderr, "acan: ignoring %s='%s': not a positive number of bytes (e.g. 512M)\n",
                 name, text);
    return;
  }
  *bytes = n * scale;
}

InputLimits Load() {
  InputLimits l;
  FromEnv("ACAN_MAX_JOB_FILE_BYTES", &l.job_file_bytes);
  FromEnv("ACAN_MAX_MODEL_FILE_BYTES", &l.model_file_bytes);
  FromEnv("ACAN_MAX_DATA_FILE_BYTES", &l.data_file_bytes);
  FromEnv("ACAN_MAX_AUDIT_FILE_BYTES", &l.audit_file_bytes);
  return l;
}

}  // namespace

const InputLimits& Limits() {
  static const InputLimits limits = Load();
  return limits;
}

}  // namespace acan
