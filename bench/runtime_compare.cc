// Whole-run benchmark of the fault-free runtime against the reference trainer on the same work
// (docs/benchmarks.md), measured in the same run:
//  1. MLP 784-1024-1024-10, batch 64, data partition in micro-batches of 32: the reference on one
//     thread, then the runtime with 2 handlers (window 1, bitwise the same weights): the speed-up.
//  2. The design note's 44-44-1 toy, batch 1, 4 handlers: samples/s at window 1 and 8, printed
//     as `runtime_toy_w<W> samples_per_s=<x>` for bench/runtime_compare.sh to set against PyTorch.
//
//   runtime_compare [--steps N]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nn/kernels.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "nn/trainer.h"
#include "runtime/job_runner.h"
#include "runtime/process.h"

using namespace acan;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string Join(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += (s.empty() ? "" : " ") + std::to_string(x).substr(0, 4);
  return s;
}

nn::JobConfig MlpJob(int64_t samples, int64_t batch, int64_t micro) {
  nn::JobConfig job;
  job.model.layers = {784, 1024, 1024, 10};
  job.model.activation = nn::Activation::kRelu;
  job.model.loss = nn::LossKind::kSoftmaxCrossEntropy;
  job.data.samples = samples;
  job.train.epochs = 1;
  job.train.batch = batch;
  job.train.lr = 0.01;
  job.train.seed = 3;
  job.partition.task_size = micro;
  return job;
}

// The design note's 44-44-1 toy (JobConfig's defaults) for one epoch of `samples`.
nn::JobConfig ToyJob(int64_t samples, nn::Strategy strategy = nn::Strategy::kData,
                     int64_t task_size = 0) {
  nn::JobConfig job;
  job.data.samples = samples;
  job.train.epochs = 1;
  job.partition.strategy = strategy;
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
  int rounds = 3;
  const char* trace_path = nullptr;  // --trace FILE: trace.json of the last window-1 MLP run
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--trace")) trace_path = argv[i + 1];
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
  }
  runtime::TuneProcess();
  // 1. MLP: the reference vs 2 handlers, at two mini-batch sizes (micro-batches of half of it,
  // one per handler). Measured in alternation, `rounds` times after a warm-up; the speed-up is
  // the median of the rounds' ratios (this VM's speed drifts by 20% between seconds).
  bool all_equal = true;
  for (auto [batch, micro] : {std::pair<int64_t, int64_t>{64, 32}, {256, 128}}) {
    nn::JobConfig job = MlpJob(steps * batch, batch, micro);
    nn::Model init = Check(nn::InitialModel(job));
    nn::Dataset data = Check(nn::LoadDataset(job));
    std::vector<double> ref_rates, w1_rates, w2_rates, w1_ratios, w2_ratios;
    std::string ref_sha, run_sha;
    std::vector<runtime::HandlerReport> last_handlers;
    double last_wall = 0;
    for (int round = 0; round <= rounds; ++round) {  // round 0 warms up both
      auto trainer = Check(nn::ReferenceTrainer::Create(job, init, data));
      auto t0 = Clock::now();
      Check(trainer->Train());
      const double ref =
          double(data.rows) / std::chrono::duration<double>(Clock::now() - t0).count();
      ref_sha = nn::ModelSha256(trainer->CurrentModel());
      runtime::RunOptions o;
      o.handlers = 2;
      o.window = 1;
      o.standby = false;
      o.pin_handlers = true;
      if (trace_path && round == rounds && batch == 64)
        o.trace = std::make_shared<runtime::TraceRecorder>();
      auto run = Check(runtime::RunJob(job, data, init, o));
      if (o.trace) {
        std::FILE* f = std::fopen(trace_path, "w");
        if (f) std::fputs(o.trace->ToJson(o.handlers).c_str(), f), std::fclose(f);
        o.trace.reset();
      }
      run_sha = nn::ModelSha256(run.model);
      all_equal = all_equal && run_sha == ref_sha;
      last_handlers = run.handlers;
      last_wall = run.wall_s;
      const double w1 = double(data.rows) / run.wall_s;
      o.window = 2;  // the next step's micro-batches overlap this step's updates
      const double w2 = double(data.rows) / Check(runtime::RunJob(job, data, init, o)).wall_s;
      if (round == 0) continue;
      ref_rates.push_back(ref), w1_rates.push_back(w1), w2_rates.push_back(w2);
      w1_ratios.push_back(w1 / ref), w2_ratios.push_back(w2 / ref);
    }
    std::printf(
        "MLP 784-1024-1024-10, batch %lld, data partition (micro-batches of %lld), "
        "%lld samples, %d rounds\n",
        (long long)batch, (long long)micro, (long long)data.rows, rounds);
    for (const auto& h : last_handlers) {
      std::printf("  handler %d: %lld tasks, busy %.2f s of %.2f s (%.0f%%)\n", h.id,
                  (long long)h.tasks, h.busy_s, last_wall, 100 * h.busy_s / last_wall);
    }
    std::printf("  reference trainer, 1 thread   %8.0f samples/s (median)\n", Median(ref_rates));
    std::printf("  runtime, 2 handlers, window 1 %8.0f samples/s (median)\n", Median(w1_rates));
    std::printf("  speed-up %.2f, median of rounds %s (goal >= 1.8); weights bitwise equal: %s\n",
                Median(w1_ratios), Join(w1_ratios).c_str(), ref_sha == run_sha ? "yes" : "NO");
    std::printf("  runtime, 2 handlers, window 2 %8.0f samples/s, speed-up %.2f\n",
                Median(w2_rates), Median(w2_ratios));
  }

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
    nn::JobConfig chain = ToyJob(3000, nn::Strategy::kChain, k);
    runtime::RunOptions o;
    o.handlers = 4;
    o.window = 1;
    o.standby = false;
    auto run = Check(runtime::RunJob(chain, tdata, tinit, o));
    std::printf("runtime_toy_chain%lld samples_per_s=%.0f bitwise=%s\n",
                (long long)(k ? k : nn::Plan::ChainSteps(chain, tdata.rows)),
                double(tdata.rows) / run.wall_s, nn::ModelSha256(run.model) == want ? "yes" : "NO");
  }
  return all_equal ? 0 : 1;
}
