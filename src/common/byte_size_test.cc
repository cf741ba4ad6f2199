#include "common/byte_size.h"

#include <gtest/gtest.h>

namespace acan {
namespace {

TEST(ByteSizeTest, ParsesWhatPeopleWrite) {
  EXPECT_EQ(*ParseByteSize("16777216"), 16777216);
  EXPECT_EQ(*ParseByteSize("24MiB"), 24 << 20);
  EXPECT_EQ(*ParseByteSize("24M"), 24 << 20);
  EXPECT_EQ(*ParseByteSize("24 MiB"), 24 << 20);
  EXPECT_EQ(*ParseByteSize("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(*ParseByteSize("512K"), 512 << 10);
  EXPECT_EQ(*ParseByteSize("100B"), 100);
  EXPECT_EQ(*ParseByteSize("2MB"), 2000000);
  EXPECT_EQ(*ParseByteSize("0"), 0);
}

TEST(ByteSizeTest, RefusesWhatIsNotASize) {
  for (const char* bad :
       {"", "MiB", "-1MiB", "12 parsecs", "1.5B", "1e3", "99999999TiB", "1..2M"}) {
    Result<int64_t> r = ParseByteSize(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) EXPECT_NE(r.status().message().find("size '"), std::string::npos) << bad;
  }
}

TEST(ByteSizeTest, FormatsExactlyAndReadsBack) {
  for (int64_t n : {int64_t{0}, int64_t{100}, int64_t{1536} << 10, int64_t{24} << 20,
                    int64_t{3} << 29, int64_t{1} << 40, int64_t{1234567}}) {
    EXPECT_EQ(*ParseByteSize(FormatByteSize(n)), n) << FormatByteSize(n);
  }
  EXPECT_EQ(FormatByteSize(int64_t{24} << 20), "24MiB");
  EXPECT_EQ(FormatByteSize(1536 << 10), "1536KiB");
  EXPECT_EQ(HumanBytes(24.0 * (1 << 20)), "24.0 MiB");
}

}  // namespace
}  // namespace acan
