// A convolutional network (a list of layers: convolution, pooling, dropout) trained by the runtime
// in process: bitwise the reference trainer's weights with the data, pipeline, chain and tiles
// strategies, under handler and manager crashes too, every version exactly once at the independent
// oracle.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/testing/watched_run.h"

namespace acan::runtime {
namespace {

JobConfig CnnJob(const std::string& strategy, int64_t task_size) {
  auto job = ParseJobString(fmt::format(R"([model]
input_shape = [2, 8, 8]
loss = "softmax_cross_entropy"
[[model.layer]]
type = "conv2d"
in_channels = 2
out_channels = 4
kernel_size = 3
padding = 1
[[model.layer]]
type = "relu"
[[model.layer]]
type = "max_pool2d"
kernel_size = 2
[[model.layer]]
type = "conv2d"
in_channels = 4
out_channels = 6
kernel_size = [3, 2]
bias = false
[[model.layer]]
type = "tanh"
[[model.layer]]
type = "avg_pool2d"
kernel_size = 2
stride = 1
[[model.layer]]
type = "flatten"
[[model.layer]]
type = "dropout"
p = 0.25
[[model.layer]]
type = "linear"
in_features = 12
out_features = 4
[data]
source = "synthetic"
samples = 192
[train]
epochs = 2
batch = 16
lr = 0.05
momentum = 0.9
seed = 9
[partition]
strategy = "{}"
task_size = {}
)",
                                        strategy, task_size),
                            "cnn");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return *job;
}

TEST(CnnRuntimeTest, EveryStrategyIsBitwiseTheReferenceUnderCrashes) {
  const char* env = std::getenv("ACAN_FAULT_SEED");
  const uint64_t seed = env ? std::strtoull(env, nullptr, 10) : 4;
  SCOPED_TRACE(fmt::format("seed {} (ACAN_FAULT_SEED={} replays it)", seed, seed));
  // Crash points within the writes each role makes (a chain's few tasks make few).
  struct Case {
    std::string strategy;
    int64_t task_size, manager_range, handler_range;
  };
  for (const auto& [strategy, task_size, manager_range, handler_range] :
       {Case{"data", 4, 300, 300}, Case{"pipeline", 4, 400, 400}, Case{"chain", 3, 40, 16},
        Case{"tiles", 2, 800, 800}}) {
    SCOPED_TRACE(strategy);
    const JobConfig job = CnnJob(strategy, task_size);
    const Reference ref = ReferenceRun(job);
    // The pipeline's stages run the data strategy's micro-batches: the same bytes.
    if (strategy == "pipeline") {
      EXPECT_EQ(ref.weights, ReferenceRun(CnnJob("data", 4)).weights);
    }
    RunOptions o;
    o.handlers = 3;
    auto plain = RunWatched(job, ref.data, ref.init, o);
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    EXPECT_EQ(nn::ModelSha256(plain->model), ref.weights);
    o.standby = true;
    auto crashed = RunWatched(job, ref.data, ref.init, o,
                              RunHooks::SeededCrashes(seed, manager_range, handler_range, 2));
    ASSERT_TRUE(crashed.ok()) << crashed.status().ToString();
    int64_t handler_crashes = 0;
    for (const HandlerFigures& h : crashed->handlers) handler_crashes += h.crashes;
    EXPECT_GT(crashed->manager_crashes, 0);
    EXPECT_GT(handler_crashes, 0);
    EXPECT_EQ(nn::ModelSha256(crashed->model), ref.weights);
  }
}

}  // namespace
}  // namespace acan::runtime
