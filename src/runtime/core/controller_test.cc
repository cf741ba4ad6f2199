// The controller on recorded latency traces: timeouts converge after a speed change, and a
// slow-down of every handler at once does not set off a retransmission storm.
#include "runtime/core/controller.h"

#include <gtest/gtest.h>

#include <random>

namespace acan::runtime {
namespace {

using namespace std::chrono;

nn::TaskSpec MicroBatchTask() {
  nn::TaskSpec t;
  t.key = "mb.s0.m0";
  t.type = nn::TaskType::kBackward;
  t.op = nn::TaskOp::kMicroBatch;
  t.widths = {44, 44, 1};
  t.rows = 8;
  t.batch = 8;
  t.inputs = {"x.s0.m0", "t.s0.m0", "param.l0.w", "param.l0.b", "param.l1.w", "param.l1.b"};
  t.outputs = {"met.s0.m0", "gw.s0.l0.m0", "gb.s0.l0.m0", "gw.s0.l1.m0", "gb.s0.l1.m0"};
  return t;
}

// Replays a latency trace in pouches of `pouch` tasks sent together (as the manager does): a task
// whose latency exceeds the timeout it was sent with is a spurious retransmission.
struct Replay {
  int spurious = 0;
  int tasks = 0;
  std::vector<double> timeouts_ms;
};
Replay Play(Controller& c, const nn::TaskSpec& t, const std::vector<double>& latencies_ms,
            int pouch) {
  Replay r;
  for (size_t i = 0; i < latencies_ms.size(); i += pouch) {
    const double timeout_ms = double(c.Timeout(t).count()) / 1e6;
    r.timeouts_ms.push_back(timeout_ms);
    for (size_t k = i; k < std::min(latencies_ms.size(), i + pouch); ++k) {
      ++r.tasks;
      if (latencies_ms[k] > timeout_ms) {
        ++r.spurious;
        c.Backoff(t);
      } else {
        c.Observe(t, duration_cast<nanoseconds>(duration<double, std::milli>(latencies_ms[k])));
      }
    }
  }
  return r;
}

std::vector<double> Trace(double mean_ms, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> jitter(0.0, 0.25);  // latencies spread as measured ones do
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(mean_ms * jitter(rng));
  return v;
}

ControllerOptions Options() {
  ControllerOptions o;
  o.min_timeout = milliseconds(1);
  o.handlers = 4;
  return o;
}

TEST(ControllerTest, FirstTimeoutComesFromTheProbe) {
  Controller c(Options());
  nn::TaskSpec t = MicroBatchTask();
  EXPECT_EQ(c.Timeout(t), duration_cast<nanoseconds>(Options().initial_timeout));
  c.Probe(t, milliseconds(2));
  EXPECT_NEAR(double(c.Timeout(t).count()) / 1e6, Options().multiplier * 2, 1e-6);
}

TEST(ControllerTest, TimeoutsConvergeAfterASpeedChange) {
  Controller c(Options());
  nn::TaskSpec t = MicroBatchTask();
  Play(c, t, Trace(1.0, 400, 1), 1);
  const double fast = double(c.Timeout(t).count()) / 1e6;
  EXPECT_GT(fast, 1.0);
  EXPECT_LT(fast, 15.0);
  Replay slow = Play(c, t, Trace(10.0, 400, 2), 1);  // every task now takes 10x as long
  const double after = double(c.Timeout(t).count()) / 1e6;
  EXPECT_GT(after, 10.0);
  EXPECT_LT(after, 150.0);
  EXPECT_NEAR(after / fast, 10.0, 5.0);  // the timeout follows the latency, about tenfold
  // Settled: the last half of the trace sees almost no spurious timeout.
  Replay settled = Play(c, t, Trace(10.0, 400, 3), 1);
  EXPECT_LE(settled.spurious, 4);
  EXPECT_LT(slow.spurious, 10);
}

TEST(ControllerTest, NoRetransmissionStormWhenEveryHandlerSlowsDown) {
  Controller c(Options());
  nn::TaskSpec t = MicroBatchTask();
  Play(c, t, Trace(1.0, 400, 4), 8);
  // Every handler slows down fivefold at once, with eight tasks in flight at a time.
  Replay r = Play(c, t, Trace(5.0, 800, 5), 8);
  EXPECT_LT(double(r.spurious) / double(r.tasks), 0.05) << r.spurious << " of " << r.tasks;
}

TEST(ControllerTest, CompletionRateDrivesPouchAndTaskSize) {
  ControllerOptions o = Options();
  o.adapt_task_size = true;
  o.task_size = 16;
  o.max_pouch = 12;
  o.window = 16;
  Controller c(o);
  nn::TaskSpec t = MicroBatchTask();
  const int64_t pouch0 = c.pouch();
  EXPECT_EQ(pouch0, 10);  // 2.5x the 4 handlers
  for (int i = 0; i < 64; ++i) c.Observe(t, milliseconds(1));
  EXPECT_GT(c.pouch(), pouch0);  // all in time: grow the pouch first
  for (int i = 0; i < 64; ++i) c.Observe(t, milliseconds(1));
  EXPECT_EQ(c.pouch(), 12);
  EXPECT_GT(c.task_size(), 16);  // then the task size
  const int64_t big = c.task_size();
  for (int i = 0; i < 32; ++i) c.Backoff(t);  // most tasks late: shrink the tasks
  EXPECT_LT(c.task_size(), big);
  const ControllerSnapshot snapshot = c.Snapshot();
  ASSERT_FALSE(snapshot.decisions.empty());
  const ControllerDecision& d = snapshot.decisions.back();
  EXPECT_EQ(d.action, "shrink task size");
  EXPECT_LT(d.completion_rate, 0.7);
}

TEST(ControllerTest, InitialTaskSizeIsAFractionOfTheCache) {
  int64_t rows = InitialTaskSize({784, 1024, 1024, 10}, false, 64);
  EXPECT_GE(rows, 1);
  EXPECT_LE(rows, 64);
  int64_t edge = InitialTaskSize({784, 1024, 1024, 10}, true, 64);
  EXPECT_GE(edge, 8);
  EXPECT_LE(edge, 1024);
}

// With the cache size given, the starting size is the largest that fits a quarter of it: a tile
// edge whose square of floats does, or the micro-batch rows whose activations and gradients do,
// within the bounds (8..widest layer, 1..batch).
TEST(ControllerTest, InitialTaskSizeFillsAQuarterOfAGivenCache) {
  const std::vector<int64_t> widths = {784, 1024, 1024, 10};
  double row_bytes = 0;
  for (int64_t w : widths) row_bytes += 8.0 * double(w);
  for (int64_t l3 : {int64_t{1} << 20, int64_t{4} << 20, int64_t{3} << 20}) {
    const double quarter = double(l3) / 4;
    const int64_t edge = InitialTaskSize(widths, true, 64, l3);
    EXPECT_LE(4.0 * double(edge * edge), quarter) << l3;
    EXPECT_GT(4.0 * double((edge + 1) * (edge + 1)), quarter) << l3;
    const int64_t rows = InitialTaskSize(widths, false, 1 << 20, l3);
    EXPECT_LE(double(rows) * row_bytes, quarter) << l3;
    EXPECT_GT(double(rows + 1) * row_bytes, quarter) << l3;
  }
  // The bounds: a huge cache gives the widest layer or the whole batch, a tiny one 8 or 1 row.
  EXPECT_EQ(InitialTaskSize(widths, true, 64, int64_t{1} << 40), 1024);
  EXPECT_EQ(InitialTaskSize(widths, false, 64, int64_t{1} << 40), 64);
  EXPECT_EQ(InitialTaskSize(widths, true, 64, 1024), 8);
  EXPECT_EQ(InitialTaskSize(widths, false, 64, 1024), 1);
}

}  // namespace
}  // namespace acan::runtime
