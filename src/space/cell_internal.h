// What every backend says about cells the same way (include/acan/space.h, SwapCell).
#pragma once

#include <fmt/format.h>

#include <string>

#include "acan/space.h"

namespace acan {

// ResourceExhausted for a value too large for a cell; Ok otherwise.
inline Status CheckCellValue(const Key& key, const Value& value, const std::string& uri) {
  if (value.size() <= kMaxCellBytes) return Status::Ok();
  return Status::ResourceExhausted(
      fmt::format("value for cell '{}' in space '{}' is {} bytes, over the {} bytes a cell holds",
                  key.str(), uri, value.size(), kMaxCellBytes));
}

// The swap lost: the cell was not at `expected` but at `found` (in words: "revision 7", "no
// revision (there is no cell)", "a later revision").
inline Status CellMoved(const Key& key, uint64_t expected, const std::string& uri,
                        std::string found) {
  return Status::FailedPrecondition(
      fmt::format("swap of cell '{}' in space '{}' from revision {} refused: the cell is at {}",
                  key.str(), uri, expected, found));
}

// A fenced put refused: its fence's cell was at `found` (in words, as CellMoved's), not at the
// revision the writer named.
inline Status FenceMoved(const Key& key, const Fence& fence, const std::string& uri,
                         std::string found) {
  return Status::FailedPrecondition(
      fmt::format("fenced put of '{}' in space '{}' refused: cell '{}' is at {}, not at revision "
                  "{} (another writer swapped it)",
                  key.str(), uri, fence.cell.str(), found, fence.revision));
}

// The revision of a cell, in words.
inline std::string RevisionWords(uint64_t revision) {
  return revision != 0 ? fmt::format("revision {}", revision)
                       : std::string("no revision (there is no cell)");
}

}  // namespace acan
