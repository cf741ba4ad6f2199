#include "acan/key.h"

#include <fmt/format.h>

namespace acan {
namespace internal {

namespace {
bool IsTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}
}  // namespace

Status Subject::Split(std::string_view text, bool wildcards, Subject* out) {
  const char* what = wildcards ? "pattern" : "key";
  auto bad = [&](size_t pos, std::string_view why) {
    return Status::InvalidArgument(
        fmt::format("invalid {} '{}' at byte {}: {}", what, text, pos, why));
  };
  if (text.empty()) return bad(0, "empty; a key has 1 to 32 dot-separated tokens");
  if (text.size() > kMaxKeyBytes) {
    return bad(kMaxKeyBytes,
               fmt::format("longer than {} bytes ({} bytes)", kMaxKeyBytes, text.size()));
  }
  uint8_t count = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] != '.') continue;
    if (i == start) return bad(i, "empty token (leading, trailing or doubled '.')");
    if (count == kMaxKeyTokens) return bad(start, "more than 32 tokens");
    std::string_view tok = text.substr(start, i - start);
    bool wildcard = tok == "*" || tok == ">";
    if (wildcard && !wildcards) {
      return bad(start, fmt::format("wildcard '{}' is allowed in patterns, not in keys", tok));
    }
    if (tok == ">" && i != text.size()) return bad(start, "'>' must be the last token");
    if (!wildcard) {
      for (size_t j = 0; j < tok.size(); ++j) {
        if (!IsTokenChar(tok[j])) {
          return bad(start + j, fmt::format("character '{}' is not allowed; tokens use "
                                            "[A-Za-z0-9_-]{}",
                                            tok[j], wildcards ? " or are '*' / '>'" : ""));
        }
      }
    }
    out->starts_[count++] = static_cast<uint8_t>(start);
    start = i + 1;
  }
  out->text_.assign(text);
  out->count_ = count;
  return Status::Ok();
}

}  // namespace internal

Result<Key> Key::Parse(std::string_view text) {
  Key key;
  ACAN_RETURN_IF_ERROR(Split(text, /*wildcards=*/false, &key));
  return key;
}

Result<Pattern> Pattern::Parse(std::string_view text) {
  Pattern p;
  ACAN_RETURN_IF_ERROR(Split(text, /*wildcards=*/true, &p));
  for (size_t i = 0; i < p.token_count(); ++i) {
    std::string_view t = p.token(i);
    if (t == "*" || t == ">") p.literal_ = false;
  }
  return p;
}

Pattern Pattern::Exactly(const Key& key) {
  Pattern p;
  static_cast<internal::Subject&>(p) = key;
  return p;
}

bool Pattern::Matches(const Key& key) const {
  size_t n = token_count();
  for (size_t i = 0; i < n; ++i) {
    std::string_view t = token(i);
    if (t == ">") return key.token_count() > i;
    if (i >= key.token_count()) return false;
    if (t != "*" && t != key.token(i)) return false;
  }
  return key.token_count() == n;
}

bool Pattern::Overlaps(const Pattern& other) const {
  const size_t n = token_count(), m = other.token_count();
  for (size_t i = 0; i < n && i < m; ++i) {
    std::string_view a = token(i), b = other.token(i);
    if (a == ">" || b == ">") return true;  // the other has a token here: the rest can agree
    if (a != "*" && b != "*" && a != b) return false;
  }
  return n == m;
}

bool Pattern::Covers(const Pattern& other) const {
  const size_t n = token_count(), m = other.token_count();
  for (size_t i = 0; i < n; ++i) {
    std::string_view a = token(i);
    if (i >= m) return false;
    std::string_view b = other.token(i);
    if (a == ">") return true;  // `other` has a token (or more) from here
    if (b == ">") return false;
    if (a != "*" && (b == "*" || a != b)) return false;
  }
  return n == m;
}

}  // namespace acan
