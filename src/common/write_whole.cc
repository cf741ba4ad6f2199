#include "common/write_whole.h"

#include <filesystem>
#include <fstream>

namespace acan {

Status WriteWhole(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) return Status::Unavailable("cannot write '" + tmp + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::Unavailable("cannot write '" + path + "': " + ec.message());
  return Status::Ok();
}

}  // namespace acan
