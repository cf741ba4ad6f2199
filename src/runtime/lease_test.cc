// The lease on its own, one thread, against mem: (leases of tens of milliseconds; no race).
#include "runtime/lease.h"

#include <gtest/gtest.h>

#include <thread>

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

constexpr char kKey[] = "job.m.lease";

struct LeaseTest : ::testing::Test {
  void SetUp() override {
    space = std::move(OpenSpace("mem:").value());
    ASSERT_TRUE(Lease::PutFree(space.get(), kKey).ok());
  }
  std::vector<LeaseMessage> Tokens() {
    std::vector<LeaseMessage> out;
    auto all = space->ReadAll(kKey);
    EXPECT_TRUE(all.ok());
    for (const Tuple& t : all.value_or({})) {
      out.push_back(DecodeLeaseMessage(t.value).value());
    }
    return out;
  }
  std::unique_ptr<Space> space;
  std::atomic<bool> stop{false};
};

TEST_F(LeaseTest, AFreeTokenIsTakenAndRenewed) {
  Lease a(space.get(), kKey, "a", 60ms);
  ASSERT_TRUE(a.Acquire(stop).ok());
  EXPECT_FALSE(a.took_over());
  ASSERT_EQ(Tokens().size(), 1u);
  EXPECT_EQ(Tokens()[0].owner, "a");
  EXPECT_TRUE(a.Keep().ok());  // not due yet: nothing to do
  std::this_thread::sleep_for(25ms);
  const int64_t before = Tokens()[0].expires_ms;
  EXPECT_TRUE(a.Keep().ok());  // a third has passed: renewed
  ASSERT_EQ(Tokens().size(), 1u);
  EXPECT_GT(Tokens()[0].expires_ms, before);
}

TEST_F(LeaseTest, AStandbyWaitsForTheLeaseToLapseAndTheOldHolderFindsOut) {
  Lease a(space.get(), kKey, "a", 60ms);
  Lease b(space.get(), kKey, "b", 60ms);
  ASSERT_TRUE(a.Acquire(stop).ok());
  const auto start = Clock::now();
  ASSERT_TRUE(b.Acquire(stop).ok());  // a never renews: b gets it once it lapses
  EXPECT_GE(Clock::now() - start, 50ms);
  EXPECT_TRUE(b.took_over());
  ASSERT_EQ(Tokens().size(), 1u);
  EXPECT_EQ(Tokens()[0].owner, "b");
  Status renewed = a.Renew();
  EXPECT_TRUE(renewed.IsUnavailable()) << renewed.ToString();
  ASSERT_EQ(Tokens().size(), 1u);  // a put b's token back
  EXPECT_EQ(Tokens()[0].owner, "b");
}

// The holder was killed between taking the token and putting it back: no token at all.
TEST_F(LeaseTest, ALostTokenIsPutBackAfterTwoLeasePeriods) {
  ASSERT_TRUE(space->Take(kKey, 1, Deadline::Now()).ok());
  Lease b(space.get(), kKey, "b", 30ms);
  const auto start = Clock::now();
  ASSERT_TRUE(b.Acquire(stop).ok());
  EXPECT_GE(Clock::now() - start, 60ms);
  ASSERT_EQ(Tokens().size(), 1u);
  EXPECT_EQ(Tokens()[0].owner, "b");
}

// The "killed" holder was only paused and puts its token back after a lost one was replaced:
// the next take keeps only the token that lapses last.
TEST_F(LeaseTest, DuplicateTokensAreMergedIntoTheOneThatLapsesLast) {
  Lease b(space.get(), kKey, "b", 60ms);
  ASSERT_TRUE(b.Acquire(stop).ok());
  ASSERT_TRUE(space->Put(kKey, EncodeLeaseMessage({"a", 1})).ok());  // long lapsed
  ASSERT_EQ(Tokens().size(), 2u);
  ASSERT_TRUE(b.Renew().ok());
  ASSERT_EQ(Tokens().size(), 1u);
  EXPECT_EQ(Tokens()[0].owner, "b");
}

TEST_F(LeaseTest, StopEndsTheWaitOfAStandby) {
  Lease a(space.get(), kKey, "a", std::chrono::hours(1));
  Lease b(space.get(), kKey, "b", std::chrono::hours(1));
  ASSERT_TRUE(a.Acquire(stop).ok());
  stop.store(true);
  EXPECT_TRUE(b.Acquire(stop).IsCancelled());
}

// The same on a clock the test owns: an hour-long lease lapses in no time, and the standby takes
// over within a fifth of a lease (its polling period) after the lapse, never before.
TEST_F(LeaseTest, OnAManualClockAStandbyTakesOverRightAfterTheLapse) {
  ManualEnv env;
  const auto hour = std::chrono::milliseconds(std::chrono::hours(1));
  Lease a(space.get(), kKey, "a", hour, &env);
  Lease b(space.get(), kKey, "b", hour, &env);
  ASSERT_TRUE(a.Acquire(stop).ok());
  const auto start = env.Now();
  ASSERT_TRUE(b.Acquire(stop).ok());
  EXPECT_GE(env.Now() - start, hour);
  EXPECT_LE(env.Now() - start, hour + hour / 5 + 2ms);
  EXPECT_TRUE(b.took_over());
  EXPECT_TRUE(a.Renew().IsUnavailable());
  // b renews a third of a lease on, not before.
  env.Advance(hour / 3 - 1ms);
  const int64_t expires = Tokens()[0].expires_ms;
  ASSERT_TRUE(b.Keep().ok());
  EXPECT_EQ(Tokens()[0].expires_ms, expires);
  env.Advance(2ms);
  ASSERT_TRUE(b.Keep().ok());
  EXPECT_GT(Tokens()[0].expires_ms, expires);
}

}  // namespace
}  // namespace acan::runtime
