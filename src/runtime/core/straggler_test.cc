#include "runtime/core/straggler.h"

#include <gtest/gtest.h>

namespace acan::runtime {
namespace {

nn::TaskSpec Task(int64_t rows) {
  nn::TaskSpec t;
  t.key = "mb.s0.m0";
  t.type = nn::TaskType::kBackward;
  t.op = nn::TaskOp::kMicroBatch;
  t.widths = {44, 44, 1};
  t.rows = rows;
  t.batch = rows;
  t.inputs = {"x.s0.m0", "t.s0.m0", "param.l0.w", "param.l0.b", "param.l1.w", "param.l1.b"};
  t.outputs = {"met.s0.m0", "gw.s0.l0.m0", "gb.s0.l0.m0", "gw.s0.l1.m0", "gb.s0.l1.m0"};
  return t;
}

TEST(StragglerWatchTest, EachHandlersTimeIsSmoothedPerClass) {
  StragglerWatch w;
  const nn::TaskSpec small = Task(8), big = Task(4096);
  EXPECT_FALSE(w.ExpectedNs(0, small).has_value());
  w.Observe(0, small, 1000);
  EXPECT_DOUBLE_EQ(*w.ExpectedNs(0, small), 1000);
  w.Observe(0, small, 2000);  // a quarter of the way to the new sample
  EXPECT_DOUBLE_EQ(*w.ExpectedNs(0, small), 1250);
  EXPECT_FALSE(w.ExpectedNs(0, big).has_value());  // another class: more work
  EXPECT_FALSE(w.ExpectedNs(1, small).has_value());
  w.Observe(-1, small, 5);  // no handler named, or no time: nothing learned
  w.Observe(1, small, 0);
  EXPECT_FALSE(w.ExpectedNs(1, small).has_value());
}

TEST(StragglerWatchTest, TheFastestIsAnotherHandlerThanTheClaimant) {
  StragglerWatch w;
  const nn::TaskSpec t = Task(8);
  EXPECT_FALSE(w.Fastest(t, -1).has_value());
  w.Observe(0, t, 1000);
  w.Observe(1, t, 10000);
  w.Observe(2, t, 5000);
  EXPECT_EQ(w.Fastest(t, -1)->first, 0);
  EXPECT_EQ(w.Fastest(t, 0)->first, 2);
  EXPECT_DOUBLE_EQ(w.Fastest(t, 0)->second, 5000);
  StragglerWatch alone;
  alone.Observe(0, t, 1000);
  EXPECT_FALSE(alone.Fastest(t, 0).has_value());  // nobody else to send a copy to
}

TEST(StragglerWatchTest, ACopyGoesOnlyWhereItWouldFinishFarSooner) {
  StragglerWatch w;
  const nn::TaskSpec t = Task(8);
  w.Observe(0, t, 1000);   // fast
  w.Observe(1, t, 10000);  // ten times slower
  w.Observe(2, t, 2500);
  // The slow one has 10 us to go: a copy takes 1 us; but not before the fast one's time passed.
  EXPECT_FALSE(w.WorthACopy(1, t, 500));
  EXPECT_TRUE(w.WorthACopy(1, t, 1000));
  EXPECT_TRUE(w.WorthACopy(1, t, 7900));
  // Nearly done: 2 us left is not more than twice the copy's 1 us.
  EXPECT_FALSE(w.WorthACopy(1, t, 8000));
  // The fast one holding it: the next fastest would take longer than what is left.
  EXPECT_FALSE(w.WorthACopy(0, t, 0));
  EXPECT_FALSE(w.WorthACopy(0, t, 1000));
  // 2.5 us against 1 us: 1.5 us left at most, never worth it.
  EXPECT_FALSE(w.WorthACopy(2, t, 1000));
  // A claimant never seen is taken to need four times the fastest's time.
  EXPECT_TRUE(w.WorthACopy(7, t, 1000));
  EXPECT_FALSE(w.WorthACopy(7, t, 2500));
}

// Past WorthACopyUntilNs no claimant, known or not, is worth a copy; just before it one is.
TEST(StragglerWatchTest, ACopyIsWorthItOnlyUntilTheSlowestCouldStillBeOvertaken) {
  StragglerWatch w;
  const nn::TaskSpec t = Task(8);
  EXPECT_FALSE(w.WorthACopyUntilNs(t).has_value());  // nobody ran the class yet
  w.Observe(0, t, 1000);
  w.Observe(1, t, 1100);  // equal speeds: only a claimant never seen (4 us) is worth a copy
  ASSERT_TRUE(w.WorthACopyUntilNs(t).has_value());
  EXPECT_DOUBLE_EQ(*w.WorthACopyUntilNs(t), 2000);
  w.Observe(2, t, 10000);  // a slow one: 10 us to go, a copy 1 us
  const double until = *w.WorthACopyUntilNs(t);
  EXPECT_DOUBLE_EQ(until, 8000);
  for (int claimant : {0, 1, 2, 7}) {
    for (double elapsed : {until, until + 1, 2 * until}) {
      EXPECT_FALSE(w.WorthACopy(claimant, t, elapsed)) << claimant << " at " << elapsed;
    }
  }
  EXPECT_TRUE(w.WorthACopy(2, t, until - 1));
}

}  // namespace
}  // namespace acan::runtime
