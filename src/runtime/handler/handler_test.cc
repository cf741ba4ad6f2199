// A handler on its own, on one thread and a clock the test moves: what it counts of its time.
#include "runtime/handler/handler.h"

#include <gtest/gtest.h>

#include "runtime/testing/manual_env.h"
#include "space/space_wrapper.h"

namespace acan::runtime {
namespace {

using namespace std::chrono_literals;

// Takes that find nothing, each after `wait` on the test's clock (a take waiting out its poll).
class EmptyWaits final : public SpaceWrapper {
 public:
  EmptyWaits(Space* inner, const ManualEnv* env, std::chrono::nanoseconds wait)
      : SpaceWrapper(inner), env_(env), wait_(wait) {}
  using SpaceWrapper::Take;
  Result<std::vector<Tuple>> Take(const Pattern& p, size_t n, Deadline) override {
    env_->Advance(wait_);
    return inner()->Take(p, n, Deadline::Now());
  }

 private:
  const ManualEnv* env_;
  std::chrono::nanoseconds wait_;
};

TEST(HandlerTest, ItsWaitsForATaskAreIdleTimeAddedAsEachEnds) {
  ManualEnv env;
  auto mem = OpenSpace("mem:");
  ASSERT_TRUE(mem.ok());
  EmptyWaits space(mem->get(), &env, 50ms);
  HandlerStats stats;
  HandlerSettings o;
  o.env = &env;
  std::vector<int64_t> idle_seen;  // at each look at whether the job is over: after each wait
  o.until = [&] {
    idle_seen.push_back(stats.idle_ns.load());
    return idle_seen.size() == 4;
  };
  Handler handler(&space, Layout("job"), o, &stats);
  const std::atomic<bool> stop{false};
  handler.Run(stop);
  EXPECT_EQ(idle_seen, (std::vector<int64_t>{50'000'000, 100'000'000, 150'000'000, 200'000'000}));
  EXPECT_EQ(stats.busy_ns.load(), 0);
  EXPECT_EQ(stats.tasks.load(), 0);
}

}  // namespace
}  // namespace acan::runtime
