// StallWatch (stall.h): a report is due once no step completed for max(floor, 8 x the longest
// timeout), again each time as long again passes, and a step puts it off. Judged by the clock
// the test reads itself, never by how long a sleep took.
#include "runtime/view/stall.h"

#include <gtest/gtest.h>

#include <thread>

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

// Seconds from `since` until the watch says a report is due (polled; at most 20 s).
double SecondsUntilDue(StallWatch& watch, Clock::time_point since) {
  while (!watch.Due().has_value()) {
    if (Clock::now() - since > 20s) return -1;
    std::this_thread::sleep_for(5ms);
  }
  return std::chrono::duration<double>(Clock::now() - since).count();
}

TEST(StallWatchTest, ReportsOnceALimitPassesWithoutAStepAndAgainEachLimit) {
  const auto created = Clock::now();
  StallWatch watch(200ms);
  EXPECT_GE(SecondsUntilDue(watch, created), 0.2);
  // Again only once as long again has passed.
  const auto reported = Clock::now();
  EXPECT_GE(SecondsUntilDue(watch, reported), 0.1);
  // A step starts the clock again; a timeout of 100 ms makes the limit 8 x 100 ms.
  const auto stepped = Clock::now();
  watch.OnStep(7, 100ms);
  EXPECT_EQ(watch.next_step(), 7);
  EXPECT_GE(SecondsUntilDue(watch, stepped), 0.8);
}

}  // namespace
}  // namespace acan::runtime
