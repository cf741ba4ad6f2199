// Reference-trainer throughput (samples/s) and the GEMM rate it achieves, one thread.
//   MLP 784-1024-1024-10, relu, softmax cross entropy, batch 64, each strategy;
//   the design note's toy 44-44-1, tanh, mse, batch 1;
//   raw cblas_sgemm at the MLP's shapes.
// Counters: samples_per_s, gflops (model GEMM FLOPs x samples/s) and peak_frac (of the
// 117 GFLOP/s FP32 single-core peak measured on this machine, DESIGN.md section 10).
#include <benchmark/benchmark.h>

#include <vector>

#include "nn/dataset.h"
#include "nn/kernels.h"
#include "nn/model.h"
#include "nn/trainer.h"

namespace acan::nn {
namespace {

constexpr double kPeakGflops = 117.0;

// GEMM FLOPs of one training sample: forward, weight gradient and (except the first layer)
// input gradient, 2 FLOPs per multiply-add.
double FlopsPerSample(const std::vector<int64_t>& w) {
  double macs = 0;
  for (size_t l = 0; l + 1 < w.size(); ++l) macs += (l == 0 ? 2.0 : 3.0) * w[l] * w[l + 1];
  return 2 * macs;
}

JobConfig MlpJob(Strategy strategy, int64_t task_size) {
  JobConfig job;
  job.model.layers = {784, 1024, 1024, 10};
  job.model.activation = Activation::kRelu;
  job.model.loss = LossKind::kSoftmaxCrossEntropy;
  job.model.init = "kaiming_uniform";
  job.data.samples = 4096;
  job.train.batch = 64;
  job.train.lr = 0.01;
  job.partition.strategy = strategy;
  job.partition.task_size = task_size;
  return job;
}

JobConfig ToyJob() {
  JobConfig job;
  job.model.layers = {44, 44, 1};
  job.model.activation = Activation::kTanh;
  job.model.loss = LossKind::kMse;
  job.data.samples = 100;
  job.train.batch = 1;
  job.train.lr = 0.05;
  job.partition.strategy = Strategy::kData;
  return job;
}

void RunTrainer(benchmark::State& state, const JobConfig& job) {
  InitBlas();
  auto data = LoadDataset(job);
  auto trainer = ReferenceTrainer::Create(job, *InitialModel(job), *data);
  if (!trainer.ok()) {
    state.SkipWithError(trainer.status().ToString().c_str());
    return;
  }
  for (int i = 0; i < 3; ++i) (void)(*trainer)->Step();  // warm up caches and allocator
  int64_t samples = 0;
  for (auto _ : state) {
    Result<StepReport> r = (*trainer)->Step();
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    samples += r->rows;
  }
  const double flops = FlopsPerSample(job.model.layers);
  state.counters["samples_per_s"] = benchmark::Counter(samples, benchmark::Counter::kIsRate);
  state.counters["gflops"] =
      benchmark::Counter(samples * flops * 1e-9, benchmark::Counter::kIsRate);
  state.counters["peak_frac"] =
      benchmark::Counter(samples * flops * 1e-9 / kPeakGflops, benchmark::Counter::kIsRate);
}

void BM_MlpData(benchmark::State& s) { RunTrainer(s, MlpJob(Strategy::kData, s.range(0))); }
void BM_MlpPipeline(benchmark::State& s) { RunTrainer(s, MlpJob(Strategy::kPipeline, s.range(0))); }
void BM_MlpTiles(benchmark::State& s) { RunTrainer(s, MlpJob(Strategy::kTiles, s.range(0))); }
void BM_Toy(benchmark::State& s) { RunTrainer(s, ToyJob()); }

BENCHMARK(BM_MlpData)->Arg(0)->Arg(16)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_MlpPipeline)->Arg(0)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_MlpTiles)->Arg(256)->Arg(512)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_Toy)->Unit(benchmark::kMicrosecond)->MinTime(1.0);

// Raw SGEMM at the MLP's forward shapes: rows x out = rows x in * (out x in)^T.
void BM_Sgemm(benchmark::State& state) {
  InitBlas();
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  std::vector<float> a(m * k, 0.5f), b(n * k, 0.25f), c(m * n);
  for (auto _ : state) {
    Gemm(false, true, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  const double flops = 2.0 * m * n * k;
  state.counters["gflops"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_frac"] =
      benchmark::Counter(flops * 1e-9 / kPeakGflops, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Sgemm)
    ->Args({64, 1024, 784})
    ->Args({64, 1024, 1024})
    ->Args({1024, 1024, 64})
    ->Args({1024, 1024, 1024});

}  // namespace
}  // namespace acan::nn

BENCHMARK_MAIN();
