// Reading a whole input file (a job, a CSV file, a model) with errors that name the file and say
// why: a path that cannot be opened is NotFound, a folder is InvalidArgument and a read that fails
// part way is DataLoss. A folder opens like a file on Linux and only its reads fail, which a
// stream turns into an empty file or an exception. Stateless; thread-safe.
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "acan/status.h"
#include "common/limits.h"

namespace acan::nn {

// `what` names the kind of file in the messages ("job file"), `hint` says what to check
// ("check data.path"). A file longer than `max_bytes` (common/limits.h) is ResourceExhausted,
// found before it is read.
inline Result<std::string> ReadWholeFile(const std::string& path, std::string_view what,
                                         uint64_t max_bytes,
                                         std::string_view hint = "check the path") {
  const std::string named = std::string(what) + " \"" + path + "\"";
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Status::NotFound("cannot open " + named + " (" + std::strerror(errno) + "); " +
                            std::string(hint));
  }
  auto too_big = [&](const std::string& size) {
    std::fclose(f);
    return Status::ResourceExhausted(named + " is " + size + " bytes, over the limit of " +
                                     std::to_string(max_bytes) + " (docs/operations.md, Limits)");
  };
  struct stat st {};
  if (::fstat(::fileno(f), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      std::fclose(f);
      return Status::InvalidArgument(named + " is a directory, not a file; " + std::string(hint));
    }
    if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) {
      return too_big(std::to_string(st.st_size));
    }
  }
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    if (out.size() + n > max_bytes) return too_big("more than " + std::to_string(max_bytes));
    out.append(buf, n);
  }
  const int error = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (error == EISDIR) {
    return Status::InvalidArgument(named + " is a directory, not a file; " + std::string(hint));
  }
  if (error != 0) {
    return Status::DataLoss("cannot read " + named + " after " + std::to_string(out.size()) +
                            " bytes (" + std::strerror(error) + ")");
  }
  return out;
}

}  // namespace acan::nn
