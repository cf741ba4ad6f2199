// For the space stress tests (every backend): many producers and consumers, each tuple taken
// exactly once; and blocked getters served under load until Close cancels them.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "acan/space.h"

namespace acan::testing {

// `space_for_thread()` gives each producer and consumer thread its space (one shared, or a
// connection each); `shared` is the one that reports the stats at the end.
inline void CheckEveryTupleTakenExactlyOnce(
    Space& shared, const std::function<std::shared_ptr<Space>()>& space_for_thread,
    int per_producer, std::chrono::milliseconds take_wait) {
  constexpr int kProducers = 4, kConsumers = 4;
  const int total = kProducers * per_producer;
  std::vector<std::atomic<int>> seen(total);
  std::atomic<int> taken{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p, space = space_for_thread()] {
      for (int i = 0; i < per_producer; ++i) {
        const int id = p * per_producer + i;
        // Two task types, so consumers with different patterns compete.
        const std::string key = std::string(id % 2 ? "job.fwd." : "job.bwd.") + std::to_string(id);
        ASSERT_TRUE(space->Put(key, Value::FromVector(std::vector<int>{id})).ok());
      }
    });
  }
  const char* patterns[] = {"job.fwd.*", "job.bwd.*", "job.>", "*.*.*"};
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c, space = space_for_thread()] {
      while (taken.load() < total) {
        auto pouch = space->Take(patterns[c], 1 + c * 3, Deadline::After(take_wait));
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
  for (int i = 0; i < total; ++i) ASSERT_EQ(seen[i].load(), 1) << "tuple " << i;
  EXPECT_EQ(shared.Stats().tuples, 0u);
  EXPECT_EQ(shared.Stats().bytes, 0u);
}

// Six getters blocked on "x.>" take `puts` tuples between them; Close then cancels all six.
inline void CheckBlockingGettersAndCloseUnderLoad(Space& space, int puts) {
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
  for (int i = 0; i < puts; ++i) ASSERT_TRUE(space.Put("x." + std::to_string(i % 7), Value()).ok());
  while (space.Stats().tuples > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  space.Close();
  for (auto& t : getters) t.join();
  EXPECT_EQ(got.load(), puts);
  EXPECT_EQ(cancelled.load(), 6);
}

}  // namespace acan::testing
