// Reading and writing a JSON document's fields by path, for summary.cc: a field that is not what
// the document should hold is a FieldError naming its path from the top ("tasks.completed",
// "per_handler[2].work"), thrown and caught inside summary.cc alone. Header-only, internal.
#pragma once

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nn/json_int.h"
#include "runtime/core/summary.h"

namespace acan::runtime::json_fields {

using json = nlohmann::json;

inline json OrNull(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// Sets j[key] when the field is set; leaves it out otherwise.
template <typename T>
inline void PutIf(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

// Sets j[key] to the figure or null when the field is set; leaves it out otherwise.
inline void PutNullable(json& j, const char* key, const Nullable<double>& v) {
  if (v) j[key] = OrNull(*v);
}

// A field that is not what a summary holds, thrown inside this file only: the readers below
// name it by its path from the top ("tasks.completed", "per_handler[2].work"), and
// SummaryFromJson turns it into a Status naming the file too.
struct FieldError {
  std::string field;
  std::string what;
};

[[noreturn]] inline void Bad(const std::string& field, std::string what) {
  throw FieldError{field, std::move(what)};
}

inline std::string Shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

inline int64_t Int(const json& v, const std::string& field) {
  try {
    return nn::JsonInt(v);
  } catch (const json::exception&) {
    Bad(field, "a 64-bit integer is needed, not " + Shown(v));
  }
}

inline uint64_t Unsigned(const json& v, const std::string& field) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return uint64_t(v.get<int64_t>());
  Bad(field, "an integer >= 0 is needed, not " + Shown(v));
}

inline double Num(const json& v, const std::string& field) {
  if (!v.is_number()) Bad(field, "a number is needed, not " + Shown(v));
  return v.get<double>();
}

inline std::optional<double> NumOrNull(const json& v, const std::string& field) {
  if (v.is_null()) return std::nullopt;
  return Num(v, field);
}

inline std::string Str(const json& v, const std::string& field) {
  if (!v.is_string()) Bad(field, "a string is needed, not " + Shown(v));
  return v.get<std::string>();
}

template <typename F>
inline auto ListOf(const json& v, const std::string& field, F each) {
  if (!v.is_array()) Bad(field, "an array is needed, not " + Shown(v));
  std::vector<decltype(each(v, field))> out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back(each(v[i], fmt::format("{}[{}]", field, i)));
  return out;
}

template <typename F>
inline auto MapOf(const json& v, const std::string& field, F each) {
  if (!v.is_object()) Bad(field, "an object is needed, not " + Shown(v));
  std::map<std::string, decltype(each(v, field))> out;
  for (const auto& [k, e] : v.items()) out.emplace(k, each(e, field + "." + k));
  return out;
}

std::vector<double> Nums(const json& v, const std::string& field) { return ListOf(v, field, Num); }
inline std::map<std::string, int64_t> IntMap(const json& v, const std::string& field) {
  return MapOf(v, field, Int);
}
inline std::map<std::string, double> NumMap(const json& v, const std::string& field) {
  return MapOf(v, field, Num);
}

// One object's fields, each read by a function (value, its path) -> T.
class Fields {
 public:
  Fields(const json& v, std::string path) : v_(v), path_(std::move(path)) {
    if (!v_.is_object()) Bad(path_, "an object is needed, not " + Shown(v_));
  }

  // A field every such object has.
  template <typename F>
  auto Need(const char* key, F read) const {
    auto it = v_.find(key);
    if (it == v_.end()) Bad(Path(key), "is missing");
    return read(*it, Path(key));
  }

  // A field it may leave out.
  template <typename F>
  auto Maybe(const char* key, F read) const
      -> std::optional<decltype(read(std::declval<const json&>(), std::string()))> {
    auto it = v_.find(key);
    if (it == v_.end()) return std::nullopt;
    return read(*it, Path(key));
  }

  // A figure it may leave out or state as null.
  Nullable<double> MaybeNull(const char* key) const { return Maybe(key, NumOrNull); }

  std::string Path(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

 private:
  const json& v_;
  std::string path_;
};

}  // namespace acan::runtime::json_fields
