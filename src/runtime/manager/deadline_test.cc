// The manager's deadline paths on a clock the test moves (runtime/state/env.h's ManualEnv), with
// the test playing the handler: a task whose deadline passes is sent again only when nothing in the
// space says it is still coming, and with the reason that the space shows. Nothing here sleeps
// for a deadline: each case sets up the claim and alive tuples, jumps the clock past the deadline
// and waits for the manager to act (or to look, for the cases where it must not act).
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "nn/dataset.h"
#include "nn/model.h"
#include "runtime/core/messages.h"
#include "runtime/manager/manager.h"
#include "runtime/state/env.h"
#include "runtime/testing/manual_env.h"
#include "runtime/view/trace.h"
#include "space/space_wrapper.h"

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

// Counts the reads of each key made through it, so a test can wait until the manager has looked.
class ReadCounter final : public SpaceWrapper {
 public:
  using Space::Read;
  using SpaceWrapper::SpaceWrapper;
  Result<std::optional<Tuple>> Read(const Pattern& p) override {
    auto r = inner()->Read(p);
    std::lock_guard lock(mu_);
    ++reads_[p.str()];
    cv_.notify_all();
    return r;
  }
  int64_t reads(const Key& key) {
    std::lock_guard lock(mu_);
    return reads_[key.str()];
  }
  // True once `key` has been read more than `seen` times (within a generous real-time bound).
  bool WaitForRead(const Key& key, int64_t seen) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 30s, [&] { return reads_[key.str()] > seen; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int64_t> reads_;
};

constexpr auto kTimeout = 1s;  // on the manual clock

struct DeadlineTest : ::testing::Test {
  void SetUp() override {
    auto parsed = ParseJobString(R"(
[model]
layers = [4, 3, 2]
[data]
source = "synthetic"
samples = 4
[train]
epochs = 1
batch = 4
[partition]
strategy = "data"
)");
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    job = *parsed;
    data = *nn::LoadDataset(job);
    inner = *OpenSpace("mem:");
    space = std::make_unique<ReadCounter>(inner.get());
    ASSERT_TRUE(Manager::InitJob(inner.get(), layout, job, *nn::InitialModel(job)).ok());
    ManagerSettings o;
    o.env = &env;
    o.probe = false;
    o.lease = std::chrono::hours(1);  // renewed every 20 minutes of the manual clock
    o.controller.initial_timeout = kTimeout;
    o.controller.min_timeout = kTimeout;
    o.trace = &trace;
    manager = std::make_unique<Manager>(space.get(), layout, &job, &data, o);
    thread = std::thread([this] { status = manager->Run(stop); });
    // The first task it sends: the test is the only handler.
    auto got = inner->Take(layout.AnyTaskPattern(), 1, Deadline::After(30s));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    task = (*got)[0];
    auto m = DecodeTaskMessage(task.value);
    ASSERT_TRUE(m.ok());
    task_key = m->spec.key;
    ASSERT_EQ(m->attempt, 1);
  }
  void TearDown() override {
    stop.store(true);
    if (thread.joinable()) thread.join();
  }

  void Claim(int64_t incarnation, std::chrono::nanoseconds lasts) {
    ASSERT_TRUE(
        inner
            ->Put(layout.Claim(task_key, 0), Value::FromVector(std::vector<int64_t>{
                                                 incarnation, env.WallNs() + lasts.count()}))
            .ok());
  }
  void Alive(int64_t incarnation) {
    ASSERT_TRUE(
        inner->Put(layout.Alive(0), Value::FromVector(std::vector<int64_t>{incarnation})).ok());
  }
  // The clock jumps by `by`; returns once the manager has looked at the claims' handler (a
  // deadline check reads the alive tuple) or the queued task, whichever `looked_at` is.
  void PassDeadline(std::chrono::nanoseconds by, const Key& looked_at) {
    const int64_t seen = space->reads(looked_at);
    env.Advance(by);
    ASSERT_TRUE(space->WaitForRead(looked_at, seen)) << "the manager never looked";
  }
  // The copy sent again (attempt 2), within a generous real-time bound.
  int32_t Resent() {
    auto got = inner->Take(layout.Task(Type(), task_key), 1, Deadline::After(30s));
    if (!got.ok()) return 0;
    return DecodeTaskMessage((*got)[0].value)->attempt;
  }
  nn::TaskType Type() { return DecodeTaskMessage(task.value)->spec.type; }
  // The reasons the manager gave for sending the task again (its trace).
  std::vector<std::string> Reasons() {
    std::vector<std::string> out;
    const nlohmann::json events = nlohmann::json::parse(trace.ToJson(0));
    for (const auto& e : events.at("traceEvents")) {
      if (e.value("name", "") == "retransmit " + task_key) out.push_back(e["args"]["reason"]);
    }
    return out;
  }

  JobConfig job;
  nn::Dataset data;
  Layout layout{"job"};
  ManualEnv env;
  std::unique_ptr<Space> inner;
  std::unique_ptr<ReadCounter> space;
  TraceRecorder trace;
  std::unique_ptr<Manager> manager;
  std::atomic<bool> stop{false};
  Status status;
  std::thread thread;
  Tuple task;
  std::string task_key;
};

TEST_F(DeadlineTest, ATakenTaskWithNoClaimIsSentAgainAtItsDeadline) {
  PassDeadline(3 * kTimeout, layout.Task(Type(), task_key));
  EXPECT_EQ(Resent(), 2);
  EXPECT_EQ(Reasons(), std::vector<std::string>{"timeout"});
}

TEST_F(DeadlineTest, AQueuedTaskIsNotSentAgain) {
  ASSERT_TRUE(inner->Put(task.key, task.value).ok());  // back in the queue: nobody took it yet
  for (int i = 0; i < 3; ++i) PassDeadline(3 * kTimeout, layout.Task(Type(), task_key));
  EXPECT_EQ(inner->ReadAll(task.key)->size(), 1u);  // the one copy, still attempt 1
  EXPECT_EQ(DecodeTaskMessage((*inner->Read(task.key))->value)->attempt, 1);
  EXPECT_TRUE(Reasons().empty());
}

TEST_F(DeadlineTest, ALiveClaimHoldsItUntilItLooksHung) {
  Alive(1);
  Claim(1, std::chrono::hours(2));
  PassDeadline(3 * kTimeout, layout.Alive(0));  // slow, not lost: the deadline moves on
  EXPECT_FALSE(inner->Read(task.key)->has_value());
  EXPECT_TRUE(Reasons().empty());
  PassDeadline(20 * kTimeout, layout.Alive(0));  // past 16 timeouts since it was sent
  EXPECT_EQ(Resent(), 2);
  EXPECT_EQ(Reasons(), std::vector<std::string>{"hung"});
}

TEST_F(DeadlineTest, ALapsedClaimIsSentAgain) {
  Alive(1);
  Claim(1, kTimeout / 2);
  PassDeadline(3 * kTimeout, layout.Alive(0));
  EXPECT_EQ(Resent(), 2);
  EXPECT_EQ(Reasons(), std::vector<std::string>{"claim-lapsed"});
}

TEST_F(DeadlineTest, AClaimOfADeadHandlerIsSentAgain) {
  Claim(1, std::chrono::hours(2));  // no alive tuple: its handler is gone
  PassDeadline(3 * kTimeout, layout.Alive(0));
  EXPECT_EQ(Resent(), 2);
  EXPECT_EQ(Reasons(), std::vector<std::string>{"handler-died"});
}

TEST_F(DeadlineTest, AClaimOfAnEarlierIncarnationIsSentAgain) {
  Alive(2);  // it came back since it claimed the task
  Claim(1, std::chrono::hours(2));
  PassDeadline(3 * kTimeout, layout.Alive(0));
  EXPECT_EQ(Resent(), 2);
  EXPECT_EQ(Reasons(), std::vector<std::string>{"handler-restarted"});
}

// Another manager holds the lease when this one comes to renew it: it stops, Unavailable.
TEST_F(DeadlineTest, AManagerThatLostItsLeaseStops) {
  auto lease = inner->ReadCell(layout.Lease());
  ASSERT_TRUE(lease.ok() && lease->revision != 0);
  const int64_t far_ms = env.WallNs() / 1000000 + 24 * 3600 * 1000;
  ASSERT_TRUE(inner
                  ->SwapCell(layout.Lease(), EncodeLeaseMessage({"usurper", far_ms}),
                             lease->revision, Deadline::After(30s))
                  .ok());
  env.Advance(std::chrono::minutes(30));  // past a third of its lease: it renews
  thread.join();
  EXPECT_TRUE(status.IsUnavailable()) << status.ToString();
  EXPECT_NE(status.message().find("usurper"), std::string::npos) << status.ToString();
}

// Managers that start together both see a new job: one sets it up, the other waits for it, so
// each shard's version 0 is put once (the oracle across processes counts a second put as a copy).
TEST_F(DeadlineTest, ManagersSettingUpOneNewJobAtOnceSetItUpOnce) {
  const Layout other("job2");
  std::vector<std::thread> managers;
  for (int i = 0; i < 4; ++i) {
    managers.emplace_back([&] {
      EXPECT_TRUE(Manager::InitJob(inner.get(), other, job, *nn::InitialModel(job)).ok());
    });
  }
  for (auto& t : managers) t.join();
  auto versions = inner->ReadAll("job2.p.>");
  ASSERT_TRUE(versions.ok());
  std::set<std::string> keys;
  for (const Tuple& t : *versions) keys.insert(t.key.str());
  EXPECT_FALSE(keys.empty());
  EXPECT_EQ(versions->size(), keys.size()) << "a version 0 was put more than once";
  EXPECT_EQ(inner->ReadAll(other.ManagerState())->size(), 1u);
}

}  // namespace
}  // namespace acan::runtime
