// Many producers and consumers on one space: every tuple is taken exactly once, none is lost,
// none duplicated. Run under ThreadSanitizer in CI (label: concurrency).
#include <gtest/gtest.h>

#include "acan/space.h"
#include "space/testing/stress_test_util.h"

namespace acan {
namespace {

using namespace std::chrono_literals;

TEST(MemSpaceStressTest, EveryTupleTakenExactlyOnce) {
  auto opened = OpenSpace("mem:?max_total_bytes=4096");  // small: back-pressure is exercised
  ASSERT_TRUE(opened.ok());
  Space* space = opened->get();
  testing::CheckEveryTupleTakenExactlyOnce(
      *space, [space] { return std::shared_ptr<Space>(space, [](Space*) {}); }, 5000, 20ms);
}

TEST(MemSpaceStressTest, BlockingGettersAndCloseUnderLoad) {
  auto opened = OpenSpace("mem:");
  ASSERT_TRUE(opened.ok());
  testing::CheckBlockingGettersAndCloseUnderLoad(**opened, 20000);
}

}  // namespace
}  // namespace acan
