// The oracle itself: it passes a run that wrote each version once, in order, from a proposal, and
// names each way a run can break exactly-once (a gap, a repeat with other bytes, a version out of
// order, one not from any proposal, one from a proposal that landed after it, a run that stopped
// short).
#include "runtime/testing/version_oracle.h"

#include <gtest/gtest.h>

#include "nn/plan.h"
#include "runtime/core/messages.h"

namespace acan::runtime {
namespace {

struct VersionOracleTest : ::testing::Test {
  static Value V(float x) { return Value::FromVector(std::vector<float>{x}); }
  void Version(int64_t n, float x) { oracle.OnPut(layout.State("param.l0.w", n), V(x)); }
  void Proposal(int64_t step, float x) { oracle.OnPut(layout.Proposal("param.l0.w", step), V(x)); }
  std::string Check(int64_t final_version = 2) {
    Status s = oracle.Check({"param.l0.w"}, final_version);
    return s.ok() ? "ok" : s.message();
  }
  Layout layout{"job"};
  VersionOracle oracle{"job", 2};
};

TEST_F(VersionOracleTest, AFaithfulRunPasses) {
  Version(0, 0.5f);
  Proposal(0, 1.5f);
  Proposal(0, 1.5f);  // a duplicate handler's copy
  Version(1, 1.5f);
  oracle.OnPut(layout.Tensor("x.s1"), V(7));  // not a version: ignored
  Proposal(1, 2.5f);
  Version(2, 2.5f);
  EXPECT_EQ(Check(), "ok");
  EXPECT_EQ(oracle.versions_written(), 3);
  EXPECT_EQ(oracle.proposals_seen(), 3);
}

TEST_F(VersionOracleTest, AGapIsNamed) {
  Version(0, 0.5f);
  Proposal(1, 2.5f);
  Version(2, 2.5f);
  EXPECT_NE(Check().find("version 1: never written (a gap)"), std::string::npos) << Check();
}

TEST_F(VersionOracleTest, AVersionWrittenTwiceIsNamed) {
  Version(0, 0.5f);
  Proposal(0, 1.5f);
  Version(1, 1.5f);
  Version(1, 1.5f);  // the same bytes again: a write made again, counted but not a repeat
  EXPECT_EQ(Check(1), "ok");
  EXPECT_EQ(oracle.version_copies(), 1);
  Proposal(0, 2.5f);  // a second proposal (a copy of the update that read other gradients)
  Version(1, 2.5f);
  EXPECT_NE(Check(1).find("version 1: written twice, with other bytes"), std::string::npos)
      << Check(1);
}

TEST_F(VersionOracleTest, AVersionNotFromItsProposalIsNamed) {
  Version(0, 0.5f);
  Proposal(0, 1.5f);
  Version(1, 9.0f);  // not the proposal's bytes
  EXPECT_NE(Check(1).find("version 1: not bitwise any proposal of step 0"), std::string::npos)
      << Check(1);
}

TEST_F(VersionOracleTest, AVersionBeforeItsProposalOrItsPredecessorIsNamed) {
  Version(0, 0.5f);
  Version(1, 1.5f);
  Proposal(0, 1.5f);  // landed after the version it is said to have made
  EXPECT_NE(Check(1).find("not bitwise any proposal"), std::string::npos) << Check(1);

  VersionOracle other("job", 1);
  other.OnPut(layout.State("param.l0.w", 1), V(1.5f));
  other.OnPut(layout.State("param.l0.w", 0), V(0.5f));
  EXPECT_NE(other.Check({"param.l0.w"}, 1).message().find("written before the version it follows"),
            std::string::npos);
}

TEST_F(VersionOracleTest, ARunThatStoppedShortOrAShardNeverWrittenIsNamed) {
  Version(0, 0.5f);
  Proposal(0, 1.5f);
  Version(1, 1.5f);
  EXPECT_NE(Check(2).find("the last written is 1, not the final 2"), std::string::npos);
  EXPECT_NE(oracle.Check({"param.l0.b"}, 0).message().find("'param.l0.b' version 0: never written"),
            std::string::npos);
}

// Tasks as the manager sends them (the note's toy in data partition): at window 2 a micro-batch of
// step s may read version s or s - 1 of a shard, never older or newer; an update reads exactly
// the version it advances.
// A run many times the oracle's record (it forgets checked versions past 2 * 1024): a faithful
// one passes with every landing counted; a fault among the forgotten versions is still named, as
// is a version written again after its bytes were forgotten.
TEST_F(VersionOracleTest, ALongRunIsCheckedAsItGoesAndItsRecordStaysBounded) {
  constexpr int64_t kSteps = 10000;
  auto run = [&](VersionOracle& o, int64_t bad_at, const char* how) {
    o.OnPut(layout.State("param.l0.w", 0), V(0));
    for (int64_t s = 0; s < kSteps; ++s) {
      const float x = float(s + 1);
      o.OnPut(layout.Proposal("param.l0.w", s), V(x));
      if (s + 1 == bad_at && std::string(how) == "gap") continue;
      if (s + 1 == bad_at && std::string(how) == "other bytes") {
        o.OnPut(layout.State("param.l0.w", s + 1), V(x + 0.5f));
        continue;
      }
      o.OnPut(layout.State("param.l0.w", s + 1), V(x));
      if (s % 100 == 7) o.OnPut(layout.State("param.l0.w", s + 1), V(x));  // a copy
    }
    Status st = o.Check({"param.l0.w"}, kSteps);
    return st.ok() ? std::string("ok") : std::string(st.message());
  };
  {
    VersionOracle o("job", 1);
    EXPECT_EQ(run(o, -1, ""), "ok");
    EXPECT_EQ(o.versions_written(), kSteps + 1 + kSteps / 100);
    EXPECT_EQ(o.version_copies(), kSteps / 100);
    EXPECT_EQ(o.proposals_seen(), kSteps);
  }
  {
    VersionOracle o("job", 1);
    EXPECT_EQ(run(o, 300, "gap"), "oracle: shard 'param.l0.w' version 300: never written (a gap)");
  }
  {
    VersionOracle o("job", 1);
    EXPECT_EQ(run(o, 300, "other bytes"),
              "oracle: shard 'param.l0.w' version 300: not bitwise any proposal of step 299 that "
              "landed before it");
  }
  {
    VersionOracle o("job", 1);
    ASSERT_EQ(run(o, -1, ""), "ok");
    o.OnPut(layout.State("param.l0.w", 5), V(5));  // long after: its bytes are forgotten
    Status late = o.Check({"param.l0.w"}, kSteps);
    EXPECT_NE(late.message().find("version 5: written again after"), std::string::npos)
        << late.ToString();
  }
}

TEST_F(VersionOracleTest, TasksReadVersionsWithinTheWindow) {
  const JobConfig job = *ParseJobString("[partition]\nstrategy = \"data\"\n");
  const nn::Plan plan = nn::Plan::Create(job).value();
  auto send = [&](VersionOracle& to, bool update, int64_t step, int64_t version) {
    for (const nn::TaskSpec& spec : plan.StepTasks(step, 1)) {
      if ((spec.type == nn::TaskType::kUpdate) != update) continue;
      std::vector<std::string> keys;
      for (const std::string& in : spec.inputs) {
        keys.push_back(nn::Plan::IsStateKey(in) ? layout.State(in, version).str()
                                                : layout.Tensor(in).str());
      }
      to.OnPut(layout.Task(spec.type, spec.key), EncodeTaskMessage(1, keys, nn::EncodeTask(spec)));
      return;
    }
  };
  Version(0, 0.5f);
  send(oracle, false, 5, 5);
  send(oracle, false, 5, 4);
  send(oracle, true, 5, 5);
  EXPECT_EQ(Check(0), "ok");
  EXPECT_EQ(oracle.tasks_seen(), 2 + 1);
  send(oracle, true, 6, 5);  // an update of step 6 from version 5
  EXPECT_NE(Check(0).find("(step 6, window 2) reads version 5 of"), std::string::npos) << Check(0);
  VersionOracle stale("job", 2), ahead("job", 2);
  send(stale, false, 5, 3);  // older than the window
  EXPECT_NE(stale.Check({}, 0).message().find("(step 5, window 2) reads version 3"),
            std::string::npos);
  send(ahead, false, 5, 6);  // a version the step cannot have
  EXPECT_NE(ahead.Check({}, 0).message().find("reads version 6"), std::string::npos);
}

TEST_F(VersionOracleTest, TheWrapperRecordsOnlyWhatLanded) {
  auto space = oracle.Wrap(OpenSpace("mem:?max_value_bytes=8").value());
  ASSERT_TRUE(space->Put(layout.State("param.l0.w", 0), V(0.5f)).ok());
  EXPECT_FALSE(space->Put(layout.Proposal("param.l0.w", 0),
                          Value::FromVector(std::vector<float>(4)))
                   .ok());  // too big: refused, so not recorded
  EXPECT_EQ(oracle.versions_written(), 1);
  EXPECT_EQ(oracle.proposals_seen(), 0);
  EXPECT_TRUE((*space->Read(layout.State("param.l0.w", 0))).has_value());
}

}  // namespace
}  // namespace acan::runtime
