#include "acan/key.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace acan {
namespace {

TEST(KeyTest, ParsesTokens) {
  auto k = Key::Parse("task.fwd.s12.l0-r_1");
  ASSERT_TRUE(k.ok());
  ASSERT_EQ(k->token_count(), 4u);
  EXPECT_EQ(k->token(0), "task");
  EXPECT_EQ(k->token(3), "l0-r_1");
  EXPECT_EQ(k->str(), "task.fwd.s12.l0-r_1");
}

TEST(KeyTest, RejectsBadKeysWithPosition) {
  struct Bad {
    const char* text;
    const char* expect;
  };
  const Bad cases[] = {
      {"", "byte 0"},          {".a", "byte 0"},    {"a.", "byte 2"},
      {"a..b", "byte 2"},      {"a.b c", "byte 3"}, {"a.*", "wildcard '*'"},
      {"a.>", "wildcard '>'"}, {"a.é", "byte 2"},   {"a/b", "byte 1"},
  };
  for (const Bad& c : cases) {
    auto k = Key::Parse(c.text);
    ASSERT_FALSE(k.ok()) << c.text;
    EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(k.status().message().find(c.expect), std::string::npos) << k.status().message();
  }
}

TEST(KeyTest, Limits) {
  std::string max_tokens;
  for (int i = 0; i < 32; ++i) max_tokens += (i ? ".t" : "t");
  EXPECT_TRUE(Key::Parse(max_tokens).ok());
  EXPECT_NE(Key::Parse(max_tokens + ".t").status().message().find("more than 32 tokens"),
            std::string::npos);
  EXPECT_TRUE(Key::Parse(std::string(255, 'a')).ok());
  EXPECT_NE(Key::Parse(std::string(256, 'a')).status().message().find("longer than 255"),
            std::string::npos);
}

TEST(PatternTest, WildcardRules) {
  EXPECT_TRUE(Pattern::Parse("a.*.c").ok());
  EXPECT_TRUE(Pattern::Parse("a.>").ok());
  EXPECT_TRUE(Pattern::Parse(">").ok());
  EXPECT_FALSE(Pattern::Parse("a.b").value().literal() == false);
  EXPECT_FALSE(Pattern::Parse("a.*").value().literal());
  auto mid = Pattern::Parse("a.>.c");
  ASSERT_FALSE(mid.ok());
  EXPECT_NE(mid.status().message().find("byte 2: '>' must be the last token"), std::string::npos)
      << mid.status().message();
  EXPECT_FALSE(Pattern::Parse("a.b*").ok());
  EXPECT_FALSE(Pattern::Parse("a.**").ok());
}

TEST(PatternTest, ExactlyMatchesOnlyItsKey) {
  Key k = Key::Parse("a.b").value();
  Pattern p = Pattern::Exactly(k);
  EXPECT_TRUE(p.literal());
  EXPECT_TRUE(p.Matches(k));
  EXPECT_FALSE(p.Matches(Key::Parse("a.b.c").value()));
}

// Overlaps and Covers against brute force: every key of 1 to 5 tokens over {a, b, c} (c in no
// pattern), for every pattern of 1 to 3 tokens over {a, b, *, >}.
TEST(PatternTest, OverlapsAndCoversAgreeWithEveryKey) {
  std::vector<std::string> patterns, keys;
  const std::vector<std::string> ptok = {"a", "b", "*", ">"}, ktok = {"a", "b", "c"};
  std::function<void(std::string, int)> grow_p = [&](std::string p, int n) {
    if (!p.empty()) patterns.push_back(p);
    if (n == 3 || p.ends_with(">")) return;
    for (const auto& t : ptok) grow_p(p.empty() ? t : p + "." + t, n + 1);
  };
  std::function<void(std::string, int)> grow_k = [&](std::string k, int n) {
    if (!k.empty()) keys.push_back(k);
    if (n == 5) return;
    for (const auto& t : ktok) grow_k(k.empty() ? t : k + "." + t, n + 1);
  };
  grow_p("", 0);
  grow_k("", 0);
  std::vector<Key> parsed_keys;
  for (const auto& k : keys) parsed_keys.push_back(Key::Parse(k).value());
  int overlapping = 0, covering = 0;
  for (const auto& x : patterns) {
    const Pattern a = Pattern::Parse(x).value();
    for (const auto& y : patterns) {
      const Pattern b = Pattern::Parse(y).value();
      bool some = false, all = true;
      for (const Key& k : parsed_keys) {
        some = some || (a.Matches(k) && b.Matches(k));
        all = all && (!b.Matches(k) || a.Matches(k));
      }
      EXPECT_EQ(a.Overlaps(b), some) << x << " / " << y;
      EXPECT_EQ(a.Covers(b), all) << x << " covers " << y;
      overlapping += some;
      covering += all;
    }
  }
  EXPECT_GT(overlapping, 100);
  EXPECT_GT(covering, 50);
}

}  // namespace
}  // namespace acan
