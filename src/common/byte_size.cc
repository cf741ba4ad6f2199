#include "common/byte_size.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

namespace acan {
namespace {

struct Unit {
  std::string_view name;
  double scale;
};

constexpr Unit kUnits[] = {
    {"", 1},         {"B", 1},      {"K", 0x1p10},   {"KiB", 0x1p10}, {"M", 0x1p20},
    {"MiB", 0x1p20}, {"G", 0x1p30}, {"GiB", 0x1p30}, {"T", 0x1p40},   {"TiB", 0x1p40},
    {"kB", 1e3},     {"KB", 1e3},   {"MB", 1e6},     {"GB", 1e9},     {"TB", 1e12},
};

}  // namespace

Result<int64_t> ParseByteSize(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) {
    return Status::InvalidArgument("size " + quoted +
                                   " does not start with a number of bytes (e.g. 24MiB, 512K)");
  }
  double number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + i, number);
  if (ec != std::errc() || end != text.data() + i) {
    return Status::InvalidArgument("size " + quoted + ": '" + std::string(text.substr(0, i)) +
                                   "' is not a number");
  }
  std::string_view unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  for (const Unit& u : kUnits) {
    if (u.name != unit) continue;
    const double bytes = number * u.scale;
    if (!(bytes <= 0x1p62)) return Status::InvalidArgument("size " + quoted + " is too large");
    if (bytes != std::floor(bytes)) {
      return Status::InvalidArgument("size " + quoted + " is not a whole number of bytes");
    }
    return static_cast<int64_t>(bytes);
  }
  return Status::InvalidArgument("size " + quoted + ": unknown unit '" + std::string(unit) +
                                 "'; use B, KiB, MiB, GiB, TiB (or K, M, G, T), kB, MB, GB, TB");
}

std::string FormatByteSize(int64_t bytes) {
  static constexpr std::string_view kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{}{}", bytes, kNames[u]);
}

std::string HumanBytes(double bytes) {
  static constexpr std::string_view kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && std::abs(bytes) >= 1024) {
    bytes /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{:.0f} B", bytes);
  return fmt::format("{:.{}f} {}", bytes, bytes >= 100 ? 0 : bytes >= 10 ? 1 : 2, kNames[u]);
}

}  // namespace acan
