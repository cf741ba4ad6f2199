// SplitMix64: a fixed, seedable mixing function (Steele, Lea, Flood 2014), the same on every build
// (unlike std::hash): the fault injectors draw replayable decisions from it.
#pragma once

#include <cstdint>

namespace acan {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A draw uniform in [0, 1) from a mixed value.
inline double UnitInterval(uint64_t h) { return double(h >> 11) * 0x1.0p-53; }

}  // namespace acan
