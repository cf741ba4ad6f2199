// The key codec: every key a builder makes parses back to what built it; anything else is
// refused with the key named.
#include "runtime/core/layout.h"

#include <gtest/gtest.h>

namespace acan::runtime {
namespace {

TEST(LayoutTest, EveryKeyParsesBackToWhatBuiltIt) {
  const Layout layout("job7");
  auto parse = [&](const Key& k) {
    auto p = layout.Parse(k);
    EXPECT_TRUE(p.ok()) << k.str() << ": " << p.status().ToString();
    return p.value_or(ParsedKey{});
  };
  ParsedKey p = parse(layout.Task(nn::TaskType::kBackward, "bwd.s12.l1.r0.c2"));
  EXPECT_EQ(p.kind, KeyKind::kTask);
  EXPECT_EQ(p.task_type, nn::TaskType::kBackward);
  EXPECT_EQ(p.task_key, "bwd.s12.l1.r0.c2");
  EXPECT_EQ(p.step, 12);
  EXPECT_EQ(p.size_class, -1);
  // A task of a size class: the class apart, the task key as without one.
  for (int c : {0, 1, 3}) {
    p = parse(layout.Task(nn::TaskType::kBackward, "bwd.s12.l1.r0.c2", c));
    EXPECT_EQ(p.kind, KeyKind::kTask);
    EXPECT_EQ(p.task_key, "bwd.s12.l1.r0.c2");
    EXPECT_EQ(p.size_class, c);
    EXPECT_EQ(p.step, 12);
  }

  p = parse(layout.Tensor("x.s3.c1"));
  EXPECT_EQ(p.kind, KeyKind::kTensor);
  EXPECT_EQ(p.name, "x.s3.c1");
  EXPECT_EQ(p.step, 3);

  p = parse(layout.State("param.l0.w", 41));
  EXPECT_EQ(p.kind, KeyKind::kState);
  EXPECT_EQ(p.name, "param.l0.w");
  EXPECT_EQ(p.version, 41);
  EXPECT_EQ(p.step, -1);

  p = parse(layout.Proposal("mom.l1.b", 9));
  EXPECT_EQ(p.kind, KeyKind::kProposal);
  EXPECT_EQ(p.name, "mom.l1.b");
  EXPECT_EQ(p.step, 9);
  EXPECT_EQ(layout.Output("mom.l1.b", 9), layout.Proposal("mom.l1.b", 9));
  EXPECT_EQ(layout.Output("z.s9.l0", 9), layout.Tensor("z.s9.l0"));

  p = parse(layout.Done("upd.s5.l0.w"));
  EXPECT_EQ(p.kind, KeyKind::kDone);
  EXPECT_EQ(p.task_key, "upd.s5.l0.w");
  EXPECT_EQ(p.step, 5);

  p = parse(layout.RestartNotice(3));
  EXPECT_EQ(p.kind, KeyKind::kRestartNotice);
  EXPECT_EQ(p.handler, 3);

  p = parse(layout.Claim("mb.s2.m1", 14));
  EXPECT_EQ(p.kind, KeyKind::kClaim);
  EXPECT_EQ(p.task_key, "mb.s2.m1");
  EXPECT_EQ(p.handler, 14);
  EXPECT_EQ(p.step, 2);

  EXPECT_EQ(parse(layout.Alive(2)).handler, 2);
  EXPECT_EQ(parse(layout.Alive(2)).kind, KeyKind::kAlive);
  EXPECT_EQ(parse(layout.StepOpen(88)).step, 88);
  EXPECT_EQ(parse(layout.StepOpen(88)).kind, KeyKind::kStepOpen);
  EXPECT_EQ(parse(layout.ManagerState()).kind, KeyKind::kManagerState);
  EXPECT_EQ(parse(layout.Lease()).kind, KeyKind::kLease);
  EXPECT_EQ(parse(layout.JobDescriptor()).kind, KeyKind::kJobDescriptor);
  EXPECT_EQ(parse(layout.DataHint()).kind, KeyKind::kDataHint);
  EXPECT_EQ(parse(layout.Usage("h3-i2")).kind, KeyKind::kUsage);
  EXPECT_EQ(parse(layout.Usage("h3-i2")).name, "h3-i2");
}

TEST(LayoutTest, PatternsMatchExactlyTheirKeys) {
  const Layout layout("a.b");  // a job token of two tokens
  EXPECT_TRUE(layout.TaskPattern(nn::TaskType::kUpdate)
                  .Matches(layout.Task(nn::TaskType::kUpdate, "upd.s1.l0.w")));
  EXPECT_FALSE(layout.TaskPattern(nn::TaskType::kUpdate)
                   .Matches(layout.Task(nn::TaskType::kForward, "fwd.s1.l0.r0.c0")));
  EXPECT_TRUE(layout.AnyTaskPattern().Matches(layout.Task(nn::TaskType::kLoss, "loss.s0")));
  // Size classes: a class's pattern matches its tasks and every later class's, not an earlier
  // one's; `exact`, its own alone. The patterns without a class match them all.
  auto task = [&](int c) { return layout.Task(nn::TaskType::kForward, "fwd.s1.l0.r0.c0", c); };
  EXPECT_EQ(task(2).str(), "a.b.task.forward.z.z.b.fwd.s1.l0.r0.c0");
  EXPECT_EQ(task(0).str(), "a.b.task.forward.b.fwd.s1.l0.r0.c0");
  for (int c = 0; c < 4; ++c) {
    for (int of = 0; of < 4; ++of) {
      SCOPED_TRACE(testing::Message() << "class " << c << ", pattern of " << of);
      EXPECT_EQ(layout.AnyTaskPattern(of).Matches(task(c)), c >= of);
      EXPECT_EQ(layout.TaskPattern(nn::TaskType::kForward, of).Matches(task(c)), c >= of);
      EXPECT_EQ(layout.AnyTaskPattern(of, true).Matches(task(c)), c == of);
      EXPECT_EQ(layout.TaskPattern(nn::TaskType::kForward, of, true).Matches(task(c)), c == of);
      EXPECT_FALSE(layout.TaskPattern(nn::TaskType::kUpdate, of).Matches(task(c)));
    }
    EXPECT_TRUE(layout.AnyTaskPattern().Matches(task(c)));
    EXPECT_TRUE(layout.TaskPattern(nn::TaskType::kForward).Matches(task(c)));
  }
  EXPECT_FALSE(layout.AnyTaskPattern(1).Matches(layout.Task(nn::TaskType::kLoss, "loss.s0")));
  EXPECT_TRUE(layout.StatePattern("param.l0.w").Matches(layout.State("param.l0.w", 3)));
  EXPECT_FALSE(layout.StatePattern("param.l0").Matches(layout.State("param.l0.w", 3)));
  EXPECT_TRUE(layout.AllStatesPattern().Matches(layout.State("param.l0.w", 3)));
  EXPECT_FALSE(layout.AllStatesPattern().Matches(layout.Proposal("param.l0.w", 3)));
  EXPECT_TRUE(layout.AllProposalsPattern().Matches(layout.Proposal("param.l0.w", 3)));
  EXPECT_FALSE(layout.AllProposalsPattern().Matches(layout.State("param.l0.w", 3)));
  EXPECT_TRUE(layout.ClaimPattern("mb.s2.m1").Matches(layout.Claim("mb.s2.m1", 0)));
  EXPECT_FALSE(layout.ClaimPattern("mb.s2").Matches(layout.Claim("mb.s2.m1", 0)));
  EXPECT_TRUE(layout.DonePattern().Matches(layout.RestartNotice(1)));
  auto p = layout.Parse(layout.Claim("mb.s2.m1", 4));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->task_key, "mb.s2.m1");
  EXPECT_EQ(p->handler, 4);
}

TEST(LayoutTest, ForeignAndMalformedKeysAreRefusedByName) {
  const Layout layout("job");
  for (const char* text :
       {"other.t.x.s1", "job", "job.zzz.q", "job.p.param.l0.w.x3", "job.u.param.l0.w.v3",
        "job.claim.mb.s1.x4", "job.alive.h", "job.alive.h1.h2", "job.step.s", "job.m.other",
        "job.task.fly.x.s1", "job.done.restarted.hx", "job.task.update", "job.task.update.z.fwd.s1",
        "job.task.update.z.z.b"}) {
    auto key = Key::Parse(text);
    ASSERT_TRUE(key.ok()) << text;
    auto p = layout.Parse(*key);
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(p.status().message().find(text), std::string::npos) << p.status().message();
  }
}

TEST(LayoutTest, StepsAndClassesOfTaskKeys) {
  EXPECT_EQ(Layout::StepOf("mb.s12.m0"), 12);
  EXPECT_EQ(Layout::StepOf("loss.s0"), 0);
  EXPECT_EQ(Layout::StepOf("param.l0.w"), -1);
  EXPECT_EQ(Layout::StepOf("x"), -1);
  EXPECT_EQ(Layout::StepOf("x.sx"), -1);
  EXPECT_EQ(Layout::TaskClass("mb.s12.m0"), "mb.m0");
  EXPECT_EQ(Layout::TaskClass("upd.s3.l1.w"), "upd.l1.w");
  EXPECT_EQ(Layout::TaskClass("chain.s0"), "chain");
}

}  // namespace
}  // namespace acan::runtime
