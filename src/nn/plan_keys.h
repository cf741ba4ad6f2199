// The tokens of a plan's task and tensor keys, shared by plan.cc and plan_tiles.cc. Internal to
// src/nn; pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace acan::nn::plan_keys {

// "<prefix>.s<step>" and friends: tokens of a key.
inline std::string T(char tag, int64_t v) { return "." + std::string(1, tag) + std::to_string(v); }
inline std::string S(std::string_view verb, int64_t step) {
  return std::string(verb) + T('s', step);
}

inline int64_t Blocks(int64_t n, int64_t t) { return (n + t - 1) / t; }

inline std::string ParamKey(int l, bool bias) { return "param" + T('l', l) + (bias ? ".b" : ".w"); }
inline std::string MomKey(int l, bool bias) { return "mom" + T('l', l) + (bias ? ".b" : ".w"); }

}  // namespace acan::nn::plan_keys
