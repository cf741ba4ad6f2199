// Many producers and consumers on one NATS space, through one connection and through several:
// every tuple is taken exactly once, none lost, none duplicated (label: concurrency).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "acan/space.h"
#include "space/nats/test_server.h"

namespace acan::nats {
namespace {

using namespace std::chrono_literals;

void EveryTupleTakenExactlyOnce(bool connection_per_thread) {
  const std::string uri = testing::NewSpaceUri("storage=memory&max_total_bytes=8192");
  auto shared = OpenSpace(uri);
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  constexpr int kProducers = 4, kConsumers = 4, kPerProducer = 500;
  constexpr int kTotal = kProducers * kPerProducer;
  std::vector<std::atomic<int>> seen(kTotal);
  std::atomic<int> taken{0};
  auto space_for_thread = [&]() -> std::shared_ptr<Space> {
    if (!connection_per_thread) return std::shared_ptr<Space>(shared->get(), [](Space*) {});
    auto s = OpenSpace(uri);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::shared_ptr<Space>(std::move(s).value());
  };
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p, space = space_for_thread()] {
      for (int i = 0; i < kPerProducer; ++i) {
        const int id = p * kPerProducer + i;
        const std::string key = std::string(id % 2 ? "job.fwd." : "job.bwd.") + std::to_string(id);
        ASSERT_TRUE(space->Put(key, Value::FromVector(std::vector<int>{id})).ok());
      }
    });
  }
  const char* patterns[] = {"job.fwd.*", "job.bwd.*", "job.>", "*.*.*"};
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c, space = space_for_thread()] {
      while (taken.load() < kTotal) {
        auto pouch = space->Take(patterns[c], 1 + c * 3, Deadline::After(50ms));
        if (!pouch.ok()) {
          ASSERT_TRUE(pouch.status().IsTimeout()) << pouch.status().ToString();
          continue;
        }
        for (const Tuple& t : *pouch) {
          seen[t.value.As<int>()[0]].fetch_add(1);
          taken.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kTotal; ++i) ASSERT_EQ(seen[i].load(), 1) << "tuple " << i;
  EXPECT_EQ((*shared)->Stats().tuples, 0u);
  EXPECT_EQ((*shared)->Stats().bytes, 0u);
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
  Space& space = **opened;
  std::atomic<int> got{0}, cancelled{0};
  std::vector<std::thread> getters;
  for (int c = 0; c < 6; ++c) {
    getters.emplace_back([&] {
      for (;;) {
        auto t = space.Get("x.>", Deadline::Infinite());
        if (t.ok()) {
          ++got;
        } else {
          EXPECT_TRUE(t.status().IsCancelled()) << t.status().ToString();
          ++cancelled;
          return;
        }
      }
    });
  }
  constexpr int kPuts = 2000;
  for (int i = 0; i < kPuts; ++i)
    ASSERT_TRUE(space.Put("x." + std::to_string(i % 7), Value()).ok());
  while (space.Stats().tuples > 0) std::this_thread::sleep_for(5ms);
  space.Close();
  for (auto& t : getters) t.join();
  EXPECT_EQ(got.load(), kPuts);
  EXPECT_EQ(cancelled.load(), 6);
}

}  // namespace
}  // namespace acan::nats
