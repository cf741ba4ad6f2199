#include "runtime/core/dispatch.h"

#include <gtest/gtest.h>

namespace acan::runtime {
namespace {

TEST(DispatcherTest, APouchHoldsFreshTasksBackUntilDoneReportsMakeRoom) {
  Dispatcher d;
  EXPECT_TRUE(d.Offer({0, 0}, 2));
  EXPECT_TRUE(d.Offer({0, 1}, 2));
  EXPECT_FALSE(d.Offer({0, 2}, 2));
  EXPECT_FALSE(d.Offer({1, 0}, 2));
  EXPECT_EQ(d.in_flight(), 2);
  EXPECT_EQ(d.held(), 2u);
  EXPECT_TRUE(d.TakeHeld(2).empty());  // still full
  d.OnDone();
  EXPECT_EQ(d.TakeHeld(2), (std::vector<TaskRef>{{0, 2}}));  // oldest first, one slot
  d.OnDone();
  d.OnDone();
  EXPECT_EQ(d.TakeHeld(4), (std::vector<TaskRef>{{1, 0}}));
  EXPECT_EQ(d.in_flight(), 1);
  EXPECT_EQ(d.held(), 0u);
  d.AddInFlight();  // a recovered task counts against the pouch too
  EXPECT_FALSE(d.Offer({2, 0}, 2));
}

TEST(DispatcherTest, TasksReadyTogetherGoBiggestFirstAndEqualOnesInOrder) {
  std::vector<TaskRef> ready = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}};
  const std::vector<int64_t> work = {10, 1000, 10, 50, 1000};
  Dispatcher::BiggestFirst(&ready, [&](const TaskRef& r) { return work[r.second]; });
  EXPECT_EQ(ready, (std::vector<TaskRef>{{0, 1}, {0, 4}, {0, 3}, {0, 0}, {0, 2}}));
}

}  // namespace
}  // namespace acan::runtime
