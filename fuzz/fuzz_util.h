// Helpers the fuzz targets share: the input as a file (for readers that take a path) and the
// process-wide limits the targets run under. Each fuzz_<target> is one libFuzzer executable
// (fuzz/CMakeLists.txt); its seed corpus is fuzz/corpus/<target>/ and fuzz/run.sh runs it.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace acan::fuzz {

// The bounds a target's inputs are held to: small enough that libFuzzer's -malloc_limit_mb
// (fuzz/run.sh: 256) catches any allocation that follows a claimed size instead of the input.
inline void SetFuzzLimits() {
  setenv("ACAN_MAX_JOB_FILE_BYTES", "1M", 1);
  setenv("ACAN_MAX_MODEL_FILE_BYTES", "64M", 1);
  setenv("ACAN_MAX_DATA_FILE_BYTES", "64M", 1);
  setenv("ACAN_MAX_AUDIT_FILE_BYTES", "64M", 1);
}

// A private directory for this process, made once, and a file in it holding `data`.
inline const std::string& ScratchDir() {
  static const std::string dir = [] {
    std::string t =
        std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/acan-fuzz-XXXXXX";
    if (mkdtemp(t.data()) == nullptr) std::abort();
    return t;
  }();
  return dir;
}

inline std::string WriteScratch(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = ScratchDir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace acan::fuzz
