// Keys and patterns as users and the network give them: Key::Parse and Pattern::Parse on any
// bytes, and matching between what parses. Property: a parsed key's text parses again to the
// same key, and a literal pattern matches exactly the key with its text; Overlaps and Covers
// (the fenced keys' checks) agree with matching: a pattern overlaps and covers a literal one
// exactly when it matches its key, overlapping is symmetric, covering implies overlapping, and
// every pattern covers and overlaps itself.
#include "acan/key.h"

#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t cut = text.find('\n');
  const std::string_view first = text.substr(0, cut);
  const std::string_view second = cut == std::string_view::npos ? "" : text.substr(cut + 1);
  auto key = acan::Key::Parse(first);
  auto pattern = acan::Pattern::Parse(second);
  if (key.ok()) {
    auto again = acan::Key::Parse(key->str());
    if (!again.ok() || again->str() != key->str()) std::abort();
    if (!acan::Pattern::Exactly(*key).Matches(*key)) std::abort();
  }
  if (key.ok() && pattern.ok()) {
    const bool m = pattern->Matches(*key);
    if (pattern->literal() && m != (pattern->str() == key->str())) std::abort();
  }
  auto as_pattern = acan::Pattern::Parse(first);
  if (key.ok() != (as_pattern.ok() && as_pattern->literal())) {
    // A key is exactly a pattern without wildcards.
    std::abort();
  }
  if (pattern.ok() && as_pattern.ok()) {
    const acan::Pattern& p = *pattern;
    const acan::Pattern& q = *as_pattern;
    if (!p.Covers(p) || !p.Overlaps(p)) std::abort();
    if (p.Overlaps(q) != q.Overlaps(p)) std::abort();
    if (p.Covers(q) && !p.Overlaps(q)) std::abort();
    if (key.ok()) {
      // q is the key itself here (a key is a literal pattern): p overlaps it, and covers it,
      // exactly when p matches the key.
      const bool m = p.Matches(*key);
      if (p.Overlaps(q) != m || p.Covers(q) != m) std::abort();
    }
  }
  return 0;
}
