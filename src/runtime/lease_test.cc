// The lease on its own, against mem: (leases of tens of milliseconds) and, for the swap the
// server checks, against a real nats-server.
#include "runtime/lease.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "space/nats/local_server.h"
#include "space/space_wrapper.h"

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

const Key kKey = Key::Parse("job.m.lease").value();

struct LeaseTest : ::testing::Test {
  void SetUp() override {
    space = std::move(OpenSpace("mem:").value());
    ASSERT_TRUE(Lease::PutFree(space.get(), kKey).ok());
  }
  LeaseMessage Now() {
    auto cell = space->ReadCell(kKey);
    EXPECT_TRUE(cell.ok() && cell->revision != 0);
    return DecodeLeaseMessage(cell->value).value();
  }
  uint64_t Revision() { return space->ReadCell(kKey).value().revision; }
  std::unique_ptr<Space> space;
  std::atomic<bool> stop{false};
};

TEST_F(LeaseTest, AFreeLeaseIsTakenAndRenewed) {
  Lease a(space.get(), kKey, "a", 60ms);
  ASSERT_TRUE(a.Acquire(stop).ok());
  EXPECT_FALSE(a.took_over());
  EXPECT_EQ(Now().owner, "a");
  EXPECT_EQ(a.revision(), Revision());
  EXPECT_TRUE(a.Keep().ok());  // not due yet: nothing to do
  std::this_thread::sleep_for(25ms);
  const int64_t before = Now().expires_ms;
  const uint64_t revision = a.revision();
  EXPECT_TRUE(a.Keep().ok());  // a third has passed: renewed
  EXPECT_GT(Now().expires_ms, before);
  EXPECT_GT(a.revision(), revision);
}

TEST_F(LeaseTest, AStandbyWaitsForTheLeaseToLapseAndTheOldHolderFindsOut) {
  Lease a(space.get(), kKey, "a", 60ms);
  Lease b(space.get(), kKey, "b", 60ms);
  ASSERT_TRUE(a.Acquire(stop).ok());
  const auto start = Clock::now();
  ASSERT_TRUE(b.Acquire(stop).ok());  // a never renews: b gets it once it lapses
  EXPECT_GE(Clock::now() - start, 50ms);
  EXPECT_TRUE(b.took_over());
  EXPECT_EQ(Now().owner, "b");
  const uint64_t revision = Revision();
  Status renewed = a.Renew();
  EXPECT_TRUE(renewed.IsUnavailable()) << renewed.ToString();
  EXPECT_NE(renewed.message().find("lost the lease to b"), std::string::npos) << renewed.ToString();
  EXPECT_EQ(Revision(), revision);  // a's attempt changed nothing
  EXPECT_EQ(Now().owner, "b");
}

// A holder paused past its lease, when no one took it meanwhile, renews it: the revision it last
// wrote is still the cell's, so no one else can hold it.
TEST_F(LeaseTest, AHolderPausedPastItsLeaseKeepsItWhenNoOneTookIt) {
  Lease a(space.get(), kKey, "a", 20ms);
  ASSERT_TRUE(a.Acquire(stop).ok());
  std::this_thread::sleep_for(40ms);
  ASSERT_TRUE(a.Renew().ok());
  EXPECT_EQ(Now().owner, "a");
}

// Two managers set up one new job at the same time: the second one's PutFree leaves the lease
// the first one took (freeing it would make two active managers). A lapsed lease of an earlier
// job of the same id is freed, so that the new job's manager does not count a takeover.
TEST_F(LeaseTest, PutFreeLeavesAHeldLeaseAndFreesALapsedOne) {
  Lease first(space.get(), kKey, "first", std::chrono::hours(1));
  ASSERT_TRUE(first.Acquire(stop).ok());
  const uint64_t held = Revision();
  ASSERT_TRUE(Lease::PutFree(space.get(), kKey).ok());
  EXPECT_EQ(Revision(), held);
  EXPECT_EQ(Now().owner, "first");
  EXPECT_TRUE(first.Renew().ok());

  ManualEnv env;
  ASSERT_TRUE(Lease::PutFree(space.get(), kKey).ok());  // still held by "first": kept
  env.Advance(std::chrono::hours(50));                  // long after any lease of "first"
  ASSERT_TRUE(Lease::PutFree(space.get(), kKey, &env).ok());
  EXPECT_EQ(Now().owner, "");
  Lease fresh(space.get(), kKey, "new", std::chrono::hours(1));
  ASSERT_TRUE(fresh.Acquire(stop).ok());
  EXPECT_FALSE(fresh.took_over());
  EXPECT_TRUE(first.Renew().IsUnavailable());
}

// A cell that does not decode holds no one: a standby takes it at once.
TEST_F(LeaseTest, ADamagedLeaseIsTakenAsLapsed) {
  ASSERT_TRUE(
      space->SwapCell(kKey, Value::FromString("garbage"), Revision(), Deadline::After(1s)).ok());
  Lease b(space.get(), kKey, "b", std::chrono::hours(1));
  ASSERT_TRUE(b.Acquire(stop).ok());
  EXPECT_EQ(Now().owner, "b");
}

// The answer to a standby's swap is lost although the swap landed: it finds the lease its own at
// its next look, and knows it took over.
TEST_F(LeaseTest, ASwapWhoseAnswerWasLostIsFoundOnTheNextLook) {
  struct LoseFirstAnswer final : SpaceWrapper {
    using SpaceWrapper::SpaceWrapper;
    int swaps = 0;
    Result<uint64_t> SwapCell(const Key& key, Value value, uint64_t expected,
                              Deadline deadline) override {
      auto r = inner()->SwapCell(key, std::move(value), expected, deadline);
      if (swaps++ == 0 && r.ok()) return Status::Unavailable("the answer was lost");
      return r;
    }
  } lossy(space.get());
  Lease a(space.get(), kKey, "a", 20ms);
  ASSERT_TRUE(a.Acquire(stop).ok());
  Lease b(&lossy, kKey, "b", 20ms);
  ASSERT_TRUE(b.Acquire(stop).ok());
  EXPECT_EQ(lossy.swaps, 2);
  EXPECT_TRUE(b.took_over());
  EXPECT_EQ(b.revision(), Revision());
  EXPECT_EQ(Now().owner, "b");
  EXPECT_TRUE(a.Renew().IsUnavailable());
}

// A supervisor saw the holder's process die: the lease is free at once, not after it lapses; a
// lease someone else holds is left alone.
TEST_F(LeaseTest, FreeIfHeldByFreesOnlyTheDeadHoldersLease) {
  Lease a(space.get(), kKey, "a", std::chrono::hours(1));
  ASSERT_TRUE(a.Acquire(stop).ok());
  ASSERT_TRUE(Lease::FreeIfHeldBy(space.get(), kKey, "b").ok());
  EXPECT_EQ(Now().owner, "a");
  ASSERT_TRUE(Lease::FreeIfHeldBy(space.get(), kKey, "a").ok());
  EXPECT_EQ(Now().expires_ms, 0);
  Lease b(space.get(), kKey, "b", std::chrono::hours(1));
  ASSERT_TRUE(b.Acquire(stop).ok());  // at once: an hour-long lease was not waited out
  EXPECT_TRUE(b.took_over());
  EXPECT_EQ(Now().owner, "b");
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
  const int64_t expires = Now().expires_ms;
  ASSERT_TRUE(b.Keep().ok());
  EXPECT_EQ(Now().expires_ms, expires);
  env.Advance(2ms);
  ASSERT_TRUE(b.Keep().ok());
  EXPECT_GT(Now().expires_ms, expires);
}

// Many standbys race for one lapsed lease on many threads: exactly one gets it each time.
TEST_F(LeaseTest, OfManyStandbysExactlyOneTakesALapsedLease) {
  for (int round = 0; round < 20; ++round) {
    // Lapsed (the last round's winner's lease ended long ago), under names not used before.
    ASSERT_TRUE(
        space->SwapCell(kKey, EncodeLeaseMessage({"gone", 1}), Revision(), Deadline::After(1s))
            .ok());
    std::atomic<int> active{0};
    std::vector<std::thread> threads;
    std::atomic<bool> give_up{false};
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&, i] {
        Lease l(space.get(), kKey, fmt::format("r{}m{}", round, i), std::chrono::hours(1));
        if (l.Acquire(give_up).ok()) active.fetch_add(1);
      });
    }
    while (active.load() == 0) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(5ms);  // any second winner would have won by now
    give_up.store(true);
    for (auto& t : threads) t.join();
    ASSERT_EQ(active.load(), 1) << "round " << round;
  }
}

// Two clients of a real nats-server, as two manager processes would be: the lease survives a
// restart of the server (file storage, SIGKILL), its holder renews it afterwards, and after a
// takeover the server itself refuses the old holder's swap.
TEST(LeaseOverNatsTest, SurvivesAServerRestartAndTheServerRefusesTheOldHolder) {
  nats::LocalServerOptions options;
  options.store_dir =
      (std::filesystem::temp_directory_path() / ("acan-lease-test-" + std::to_string(::getpid())))
          .string();
  options.remove_store = true;
  std::filesystem::remove_all(options.store_dir);
  auto server = nats::LocalNatsServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string uri = (*server)->url() + "?storage=file&stream=lease";
  auto space_a = OpenSpace(uri);
  auto space_b = OpenSpace(uri);
  ASSERT_TRUE(space_a.ok() && space_b.ok());
  Space* a_space = space_a->get();
  Space* b_space = space_b->get();
  ASSERT_TRUE(Lease::PutFree(a_space, kKey).ok());
  const auto lease = 2s;
  std::atomic<bool> stop{false};
  Lease a(a_space, kKey, "a", lease);
  ASSERT_TRUE(a.Acquire(stop).ok());

  (*server)->Kill();
  ASSERT_TRUE((*server)->Restart().ok());
  auto cell = b_space->ReadCell(kKey);
  ASSERT_TRUE(cell.ok() && cell->revision != 0) << cell.status().ToString();
  EXPECT_EQ(cell->revision, a.revision());
  EXPECT_EQ(DecodeLeaseMessage(cell->value).value().owner, "a");
  Status renewed = a.Renew();
  ASSERT_TRUE(renewed.ok()) << renewed.ToString();

  Lease b(b_space, kKey, "b", lease);
  ASSERT_TRUE(b.Acquire(stop).ok());  // a stops renewing: b takes over once it lapses
  EXPECT_TRUE(b.took_over());
  const uint64_t taken_at = b.revision();
  Status refused = a.Renew();
  EXPECT_TRUE(refused.IsUnavailable()) << refused.ToString();
  EXPECT_NE(refused.message().find("lost the lease to b"), std::string::npos) << refused.ToString();
  cell = a_space->ReadCell(kKey);
  ASSERT_TRUE(cell.ok() && cell->revision != 0);
  EXPECT_EQ(cell->revision, taken_at);
  EXPECT_EQ(DecodeLeaseMessage(cell->value).value().owner, "b");
}

}  // namespace
}  // namespace acan::runtime
