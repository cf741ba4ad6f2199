// Integers from JSON that others wrote (task specs, the manager's state, audit records):
// nlohmann's get<int64_t>() of a float value casts it, which is undefined behaviour when it is out
// of range (fuzz_messages found {"step": 1e300}); these take integers only, in the type's range,
// and throw nlohmann::json::type_error or out_of_range otherwise (the callers' catch turns that
// into a DataLoss or InvalidArgument). Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace acan::nn {

template <typename T = int64_t>
T JsonInt(const nlohmann::json& v) {
  using json = nlohmann::json;
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      throw json::out_of_range::create(406, "integer " + v.dump() + " is out of range", &v);
    }
    return static_cast<T>(v.get<uint64_t>());
  }
  if (!v.is_number_integer()) {
    throw json::type_error::create(302, "an integer is needed, not " + v.dump(), &v);
  }
  const int64_t i = v.get<int64_t>();
  if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      (i > 0 && static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
    throw json::out_of_range::create(406, "integer " + v.dump() + " is out of range", &v);
  }
  return static_cast<T>(i);
}

inline std::vector<int64_t> JsonInts(const nlohmann::json& v) {
  std::vector<int64_t> out;
  for (const auto& e : v) out.push_back(JsonInt(e));
  return out;
}

inline std::map<std::string, int64_t> JsonIntMap(const nlohmann::json& v) {
  if (!v.is_object()) {
    throw nlohmann::json::type_error::create(302, "an object is needed, not " + v.dump(), &v);
  }
  std::map<std::string, int64_t> out;
  for (const auto& [k, e] : v.items()) out[k] = JsonInt(e);
  return out;
}

}  // namespace acan::nn
