#include "space/testing/fault_space.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

namespace acan {
namespace {

using namespace std::chrono_literals;

std::string KeyOf(int i) { return "job.t.k" + std::to_string(i); }

// A FaultSpace over mem:, and the space beneath it, to look at what landed.
struct Faulty {
  explicit Faulty(const FaultOptions& f) {
    auto opened = OpenSpace("mem:");
    EXPECT_TRUE(opened.ok());
    inner = opened->get();
    faults = std::make_unique<FaultSpace>(std::move(*opened), f, counts);
  }
  std::shared_ptr<FaultCounts> counts = std::make_shared<FaultCounts>();
  Space* inner = nullptr;
  std::unique_ptr<FaultSpace> faults;
};

// What a FaultSpace did to keys 0..n-1 (each put once), from what is in the space afterwards.
std::vector<int64_t> Landed(int n, const FaultOptions& options, bool threaded) {
  Faulty f(options);
  auto put = [&](int begin, int step) {
    for (int i = begin; i < n; i += step) EXPECT_TRUE(f.faults->Put(KeyOf(i), Value()).ok());
  };
  if (threaded) {
    std::thread a(put, 0, 2), b(put, 1, 2);  // another interleaving of the same puts
    a.join();
    b.join();
  } else {
    put(0, 1);
  }
  std::this_thread::sleep_for(options.delay_by + 20ms);  // the delayed ones land
  std::vector<int64_t> copies;
  for (int i = 0; i < n; ++i) {
    copies.push_back(static_cast<int64_t>(f.inner->ReadAll(KeyOf(i)).value().size()));
  }
  return copies;
}

TEST(FaultSpaceTest, TheSameSeedHitsTheSameTuplesWhateverTheThreadOrder) {
  FaultOptions f;
  f.drop = 0.2;
  f.duplicate = 0.2;
  f.seed = 9;
  const std::vector<int64_t> one = Landed(400, f, false);
  EXPECT_EQ(Landed(400, f, true), one);
  int64_t dropped = std::count(one.begin(), one.end(), 0);
  int64_t doubled = std::count(one.begin(), one.end(), 2);
  EXPECT_GT(dropped, 40);  // 80 expected
  EXPECT_LT(dropped, 120);
  EXPECT_GT(doubled, 40);
  EXPECT_LT(doubled, 120);
  f.seed = 10;
  EXPECT_NE(Landed(400, f, false), one);
}

TEST(FaultSpaceTest, ADecisionDependsOnSeedKeyAndAttemptOnly) {
  FaultOptions f;
  f.drop = f.duplicate = f.delay = f.reorder = 0.2;
  std::set<Fault> seen;
  for (int64_t attempt = 0; attempt < 200; ++attempt) {
    Fault d = f.Decide("job.p.w0.v3", attempt);
    EXPECT_EQ(d, f.Decide("job.p.w0.v3", attempt));
    seen.insert(d);
  }
  EXPECT_EQ(seen.size(), 5u);  // every kind, the retries of one key drawn afresh
}

TEST(FaultSpaceTest, OnlyMatchingKeysAreHit) {
  FaultOptions f;
  f.patterns = {"job.u.>"};
  f.drop = 1;
  Faulty space(f);
  ASSERT_TRUE(space.faults->Put("job.u.w0.s1", Value()).ok());
  ASSERT_TRUE(space.faults->Put("job.t.x", Value()).ok());
  EXPECT_FALSE(space.inner->Read("job.u.w0.s1").value().has_value());
  EXPECT_TRUE(space.inner->Read("job.t.x").value().has_value());
  EXPECT_EQ(space.counts->dropped.load(), 1);
}

TEST(FaultSpaceTest, AReorderedPutLandsAfterTheNextOne) {
  FaultOptions f;
  f.patterns = {"job.a"};
  f.reorder = 1;
  f.delay_by = 10s;  // only the next put releases it
  Faulty space(f);
  ASSERT_TRUE(space.faults->Put("job.a", Value::FromString("first")).ok());
  EXPECT_FALSE(space.inner->Read("job.a").value().has_value());  // held back
  ASSERT_TRUE(space.faults->Put("job.a", Value::FromString("second")).ok());
  auto taken = space.inner->Take("job.a", 2, Deadline::Now());  // oldest first
  ASSERT_TRUE(taken.ok());
  ASSERT_EQ(taken->size(), 2u);
  EXPECT_EQ((*taken)[0].value.AsString(), "second");
  EXPECT_EQ((*taken)[1].value.AsString(), "first");
  EXPECT_EQ(space.counts->reordered.load(), 1);
}

TEST(FaultSpaceTest, AHeldPutLandsByItselfWhenNothingOvertakesIt) {
  FaultOptions f;
  f.reorder = 1;
  f.delay_by = 5ms;
  Faulty space(f);
  ASSERT_TRUE(space.faults->Put("job.a", Value()).ok());
  EXPECT_TRUE(space.inner->Get(Pattern::Parse("job.a").value(), Deadline::After(10s)).ok());
}

TEST(FaultSpaceTest, ADelayedPutLandsLater) {
  FaultOptions f;
  f.delay = 1;
  f.delay_by = 5ms;
  Faulty space(f);
  ASSERT_TRUE(space.faults->Put("job.a", Value()).ok());
  EXPECT_TRUE(space.inner->Get(Pattern::Parse("job.a").value(), Deadline::After(10s)).ok());
  EXPECT_EQ(space.counts->delayed.load(), 1);
}

}  // namespace
}  // namespace acan
