// Whole-run benchmark of the fault-free runtime against the reference trainer on the same work
// (docs/benchmarks.md), measured in the same run:
//  1. MLP 784-1024-1024-10, batch 64, data partition in micro-batches of 32: the reference on one
//     thread, then the runtime with 2 handlers (window 1, bitwise the same weights): the speed-up.
//  2. The design note's 44-44-1 toy, batch 1, 4 handlers: samples/s at window 1 and 8, printed
//     as `runtime_toy_w<W> samples_per_s=<x>` for bench/runtime_compare.sh to set against PyTorch.
//
//   runtime_compare [--steps N]
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "nn/kernels.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "nn/trainer.h"
#include "runtime/job_runner.h"
#include "runtime/process.h"

using namespace acan;

namespace {

nn::JobConfig MlpJob(int64_t samples) {
  auto job = nn::ParseJobString(R"(
[model]
layers = [784, 1024, 1024, 10]
activation = "relu"
loss = "softmax_cross_entropy"
[data]
source = "synthetic"
samples = )" + std::to_string(samples) +
                                R"(
[train]
epochs = 1
batch = 64
lr = 0.01
seed = 3
[partition]
strategy = "data"
task_size = 32
)");
  if (!job.ok()) {
    std::fprintf(stderr, "%s\n", job.status().ToString().c_str());
    std::exit(1);
  }
  return *job;
}

nn::JobConfig ToyJob(int64_t samples, const char* strategy = "data", int64_t task_size = 0) {
  nn::JobConfig job = *nn::ParseJobString(R"(
[model]
layers = [44, 44, 1]
activation = "tanh"
loss = "mse"
[data]
source = "synthetic"
samples = )" + std::to_string(samples) +
                             R"(
[train]
epochs = 1
batch = 1
lr = 0.05
seed = 42
[partition]
strategy = "data"
)");
  job.partition.strategy = *nn::ParseStrategy(strategy);
  job.partition.task_size = task_size;
  return job;
}

template <typename T>
T Check(Result<T> r) {
  if (!r.ok()) {
    std::fprintf(stderr, "runtime_compare: %s\n", r.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoll(argv[i + 1]);
  }
  runtime::TuneProcess();
  // 1. MLP: reference vs 2 handlers.
  nn::JobConfig job = MlpJob(steps * 64);
  nn::Model init = Check(nn::InitialModel(job));
  nn::Dataset data = Check(nn::LoadDataset(job));
  double ref_rate = 0, run_rate = 0, run2_rate = 0;
  std::string ref_sha, run_sha;
  for (int round = 0; round < 2; ++round) {  // round 0 warms up both
    auto trainer = Check(nn::ReferenceTrainer::Create(job, init, data));
    auto t0 = Clock::now();
    Check(trainer->Train());
    double ref_s = std::chrono::duration<double>(Clock::now() - t0).count();
    ref_sha = nn::ModelSha256(trainer->CurrentModel());
    runtime::RunOptions o;
    o.handlers = 2;
    o.window = 1;
    o.standby = false;
    auto run = Check(runtime::RunJob(job, data, init, o));
    run_sha = nn::ModelSha256(run.model);
    if (round == 1) {
      for (const auto& h : run.handlers) {
        std::printf("  handler %d: %lld tasks, busy %.2f s of %.2f s (%.0f%%)\n", h.id,
                    (long long)h.tasks, h.busy_s, run.wall_s, 100 * h.busy_s / run.wall_s);
      }
    }
    ref_rate = double(data.rows) / ref_s;
    run_rate = double(data.rows) / run.wall_s;
    o.window = 2;  // the next step's micro-batches overlap this step's updates
    run2_rate = double(data.rows) / Check(runtime::RunJob(job, data, init, o)).wall_s;
  }
  std::printf("MLP 784-1024-1024-10, batch 64, data partition (micro-batches of 32), %lld steps\n",
              (long long)steps);
  std::printf("  reference trainer, 1 thread   %8.0f samples/s\n", ref_rate);
  std::printf("  runtime, 2 handlers, window 1 %8.0f samples/s\n", run_rate);
  std::printf("  speed-up %.2f (goal >= 1.8); weights bitwise equal: %s\n", run_rate / ref_rate,
              ref_sha == run_sha ? "yes" : "NO");
  std::printf("  runtime, 2 handlers, window 2 %8.0f samples/s, speed-up %.2f\n", run2_rate,
              run2_rate / ref_rate);

  // 2. The toy at batch 1 with 4 handlers.
  nn::JobConfig toy = ToyJob(3000);
  nn::Model tinit = Check(nn::InitialModel(toy));
  nn::Dataset tdata = Check(nn::LoadDataset(toy));
  auto trainer = Check(nn::ReferenceTrainer::Create(toy, tinit, tdata));
  auto t0 = Clock::now();
  Check(trainer->Train());
  std::printf("Toy 44-44-1, batch 1\n");
  std::printf("reference_toy samples_per_s=%.0f\n",
              double(tdata.rows) / std::chrono::duration<double>(Clock::now() - t0).count());
  for (int64_t w : {1, 8}) {
    runtime::RunOptions o;
    o.handlers = 4;
    o.window = w;
    o.standby = false;
    auto run = Check(runtime::RunJob(toy, tdata, tinit, o));
    std::printf("runtime_toy_w%lld samples_per_s=%.0f\n", (long long)w,
                double(tdata.rows) / run.wall_s);
  }
  // The same SGD, a chain of mini-batches per task: one hand-over serves many steps.
  const std::string want = nn::ModelSha256(trainer->CurrentModel());
  for (int64_t k : {int64_t{16}, int64_t{64}, int64_t{0}}) {
    nn::JobConfig chain = ToyJob(3000, "chain", k);
    runtime::RunOptions o;
    o.handlers = 4;
    o.window = 1;
    o.standby = false;
    auto run = Check(runtime::RunJob(chain, tdata, tinit, o));
    std::printf("runtime_toy_chain%lld samples_per_s=%.0f bitwise=%s\n",
                (long long)(k ? k : nn::Plan::ChainSteps(chain, tdata.rows)),
                double(tdata.rows) / run.wall_s,
                nn::ModelSha256(run.model) == want ? "yes" : "NO");
  }
  return ref_sha == run_sha ? 0 : 1;
}
