// Many producers and consumers on one NATS space, through one connection and through several:
// every tuple is taken exactly once, none lost, none duplicated (label: concurrency).
#include <gtest/gtest.h>

#include "acan/space.h"
#include "space/testing/stress_test_util.h"
#include "space/testing/test_server.h"

namespace acan::nats {
namespace {

using namespace std::chrono_literals;

void EveryTupleTakenExactlyOnce(bool connection_per_thread) {
  // A small limit: back-pressure across clients is exercised too.
  const std::string uri = testing::NewSpaceUri("storage=memory&max_total_bytes=8192");
  auto shared = OpenSpace(uri);
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  Space* one = shared->get();
  acan::testing::CheckEveryTupleTakenExactlyOnce(
      *one,
      [&]() -> std::shared_ptr<Space> {
        if (!connection_per_thread) return std::shared_ptr<Space>(one, [](Space*) {});
        auto s = OpenSpace(uri);
        EXPECT_TRUE(s.ok()) << s.status().ToString();
        return std::shared_ptr<Space>(std::move(s).value());
      },
      500, 50ms);
}

TEST(NatsSpaceStressTest, EveryTupleTakenExactlyOnceOnOneConnection) {
  EveryTupleTakenExactlyOnce(false);
}

TEST(NatsSpaceStressTest, EveryTupleTakenExactlyOnceAcrossConnections) {
  EveryTupleTakenExactlyOnce(true);
}

TEST(NatsSpaceStressTest, BlockingGettersAndCloseUnderLoad) {
  auto opened = OpenSpace(testing::NewSpaceUri());
  ASSERT_TRUE(opened.ok());
  acan::testing::CheckBlockingGettersAndCloseUnderLoad(**opened, 2000);
}

}  // namespace
}  // namespace acan::nats
