// A small seeded random number generator whose output is the same on every platform and
// standard library (std::*_distribution is implementation-defined, so it is not used for
// anything that must be reproducible). Not thread-safe: one generator per thread.
#pragma once

#include <cstdint>

namespace acan::nn {

// SplitMix64: a 64-bit state, full period, good enough for initialisation, shuffling and
// synthetic data.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  // Moves the stream `n` draws on, as `n` calls of Next would (the state is a counter).
  void Skip(uint64_t n) { state_ += n * 0x9E3779B97F4A7C15ull; }

  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 24 bits, exactly representable as a float.
  float Uniform() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }
  // Uniform in [lo, hi).
  float Uniform(float lo, float hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias < 2^-32 for small n).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

 private:
  uint64_t state_;
};

// Mixes several values into one seed, so streams for (seed, epoch) or (seed, "init") differ.
inline uint64_t MixSeed(uint64_t a, uint64_t b) {
  Rng r(a ^ (b * 0xD1B54A32D192ED03ull));
  r.Next();
  return r.Next();
}

}  // namespace acan::nn
