#include "space/mem/tuple_index.h"

#include <gtest/gtest.h>

#include <random>

namespace acan::mem {
namespace {

// Differential test: the index against a plain list scanned in insertion order.
TEST(TupleIndexTest, AgreesWithLinearScanUnderRandomOperations) {
  std::mt19937 rng(7);
  const std::vector<std::string> tokens = {"a", "b", "c", "d"};
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  auto random_key = [&] {
    std::string k;
    size_t depth = 1 + pick(4);
    for (size_t i = 0; i < depth; ++i) k += (i ? "." : "") + tokens[pick(tokens.size())];
    return k;
  };
  auto random_pattern = [&] {
    std::string p;
    size_t depth = 1 + pick(4);
    for (size_t i = 0; i < depth; ++i) {
      size_t r = pick(10);
      std::string t = r < 2 ? "*" : (r == 2 && i + 1 == depth) ? ">" : tokens[pick(tokens.size())];
      p += (i ? "." : "") + t;
    }
    return p;
  };

  TupleIndex index;
  std::vector<std::pair<Key, int>> model;  // insertion order
  int next = 0;
  for (int step = 0; step < 20000; ++step) {
    size_t op = pick(10);
    if (op < 5) {
      Key k = Key::Parse(random_key()).value();
      index.Insert(Tuple{k, Value::FromString(std::to_string(next))});
      model.emplace_back(k, next++);
      continue;
    }
    Pattern p = Pattern::Parse(random_pattern()).value();
    std::vector<int> expected;
    for (auto& [k, v] : model) {
      if (p.Matches(k)) expected.push_back(v);
    }
    if (op < 7) {
      const Tuple* t = index.FindOldest(p);
      ASSERT_EQ(t != nullptr, !expected.empty()) << p.str();
      if (t) {
        EXPECT_EQ(t->value.AsString(), std::to_string(expected[0])) << p.str();
      }
    } else if (op < 9) {
      size_t n = 1 + pick(3);
      std::vector<Tuple> taken;
      index.TakeOldest(p, n, &taken);
      ASSERT_EQ(taken.size(), std::min(n, expected.size())) << p.str();
      for (size_t i = 0; i < taken.size(); ++i) {
        EXPECT_EQ(taken[i].value.AsString(), std::to_string(expected[i])) << p.str();
        int v = expected[i];
        model.erase(std::find_if(model.begin(), model.end(),
                                 [v](const auto& kv) { return kv.second == v; }));
      }
    } else {
      auto all = index.ReadAll(p, SIZE_MAX);
      ASSERT_EQ(all.size(), expected.size()) << p.str();
      for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(all[i].value.AsString(), std::to_string(expected[i]));
      }
    }
    ASSERT_EQ(index.size(), model.size());
  }
}

TEST(TupleIndexTest, EmptyNodesAreSwept) {
  TupleIndex index;
  Pattern any = Pattern::Parse("task.>").value();
  for (int i = 0; i < 100000; ++i) {
    index.Insert(Tuple{Key::Parse("task.fwd." + std::to_string(i)).value(), Value()});
    ASSERT_TRUE(index.TakeOne(any).has_value());
  }
  EXPECT_EQ(index.size(), 0u);
  EXPECT_LT(index.node_count(), 5000u);
}

}  // namespace
}  // namespace acan::mem
