// The manager's decisions about whole steps, run synchronously: the window, readiness, the
// version a copy reads, what a report means and what finishing a step adds. No thread, no space.
#include "runtime/core/step_rules.h"

#include <gtest/gtest.h>

#include <map>

namespace acan::runtime {
namespace {

TEST(StepRulesTest, TheWindowAdmitsOneStepAheadOfWindowStepsAndNoFurther) {
  // Window 1: step 0 is admitted, then step 1 ahead of it (its inputs put early), and step 2
  // only once step 0's updates are applied (every shard at version 1) and step 0 finished.
  EXPECT_TRUE(MayAdmit(0, 0, 10, 0, 1));
  EXPECT_TRUE(MayAdmit(1, 1, 10, 0, 1));
  EXPECT_FALSE(MayAdmit(2, 2, 10, 0, 1)) << "two steps unfinished fill window 1";
  EXPECT_FALSE(MayAdmit(1, 2, 10, 0, 1)) << "step 2 would read version 0, two behind";
  EXPECT_TRUE(MayAdmit(1, 2, 10, 1, 1));
  // Window 3: four steps admitted at most, each reading a version at most 3 behind.
  EXPECT_TRUE(MayAdmit(3, 3, 10, 0, 3));
  EXPECT_FALSE(MayAdmit(4, 4, 10, 1, 3));
  EXPECT_FALSE(MayAdmit(3, 4, 10, 0, 3));
  // Never past the job's last step.
  EXPECT_FALSE(MayAdmit(0, 10, 10, 9, 1));
}

StepFlow OneTaskStep(int64_t step, nn::TaskType type) {
  StepFlow st;
  st.step = step;
  StepTask t;
  t.spec.key = "t";
  t.spec.type = type;
  t.spec.inputs = {"param.w0", "x.s" + std::to_string(step), "mom.w0"};
  st.tasks.push_back(t);
  return st;
}

TEST(StepRulesTest, AnUpdateIsReadyOnlyOnTheVersionItAdvances) {
  StepFlow st = OneTaskStep(5, nn::TaskType::kUpdate);
  std::map<std::string, int64_t> v = {{"param.w0", 5}, {"mom.w0", 5}};
  auto of = [&](const std::string& k) { return v.at(k); };
  EXPECT_TRUE(ReadyToSend(st, st.tasks[0], 1, of));
  v["param.w0"] = 6;  // a predecessor applied one shard of the two: runs again on version 5
  EXPECT_TRUE(ReadyToSend(st, st.tasks[0], 1, of));
  v["param.w0"] = 4;
  EXPECT_FALSE(ReadyToSend(st, st.tasks[0], 1, of)) << "the version it advances is not there";
  v["param.w0"] = 7;
  EXPECT_FALSE(ReadyToSend(st, st.tasks[0], 4, of)) << "two past it: not this update's to make";
}

TEST(StepRulesTest, OtherTasksReadAVersionAtMostTheWindowBehind) {
  StepFlow st = OneTaskStep(5, nn::TaskType::kForward);
  std::map<std::string, int64_t> v = {{"param.w0", 3}, {"mom.w0", 9}};
  auto of = [&](const std::string& k) { return v.at(k); };
  EXPECT_FALSE(ReadyToSend(st, st.tasks[0], 1, of));
  EXPECT_FALSE(ReadyToSend(st, st.tasks[0], 2, of));
  EXPECT_TRUE(ReadyToSend(st, st.tasks[0], 3, of)) << "3 >= 5 - 3 + 1";
  v["param.w0"] = 5;
  EXPECT_TRUE(ReadyToSend(st, st.tasks[0], 1, of));
  st.tasks[0].missing = 1;  // a step tensor it reads is not made yet
  EXPECT_FALSE(ReadyToSend(st, st.tasks[0], 1, of));
}

TEST(StepRulesTest, EveryCopyReadsTheVersionOfItsFirstSend) {
  EXPECT_EQ(VersionToRead(nn::TaskType::kUpdate, 5, 6), 5);
  EXPECT_EQ(VersionToRead(nn::TaskType::kUpdate, 5, 3), 5);
  EXPECT_EQ(VersionToRead(nn::TaskType::kForward, 5, 3), 3);
  EXPECT_EQ(VersionToRead(nn::TaskType::kBackward, 5, 7), 5) << "never newer than its step's";
}

TEST(StepRulesTest, WhatAReportMeans) {
  DoneMessage ok;
  ok.attempt = 2;
  EXPECT_EQ(MeaningOf(nullptr, ok), ReportMeaning::kLate);
  StepTask t;
  t.dispatched = true;
  t.attempt = 2;
  EXPECT_EQ(MeaningOf(&t, ok), ReportMeaning::kFirst);
  EXPECT_TRUE(TimesItsHandler(ok));
  DoneMessage missing = ok;
  missing.missing = {"acan/j/tensor/x"};
  EXPECT_FALSE(TimesItsHandler(missing));
  EXPECT_EQ(MeaningOf(&t, missing), ReportMeaning::kMissingInputs);
  missing.attempt = 1;
  EXPECT_EQ(MeaningOf(&t, missing), ReportMeaning::kStaleMissing) << "an older copy's";
  DoneMessage failed = ok;
  failed.error = "bad shapes";
  EXPECT_FALSE(TimesItsHandler(failed));
  EXPECT_EQ(MeaningOf(&t, failed), ReportMeaning::kFailed);
  t.done = true;
  EXPECT_EQ(MeaningOf(&t, ok), ReportMeaning::kDuplicate);
  EXPECT_EQ(MeaningOf(&t, missing), ReportMeaning::kDuplicate);
}

TEST(StepRulesTest, FinishingStepsFillsTheirEpochsInOrder) {
  Progress p;
  p.total_steps = 4;
  StepMetrics m;
  const float a[] = {0.5f, 7.f}, b[] = {0.25f, 3.f};
  ASSERT_TRUE(m.Add(a, 8).ok());
  ASSERT_TRUE(m.Add(b, 8).ok());
  EXPECT_DOUBLE_EQ(m.loss_sum, 0.5 * 8 + 0.25 * 8);
  EXPECT_EQ(m.correct, 10);
  const float bad[] = {1.f};
  EXPECT_FALSE(m.Add(bad, 8).ok());

  FinishStep(&p, 0, 16, 2, m);
  ASSERT_EQ(p.epochs.size(), 1u) << "epochs are added as they begin";
  FinishStep(&p, 1, 10, 2, m);
  EXPECT_EQ(p.epochs[0].rows, 26);
  EXPECT_EQ(p.epochs[0].correct, 20);
  EXPECT_DOUBLE_EQ(p.epochs[0].loss_sum, 12.0);
  EXPECT_EQ(p.next_step, 2);
  EXPECT_FALSE(p.finished);
  FinishStep(&p, 2, 16, 2, StepMetrics{});
  ASSERT_EQ(p.epochs.size(), 2u);
  FinishStep(&p, 3, 16, 2, StepMetrics{});
  EXPECT_EQ(p.next_step, 4);
  EXPECT_TRUE(p.finished);
}

}  // namespace
}  // namespace acan::runtime
