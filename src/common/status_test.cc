#include "acan/status.h"

#include <gtest/gtest.h>

namespace acan {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  ACAN_ASSIGN_OR_RETURN(int h, Half(x));
  ACAN_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  ACAN_RETURN_IF_ERROR(Half(x));
  return Status::Ok();
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "OK");
  Status s = Status::Timeout("no match for a.b");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsTimeout());
  EXPECT_EQ(s.ToString(), "Timeout: no match for a.b");
  EXPECT_EQ(s.WithContext("space").message(), "space: no match for a.b");
}

TEST(StatusTest, MacrosPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "odd: 3");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_FALSE(CheckEven(5).ok());
}

TEST(StatusDeathTest, ValueOfAnErrorAbortsWithTheStatus) {
  Result<int> r = Quarter(6);
  EXPECT_DEATH((void)r.value(), "value\\(\\) of an error result: InvalidArgument: odd: 3");
  EXPECT_DEATH((void)*Quarter(2), "InvalidArgument: odd: 1");
}

}  // namespace
}  // namespace acan
