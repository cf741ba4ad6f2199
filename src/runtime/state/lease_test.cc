// The lease on its own, against mem: on a clock the test moves (ManualEnv), so that no check
// depends on how fast the machine is; a race of real threads that ends when every standby has
// decided; and, for the swap the server checks, against a real nats-server.
#include "runtime/state/lease.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "runtime/testing/manual_env.h"
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
  ManualEnv env;
  Lease a(space.get(), kKey, "a", 60ms, &env);
  ASSERT_TRUE(a.Acquire(stop).ok());
  EXPECT_FALSE(a.took_over());
  EXPECT_EQ(Now().owner, "a");
  EXPECT_EQ(a.revision(), Revision());
  const uint64_t taken = a.revision();
  env.Advance(19ms);
  EXPECT_TRUE(a.Keep().ok());  // not a third of the lease yet: nothing to do
  EXPECT_EQ(a.revision(), taken);
  env.Advance(1ms);
  const int64_t before = Now().expires_ms;
  EXPECT_TRUE(a.Keep().ok());  // a third has passed: renewed
  EXPECT_EQ(Now().expires_ms, before + 20);
  EXPECT_GT(a.revision(), taken);
  EXPECT_EQ(a.revision(), Revision());
}

TEST_F(LeaseTest, AStandbyWaitsForTheLeaseToLapseAndTheOldHolderFindsOut) {
  ManualEnv env;
  Lease a(space.get(), kKey, "a", 60ms, &env);
  Lease b(space.get(), kKey, "b", 60ms, &env);
  ASSERT_TRUE(a.Acquire(stop).ok());
  const auto start = env.Now();
  ASSERT_TRUE(b.Acquire(stop).ok());  // a never renews: b gets it once it lapses
  EXPECT_GT(env.Now() - start, 60ms);
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
  ManualEnv env;
  Lease a(space.get(), kKey, "a", 20ms, &env);
  ASSERT_TRUE(a.Acquire(stop).ok());
  env.Advance(40ms);
  ASSERT_LT(Now().expires_ms, env.WallNs() / 1000000) << "the lease has lapsed";
  ASSERT_TRUE(a.Renew().ok());
  EXPECT_EQ(Now().owner, "a");
  EXPECT_GT(Now().expires_ms, env.WallNs() / 1000000);
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
  ManualEnv env;
  Lease a(space.get(), kKey, "a", 20ms, &env);
  ASSERT_TRUE(a.Acquire(stop).ok());
  Lease b(&lossy, kKey, "b", 20ms, &env);
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

// One standby of a race, watched: the revision of the lease it last read, and the one it had read
// when it last went back to waiting. A standby waits only after a look that did not make it swap,
// so once it waits having read the winner's revision, it has decided not to take that lease.
struct WatchedStandby {
  struct Reads final : SpaceWrapper {
    using SpaceWrapper::SpaceWrapper;
    Result<Cell> ReadCell(const Key& key) override {
      auto cell = inner()->ReadCell(key);
      if (cell.ok()) last_read.store(cell->revision);
      return cell;
    }
    std::atomic<uint64_t> last_read{0};
  };
  struct Waits final : EnvWrapper {
    explicit Waits(const Reads* reads) : EnvWrapper(Env::Default()), reads(reads) {}
    void SleepUntil(Clock::time_point t) const override {
      waited_after.store(reads->last_read.load());
      EnvWrapper::SleepUntil(t);
    }
    const Reads* reads;
    mutable std::atomic<uint64_t> waited_after{0};
  };
  explicit WatchedStandby(Space* space) : reads(space), waits(&reads) {}
  Reads reads;
  Waits waits;
  std::atomic<bool> returned{false};
};

// Polls `done` until it holds or a minute has passed (a hung race fails instead of hanging).
bool WaitUntil(const std::function<bool()>& done) {
  const auto give_up = Clock::now() + std::chrono::minutes(1);
  while (!done()) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Many standbys race for one lapsed lease on many threads: exactly one gets it each time. The
// losers are not given a fixed time to win by mistake: the race ends only once every one of them
// has read the winner's lease and gone back to waiting (or returned).
TEST_F(LeaseTest, OfManyStandbysExactlyOneTakesALapsedLease) {
  for (int round = 0; round < 20; ++round) {
    // Lapsed (the last round's winner's lease ended long ago), under names not used before.
    ASSERT_TRUE(
        space->SwapCell(kKey, EncodeLeaseMessage({"gone", 1}), Revision(), Deadline::After(1s))
            .ok());
    std::atomic<int> active{0};
    std::atomic<uint64_t> won_at{0};
    std::vector<std::unique_ptr<WatchedStandby>> standbys;
    std::vector<std::thread> threads;
    std::atomic<bool> give_up{false};
    for (int i = 0; i < 4; ++i) {
      standbys.push_back(std::make_unique<WatchedStandby>(space.get()));
      threads.emplace_back([&, i, s = standbys.back().get()] {
        Lease l(&s->reads, kKey, fmt::format("r{}m{}", round, i), std::chrono::hours(1), &s->waits);
        if (l.Acquire(give_up).ok()) {
          won_at.store(l.revision());
          active.fetch_add(1);
        }
        s->returned.store(true);
      });
    }
    const bool decided = WaitUntil([&] {
      if (active.load() == 0) return false;
      for (const auto& s : standbys) {
        if (!s->returned.load() && s->waits.waited_after.load() < won_at.load()) return false;
      }
      return true;
    });
    give_up.store(true);
    for (auto& t : threads) t.join();
    ASSERT_TRUE(decided) << "round " << round << ": the race did not settle within a minute";
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
