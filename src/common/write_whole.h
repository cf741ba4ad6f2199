// Writing a file whole: through a temporary file beside it and a rename, so that a reader sees the
// old file or the new one, never half of one.
#pragma once

#include <string>

#include "acan/status.h"

namespace acan {

// Writes `text` to `path` through `path`.tmp and a rename.
Status WriteWhole(const std::string& path, const std::string& text);

}  // namespace acan
