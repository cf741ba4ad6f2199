// Many producers and consumers on one space: every tuple is taken exactly once, none is lost,
// none duplicated. Run under ThreadSanitizer in CI (label: concurrency).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "acan/space.h"

namespace acan {
namespace {

using namespace std::chrono_literals;

TEST(MemSpaceStressTest, EveryTupleTakenExactlyOnce) {
  auto opened = OpenSpace("mem:?max_total_bytes=4096");  // small: back-pressure is exercised
  ASSERT_TRUE(opened.ok());
  Space& space = **opened;
  constexpr int kProducers = 4, kConsumers = 4, kPerProducer = 5000;
  constexpr int kTotal = kProducers * kPerProducer;
  std::vector<std::atomic<int>> seen(kTotal);
  std::atomic<int> taken{0};

  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        int id = p * kPerProducer + i;
        // Two task types, so consumers with different patterns compete.
        std::string key = std::string(id % 2 ? "job.fwd." : "job.bwd.") + std::to_string(id);
        ASSERT_TRUE(space.Put(key, Value::FromVector(std::vector<int>{id})).ok());
      }
    });
  }
  const char* patterns[] = {"job.fwd.*", "job.bwd.*", "job.>", "*.*.*"};
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      while (taken.load() < kTotal) {
        auto pouch = space.Take(patterns[c], 1 + c * 3, Deadline::After(20ms));
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
  EXPECT_EQ(space.Stats().tuples, 0u);
  EXPECT_EQ(space.Stats().bytes, 0u);
}

TEST(MemSpaceStressTest, BlockingGettersAndCloseUnderLoad) {
  auto opened = OpenSpace("mem:");
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
          EXPECT_TRUE(t.status().IsCancelled());
          ++cancelled;
          return;
        }
      }
    });
  }
  for (int i = 0; i < 20000; ++i)
    ASSERT_TRUE(space.Put("x." + std::to_string(i % 7), Value()).ok());
  while (space.Stats().tuples > 0) std::this_thread::sleep_for(1ms);
  space.Close();
  for (auto& t : getters) t.join();
  EXPECT_EQ(got.load(), 20000);
  EXPECT_EQ(cancelled.load(), 6);
}

}  // namespace
}  // namespace acan
