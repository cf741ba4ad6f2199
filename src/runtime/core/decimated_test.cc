// Decimated: a series stays within its bound over any number of pushes, spans the whole run
// evenly, and keeps a forced last entry.
#include "runtime/core/decimated.h"

#include <gtest/gtest.h>

namespace acan::runtime {
namespace {

TEST(DecimatedTest, StaysBoundedAndEvenlySpacedOverAnyLength) {
  for (int n : {1, 63, 64, 65, 1000, 100000}) {
    Decimated<int> d(64);
    for (int i = 0; i < n; ++i) d.Push(i, /*keep=*/i == n - 1);
    const auto& v = d.items();
    ASSERT_FALSE(v.empty());
    EXPECT_LE(v.size(), 64u) << n;
    EXPECT_EQ(v.front(), 0) << n;
    EXPECT_EQ(v.back(), n - 1) << n;  // the forced last one
    // Every entry but the forced last is a multiple of the stride apart from the one before.
    for (size_t i = 1; i + 1 < v.size(); ++i) {
      EXPECT_EQ(uint64_t(v[i] - v[i - 1]), d.stride()) << n << " at " << i;
    }
    if (n >= 1000) {
      EXPECT_GE(v.size(), 16u) << n;  // still spans the run with many points
    }
  }
}

}  // namespace
}  // namespace acan::runtime
