#include "space/fault_space.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

namespace acan {
namespace {

using namespace std::chrono_literals;

std::string KeyOf(int i) { return "job.t.k" + std::to_string(i); }

// What a FaultSpace did to keys 0..n-1 (each put once), from what is in the space afterwards.
std::vector<int64_t> Landed(int n, const FaultOptions& options, bool threaded) {
  auto opened = OpenSpace("mem:");
  EXPECT_TRUE(opened.ok());
  Space* inner = opened->get();
  FaultSpace faults(std::move(*opened), options);
  auto put = [&](int begin, int step) {
    for (int i = begin; i < n; i += step) EXPECT_TRUE(faults.Put(KeyOf(i), Value()).ok());
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
    copies.push_back(static_cast<int64_t>(inner->ReadAll(KeyOf(i)).value().size()));
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
  auto opened = OpenSpace("mem:");
  ASSERT_TRUE(opened.ok());
  Space* inner = opened->get();
  FaultOptions f;
  f.patterns = {"job.u.>"};
  f.drop = 1;
  auto counts = std::make_shared<FaultCounts>();
  FaultSpace faults(std::move(*opened), f, counts);
  ASSERT_TRUE(faults.Put("job.u.w0.s1", Value()).ok());
  ASSERT_TRUE(faults.Put("job.t.x", Value()).ok());
  EXPECT_FALSE(inner->Read("job.u.w0.s1").value().has_value());
  EXPECT_TRUE(inner->Read("job.t.x").value().has_value());
  EXPECT_EQ(counts->dropped.load(), 1);
}

TEST(FaultSpaceTest, AReorderedPutLandsAfterTheNextOne) {
  auto opened = OpenSpace("mem:");
  ASSERT_TRUE(opened.ok());
  Space* inner = opened->get();
  FaultOptions f;
  f.patterns = {"job.a"};
  f.reorder = 1;
  f.delay_by = 10s;  // only the next put releases it
  auto counts = std::make_shared<FaultCounts>();
  FaultSpace faults(std::move(*opened), f, counts);
  ASSERT_TRUE(faults.Put("job.a", Value::FromString("first")).ok());
  EXPECT_FALSE(inner->Read("job.a").value().has_value());  // held back
  ASSERT_TRUE(faults.Put("job.a", Value::FromString("second")).ok());
  auto taken = inner->Take("job.a", 2, Deadline::Now());  // oldest first
  ASSERT_TRUE(taken.ok());
  ASSERT_EQ(taken->size(), 2u);
  EXPECT_EQ((*taken)[0].value.AsString(), "second");
  EXPECT_EQ((*taken)[1].value.AsString(), "first");
  EXPECT_EQ(counts->reordered.load(), 1);
}

TEST(FaultSpaceTest, AHeldPutLandsByItselfWhenNothingOvertakesIt) {
  auto opened = OpenSpace("mem:");
  ASSERT_TRUE(opened.ok());
  Space* inner = opened->get();
  FaultOptions f;
  f.reorder = 1;
  f.delay_by = 5ms;
  FaultSpace faults(std::move(*opened), f);
  ASSERT_TRUE(faults.Put("job.a", Value()).ok());
  EXPECT_TRUE(inner->Get(Pattern::Parse("job.a").value(), Deadline::After(10s)).ok());
}

TEST(FaultSpaceTest, ADelayedPutLandsLater) {
  auto opened = OpenSpace("mem:");
  ASSERT_TRUE(opened.ok());
  Space* inner = opened->get();
  FaultOptions f;
  f.delay = 1;
  f.delay_by = 5ms;
  auto counts = std::make_shared<FaultCounts>();
  FaultSpace faults(std::move(*opened), f, counts);
  ASSERT_TRUE(faults.Put("job.a", Value()).ok());
  EXPECT_TRUE(inner->Get(Pattern::Parse("job.a").value(), Deadline::After(10s)).ok());
  EXPECT_EQ(counts->delayed.load(), 1);
}

}  // namespace
}  // namespace acan
