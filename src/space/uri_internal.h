// Parsing of space URIs: "scheme:", "scheme://authority/path?k=v&k=v". Parameters a backend
// does not use are errors, so a typo never passes silently.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "acan/space.h"

namespace acan {

struct SpaceUri {
  std::string text;
  std::string scheme;
  std::string authority;  // host:port, possibly user:pass@host:port
  std::string path;
  std::map<std::string, std::string> params;

  static Result<SpaceUri> Parse(std::string_view uri);

  // The value of `key`, marking it used; nullptr when absent.
  const std::string* Param(const std::string& key);
  Result<uint64_t> UintParam(const std::string& key, uint64_t fallback);
  // Reads max_value_bytes, max_total_bytes and spin (SpaceOptions).
  Status ApplyOptions(SpaceOptions* options);
  // InvalidArgument naming the first parameter no Param() call asked for.
  Status RejectUnusedParams() const;

 private:
  std::set<std::string> used_;
};

}  // namespace acan
