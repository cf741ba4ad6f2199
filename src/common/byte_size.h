// Sizes in bytes as people write them: "24MiB", "1.5GiB", "512K", "16777216". Binary units
// (B, KiB, MiB, GiB, TiB; K, M, G, T as their shorthand) and decimal ones (kB, KB, MB, GB, TB).
// Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "acan/status.h"

namespace acan {

// The bytes `text` names; InvalidArgument saying what is wrong (no number, an unknown unit, a
// negative or fractional byte count, more than 2^62).
Result<int64_t> ParseByteSize(std::string_view text);

// `bytes` in the largest binary unit that holds it exactly ("24MiB", "1536KiB", "100B"), so that
// ParseByteSize(FormatByteSize(n)) == n.
std::string FormatByteSize(int64_t bytes);

// `bytes` for people: three significant figures in the largest binary unit ("23.8 MiB").
std::string HumanBytes(double bytes);

}  // namespace acan
