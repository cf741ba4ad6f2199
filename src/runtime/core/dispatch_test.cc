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

// Tiles cut in bands: each band has its pouch, so a full pouch of the largest band's tasks (only
// the largest budgets run them) holds back none of the other bands'.
TEST(DispatcherTest, EachTileBandHasItsOwnPouch) {
  Dispatcher d;
  EXPECT_TRUE(d.Offer({0, 0}, 2, 0));
  EXPECT_TRUE(d.Offer({0, 1}, 2, 0));
  EXPECT_FALSE(d.Offer({0, 2}, 2, 0));  // band 0 full
  EXPECT_TRUE(d.Offer({0, 3}, 2, 1));   // band 1 not
  EXPECT_TRUE(d.Offer({0, 4}, 2, 1));
  EXPECT_FALSE(d.Offer({0, 5}, 2, 1));
  EXPECT_EQ(d.in_flight(), 4);
  EXPECT_EQ(d.held(), 2u);
  d.OnDone(1);
  EXPECT_EQ(d.TakeHeld(2), (std::vector<TaskRef>{{0, 5}}));  // band 1's room, band 1's task
  EXPECT_TRUE(d.TakeHeld(2).empty());
  d.OnDone(0);
  d.OnDone(0);
  EXPECT_EQ(d.TakeHeld(2), (std::vector<TaskRef>{{0, 2}}));
  EXPECT_EQ(d.held(), 0u);
  EXPECT_EQ(d.in_flight(), 3);
  d.AddInFlight(0);
  EXPECT_FALSE(d.Offer({1, 0}, 2, 0));
  EXPECT_FALSE(d.Offer({1, 1}, 2, 1));  // band 1 full too
  d.OnDone(1);
  EXPECT_TRUE(d.Offer({1, 2}, 2, 1));
}

TEST(DispatcherTest, TasksReadyTogetherGoBiggestFirstAndEqualOnesInOrder) {
  std::vector<TaskRef> ready = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}};
  const std::vector<int64_t> work = {10, 1000, 10, 50, 1000};
  Dispatcher::BiggestFirst(&ready, [&](const TaskRef& r) { return work[r.second]; });
  EXPECT_EQ(ready, (std::vector<TaskRef>{{0, 1}, {0, 4}, {0, 3}, {0, 0}, {0, 2}}));
}

}  // namespace
}  // namespace acan::runtime
