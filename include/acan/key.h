// Keys and patterns of the tuple space: NATS-subject syntax (DESIGN.md section 2).
//
// A key is 1..32 tokens joined by '.', each token [A-Za-z0-9_-]+, at most 255 bytes in all.
// A pattern is a key whose tokens may also be '*' (exactly one token) or, as the last token
// only, '>' (one or more tokens). Parse() validates and returns InvalidArgument naming the
// offending byte position; a parsed Key or Pattern is always valid. Immutable values: safe to
// share between threads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "acan/export.h"
#include "acan/status.h"

namespace acan {

inline constexpr size_t kMaxKeyBytes = 255;
inline constexpr size_t kMaxKeyTokens = 32;

namespace internal {
// The text of a subject and where its tokens start; shared by Key and Pattern.
class ACAN_EXPORT Subject {
 public:
  const std::string& str() const { return text_; }
  size_t token_count() const { return count_; }
  std::string_view token(size_t i) const {
    size_t begin = starts_[i];
    size_t end = i + 1 < count_ ? starts_[i + 1] - 1 : text_.size();
    return std::string_view(text_).substr(begin, end - begin);
  }
  friend bool operator==(const Subject& a, const Subject& b) { return a.text_ == b.text_; }

 protected:
  // Splits and validates `text`; `what` is "key" or "pattern" for messages.
  static Status Split(std::string_view text, bool wildcards, Subject* out);

 private:
  std::string text_;
  std::array<uint8_t, kMaxKeyTokens> starts_{};
  uint8_t count_ = 0;
};
}  // namespace internal

class ACAN_EXPORT Key : public internal::Subject {
 public:
  static Result<Key> Parse(std::string_view text);
};

class ACAN_EXPORT Pattern : public internal::Subject {
 public:
  static Result<Pattern> Parse(std::string_view text);
  // The pattern that matches exactly `key`.
  static Pattern Exactly(const Key& key);

  bool Matches(const Key& key) const;
  // True when some key matches both patterns.
  bool Overlaps(const Pattern& other) const;
  // True when every key that `other` matches this pattern matches too.
  bool Covers(const Pattern& other) const;
  // True when no token is a wildcard.
  bool literal() const { return literal_; }

 private:
  bool literal_ = true;
};

}  // namespace acan
