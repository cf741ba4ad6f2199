// Liveness against mem:, on a clock the test moves: a claim is alive until its lease end, lapsed
// after it, stale once its handler restarted, dead once its death was announced.
#include "runtime/state/liveness.h"

#include <gtest/gtest.h>

#include "runtime/core/messages.h"
#include "runtime/testing/manual_env.h"

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

struct LivenessTest : ::testing::Test {
  void SetUp() override { space = std::move(OpenSpace("mem:").value()); }
  // Handler `h`, incarnation `inc`, claims `task` until `lease` from now.
  void Claim(const std::string& task, int h, int64_t inc, std::chrono::nanoseconds lease) {
    ASSERT_TRUE(space
                    ->Put(layout.Claim(task, h), Value::FromVector(std::vector<int64_t>{
                                                     inc, env.WallNs() + lease.count()}))
                    .ok());
  }
  void Announce(int h, int64_t inc) {
    (void)space->Take(layout.Alive(h), 16, Deadline::Now());
    ASSERT_TRUE(space->Put(layout.Alive(h), Value::FromVector(std::vector<int64_t>{inc})).ok());
  }
  ClaimState State(const std::string& task) { return liveness.ClaimOf(task).value(); }

  Layout layout{"job"};
  ManualEnv env;
  std::unique_ptr<Space> space;
  Liveness liveness{nullptr, &layout, &env};
};

TEST_F(LivenessTest, AClaimLivesUntilItsLeaseEndsOrItsHandlerRestartsOrDies) {
  liveness = Liveness(space.get(), &layout, &env);
  EXPECT_EQ(State("mb.s0.m0"), ClaimState::kNone);
  Announce(1, 1);
  Claim("mb.s0.m0", 1, 1, 10ms);
  EXPECT_EQ(State("mb.s0.m0"), ClaimState::kAlive);
  env.Advance(11ms);
  EXPECT_EQ(State("mb.s0.m0"), ClaimState::kLapsed);
  Announce(1, 2);  // handler 1 came back: its first incarnation's claim is stale
  EXPECT_EQ(State("mb.s0.m0"), ClaimState::kStale);
  ASSERT_TRUE(AnnounceDeath(space.get(), layout, 1, 2).ok());
  EXPECT_EQ(State("mb.s0.m0"), ClaimState::kDead);
  EXPECT_TRUE(space->Read(layout.RestartNotice(1))->has_value());
  // A live claim of another handler wins over every dead one.
  Announce(2, 1);
  Claim("mb.s0.m0", 2, 1, 10ms);
  EXPECT_EQ(State("mb.s0.m0"), ClaimState::kAlive);
  liveness.DropClaims("mb.s0.m0");
  EXPECT_EQ(State("mb.s0.m0"), ClaimState::kNone);
  EXPECT_TRUE(space->ReadAll(layout.ClaimPattern("mb.s0.m0"))->empty());
}

// AllClaims (what a restart notice reads) says of every claimed task what ClaimOf says of it.
TEST_F(LivenessTest, AllClaimsAgreesWithClaimOfOnEveryTask) {
  liveness = Liveness(space.get(), &layout, &env);
  EXPECT_TRUE(liveness.AllClaims()->empty());
  Announce(1, 1);
  Announce(2, 3);
  Claim("mb.s0.m0", 1, 1, 10ms);     // alive
  Claim("mb.s0.m1", 2, 2, 10ms);     // stale: handler 2 is on incarnation 3
  Claim("upd.s0.l0.w", 4, 1, 10ms);  // dead: handler 4 never announced
  Claim("upd.s0.l0.b", 2, 2, 10ms);  // a stale and a live claim: alive
  Claim("upd.s0.l0.b", 2, 3, 10ms);
  env.Advance(5ms);
  Claim("upd.s0.l1.w", 1, 1, 1ms);  // lapsed
  env.Advance(2ms);
  auto all = liveness.AllClaims();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  const std::map<std::string, ClaimState> expected = {{"mb.s0.m0", ClaimState::kAlive},
                                                      {"mb.s0.m1", ClaimState::kStale},
                                                      {"upd.s0.l0.w", ClaimState::kDead},
                                                      {"upd.s0.l0.b", ClaimState::kAlive},
                                                      {"upd.s0.l1.w", ClaimState::kLapsed}};
  EXPECT_EQ(*all, expected);
  for (const auto& [task, state] : expected) EXPECT_EQ(State(task), state) << task;
}

TEST_F(LivenessTest, ADeathNoticeKeepsANewerIncarnationAndOneNoticeAtMost) {
  Announce(3, 5);
  ASSERT_TRUE(AnnounceDeath(space.get(), layout, 3, 4).ok());  // an older incarnation died
  auto alive = space->Read(layout.Alive(3));
  ASSERT_TRUE(alive->has_value());
  EXPECT_EQ((*alive)->value.As<int64_t>()[0], 5);
  ASSERT_TRUE(AnnounceDeath(space.get(), layout, 3, 5).ok());
  EXPECT_FALSE(space->Read(layout.Alive(3))->has_value());
  ASSERT_TRUE(PutRestartNotice(space.get(), layout, 3).ok());
  EXPECT_EQ(space->ReadAll(layout.RestartNotice(3))->size(), 1u);
  auto notice = DecodeDoneMessage((*space->Read(layout.RestartNotice(3)))->value);
  ASSERT_TRUE(notice.ok());
  EXPECT_EQ(notice->handler, 3);
}

}  // namespace
}  // namespace acan::runtime
