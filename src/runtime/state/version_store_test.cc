// The version store against mem:, one thread: versions found, applied by compare-and-set exactly
// once, and dropped when nothing can read them.
#include "runtime/state/version_store.h"

#include <gtest/gtest.h>

namespace acan::runtime {
namespace {

struct VersionStoreTest : ::testing::Test {
  void SetUp() override { space = std::move(OpenSpace("mem:").value()); }
  Status PutVersion(const std::string& shard, int64_t v, float x) {
    return space->Put(layout.State(shard, v), Value::FromVector(std::vector<float>{x}));
  }
  Status PutProposal(const std::string& shard, int64_t step, float x) {
    return space->Put(layout.Proposal(shard, step), Value::FromVector(std::vector<float>{x}));
  }
  size_t Count(const Key& key) { return space->ReadAll(key)->size(); }
  float ValueOf(const Key& key) { return (*space->Read(key))->value.As<float>()[0]; }

  Layout layout{"job"};
  std::unique_ptr<Space> space;
};

TEST_F(VersionStoreTest, LoadFindsTheNewestVersionAndDropsWhatNoTaskCanRead) {
  for (int64_t v : {3, 4, 5}) ASSERT_TRUE(PutVersion("param.l0.w", v, float(v)).ok());
  for (int64_t v : {4, 5}) ASSERT_TRUE(PutVersion("param.l0.b", v, float(v)).ok());
  VersionStore store(space.get(), &layout, /*window=*/2);
  ASSERT_TRUE(store.Load({"param.l0.w", "param.l0.b"}, /*oldest_step=*/5).ok());
  EXPECT_EQ(store.Current("param.l0.w"), 5);
  EXPECT_EQ(store.Current("param.l0.b"), 5);
  EXPECT_EQ(store.Min(), 5);
  EXPECT_EQ(store.Applied(), 10);
  // Window 2: a task reads a version >= 5 + 1 - 2 = 4; version 3 goes.
  EXPECT_EQ(Count(layout.State("param.l0.w", 3)), 0u);
  EXPECT_EQ(Count(layout.State("param.l0.w", 4)), 1u);
  // Step 4 is not complete yet (its updates were applied, the manager died before saving it):
  // a task of it may run again, reading version 4 - 2 + 1 = 3 at the oldest. Nothing more goes.
  ASSERT_TRUE(PutVersion("param.l0.w", 3, 3.0f).ok());
  VersionStore behind(space.get(), &layout, 2);
  ASSERT_TRUE(behind.Load({"param.l0.w", "param.l0.b"}, /*oldest_step=*/4).ok());
  EXPECT_EQ(Count(layout.State("param.l0.w", 3)), 1u);

  VersionStore missing(space.get(), &layout, 1);
  Status s = missing.Load({"param.l0.w", "param.l9.w"}, 0);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("param.l9.w"), std::string::npos) << s.message();
}

TEST_F(VersionStoreTest, AnUpdateAppliesOnceFromItsVersionAndLeavesDuplicatesAlone) {
  ASSERT_TRUE(PutVersion("param.l0.w", 0, 0.5f).ok());
  VersionStore store(space.get(), &layout, 1);
  ASSERT_TRUE(store.Load({"param.l0.w"}, 0).ok());
  int writes_allowed = 0;
  auto lease = [&] {
    ++writes_allowed;
    return Status::Ok();
  };
  // No proposal yet: NotFound, nothing written.
  auto none = store.Apply("param.l0.w", 0, lease);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.Current("param.l0.w"), 0);
  ASSERT_TRUE(PutProposal("param.l0.w", 0, 1.5f).ok());
  ASSERT_TRUE(PutProposal("param.l0.w", 0, 1.5f).ok());  // a duplicate handler's copy
  auto applied = store.Apply("param.l0.w", 0, lease);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ(*applied, VersionStore::Outcome::kApplied);
  EXPECT_EQ(store.Current("param.l0.w"), 1);
  EXPECT_EQ(ValueOf(layout.State("param.l0.w", 1)), 1.5f);
  // The proposal and its copy stay until the step's clean-up (RemoveStep) takes them.
  EXPECT_EQ(Count(layout.Proposal("param.l0.w", 0)), 2u);
  EXPECT_EQ(writes_allowed, 1);
  // The same update again, and one from the future: neither writes.
  EXPECT_EQ(*store.Apply("param.l0.w", 0, lease), VersionStore::Outcome::kDuplicate);
  EXPECT_EQ(*store.Apply("param.l0.w", 3, lease), VersionStore::Outcome::kGap);
  EXPECT_EQ(Count(layout.State("param.l0.w", 1)), 1u);
  EXPECT_EQ(writes_allowed, 1);
  store.DropStale("param.l0.w", 0);  // window 1: version 0 goes once version 1 is in
  EXPECT_EQ(Count(layout.State("param.l0.w", 0)), 0u);
  EXPECT_EQ(Count(layout.State("param.l0.w", 1)), 1u);
}

TEST_F(VersionStoreTest, AVersionAlreadyWrittenIsARepeatAndALostLeaseWritesNothing) {
  ASSERT_TRUE(PutVersion("param.l0.w", 0, 0.5f).ok());
  ASSERT_TRUE(PutVersion("param.l0.w", 1, 9.0f).ok());  // written by a manager that then died
  VersionStore store(space.get(), &layout, 1);
  ASSERT_TRUE(store.Load({"param.l0.w"}, 0).ok());
  EXPECT_EQ(store.Current("param.l0.w"), 1);

  ASSERT_TRUE(PutVersion("param.l1.w", 0, 0.5f).ok());
  ASSERT_TRUE(store.Load({"param.l1.w"}, 0).ok());
  ASSERT_TRUE(PutProposal("param.l1.w", 0, 2.0f).ok());
  auto refused = store.Apply("param.l1.w", 0, [] { return Status::Unavailable("lease lost"); });
  EXPECT_TRUE(refused.status().IsUnavailable());
  EXPECT_EQ(Count(layout.State("param.l1.w", 1)), 0u);
  EXPECT_EQ(Count(layout.Proposal("param.l1.w", 0)), 1u);  // kept for the successor
  EXPECT_EQ(store.Current("param.l1.w"), 0);

  ASSERT_TRUE(PutVersion("param.l1.w", 1, 2.0f).ok());  // the successor wrote it meanwhile
  auto repeat = store.Apply("param.l1.w", 0, nullptr);
  ASSERT_TRUE(repeat.ok());
  EXPECT_EQ(*repeat, VersionStore::Outcome::kRepeat);
  EXPECT_EQ(Count(layout.State("param.l1.w", 1)), 1u);  // never written twice
}

}  // namespace
}  // namespace acan::runtime
