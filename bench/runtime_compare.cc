// Whole-run benchmark of the fault-free runtime against the reference trainer on the same work
// (docs/benchmarks.md), measured in the same run:
//  1. MLP 784-1024-1024-10, batch 64, data partition in micro-batches of 32: the reference on one
//     thread, then the runtime with 2 handlers (window 1, bitwise the same weights): the speed-up.
//  2. The design note's 44-44-1 toy, batch 1, 4 handlers: samples/s at window 1 and 8, printed
//     as `runtime_toy_w<W> samples_per_s=<x>` for bench/runtime_compare.sh to set against PyTorch.
//
//   runtime_compare [--steps N] [--rounds R] [--trace FILE] [--mlp-only | --toy-only]
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "nn/dataset.h"
#include "nn/executor.h"
#include "nn/kernels.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "nn/trainer.h"
#include "runtime/run/job_runner.h"
#include "runtime/run/process.h"

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

JobConfig MlpJob(int64_t samples, int64_t batch, int64_t micro) {
  JobConfig job;
  job.model.layers = {784, 1024, 1024, 10};
  job.model.activation = Activation::kRelu;
  job.model.loss = LossKind::kSoftmaxCrossEntropy;
  job.data.samples = samples;
  job.train.epochs = 1;
  job.train.batch = batch;
  job.train.lr = 0.01;
  job.train.seed = 3;
  job.partition.task_size = micro;
  return job;
}

// The design note's 44-44-1 toy (JobConfig's defaults) for one epoch of `samples`.
JobConfig ToyJob(int64_t samples, Strategy strategy = Strategy::kData, int64_t task_size = 0) {
  JobConfig job;
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

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// The ceiling of any runtime here: the plan's tasks on two bare threads bound to the two CPUs,
// without a space, manager, messages or hand-overs. A step is its phases (runs of tasks of one
// kind: the micro-batches, then the updates), each split between the threads by work (largest
// first, to the less loaded), with a barrier after each. Like the runtime, an update writes a new
// buffer (here its output slot, swapped with the shard's state at the barrier). Batches are cut
// before the clock starts. With threads = 1 the second thread only waits at the barriers: the plan
// run in order, as the reference trainer runs it. Bare holds samples/s, the final weights'
// SHA-256 (the reference's bits) and each op's phases' mean time per step.
struct Bare {
  double samples_per_s = 0;
  std::string sha;
  std::map<nn::TaskOp, double> phase_ms;
};
Bare BareThreads(const JobConfig& job, const nn::Model& init, const nn::Dataset& data,
                 int threads) {
  using Buf = std::vector<float>;
  const nn::Plan plan = Check(nn::Plan::Create(job, -1, data.rows));
  nn::Batcher batcher(&data, plan.step_batch(), job.data.shuffle, job.train.seed);
  const int64_t steps = batcher.BatchesPerEpoch() * job.train.epochs;
  std::unordered_map<std::string, Buf> state;
  for (auto& [k, v] : plan.InitialState(init)) state[k] = std::move(v);
  struct Work {
    const nn::TaskSpec* task;
    std::vector<const Buf*> in;
    std::vector<Buf>* out;
  };
  struct Phase {
    nn::TaskOp op;
    std::vector<Work> per_thread[2];
    // (the shard's state, the output slot its update writes), swapped at the phase's barrier
    std::vector<std::pair<Buf*, Buf*>> swaps;
  };
  std::vector<std::vector<nn::TaskSpec>> tasks(steps);
  std::vector<std::vector<nn::KeyedTensor>> inputs(steps);
  std::vector<std::vector<Buf>> slots;  // outputs by task index, reused every step
  std::vector<std::vector<Phase>> phases(steps);
  for (int64_t s = 0; s < steps; ++s) {
    nn::Batch b = batcher.Get(s);
    std::unordered_map<std::string, const Buf*> where;
    inputs[s] = plan.StepInputs(s, b.rows, b.x, b.t);
    for (const auto& [k, v] : inputs[s]) where[k] = &v;
    tasks[s] = plan.StepTasks(s, b.rows);
    if (slots.size() < tasks[s].size()) slots.resize(tasks[s].size());
    std::vector<std::vector<Work>> runs;  // the step's phases, in plan order
    for (size_t t = 0; t < tasks[s].size(); ++t) {
      const nn::TaskSpec& task = tasks[s][t];
      if (t == 0 || task.op != tasks[s][t - 1].op) {
        runs.emplace_back();
        phases[s].push_back(Phase{task.op, {}, {}});
      }
      slots[t].resize(task.outputs.size());
      Work w{&task, {}, &slots[t]};
      for (const std::string& k : task.inputs) {
        w.in.push_back(nn::Plan::IsStateKey(k) ? &state.at(k) : where.at(k));
      }
      for (size_t j = 0; j < task.outputs.size(); ++j) {
        if (nn::Plan::IsStateKey(task.outputs[j]))
          phases[s].back().swaps.emplace_back(&state.at(task.outputs[j]), &slots[t][j]);
        where[task.outputs[j]] = &slots[t][j];
      }
      runs.back().push_back(std::move(w));
    }
    for (size_t p = 0; p < runs.size(); ++p) {
      std::stable_sort(runs[p].begin(), runs[p].end(), [](const Work& a, const Work& b) {
        return nn::TaskWork(*a.task) > nn::TaskWork(*b.task);
      });
      int64_t load[2] = {0, 0};
      for (Work& w : runs[p]) {
        const int to = threads == 1 || load[0] <= load[1] ? 0 : 1;
        load[to] += nn::TaskWork(*w.task);
        phases[s][p].per_thread[to].push_back(std::move(w));
      }
    }
  }
  const Phase* current = nullptr;  // set by thread 0 before it arrives at the phase's barrier
  Bare out;
  Clock::time_point phase_start;
  auto finish_phase = [&]() noexcept {
    const Clock::time_point now = Clock::now();
    out.phase_ms[current->op] +=
        std::chrono::duration<double, std::milli>(now - phase_start).count();
    phase_start = now;
    // The update's output slot holds the new version: swapped into the state, the old version
    // goes to the slot (overwritten by the next step's update).
    for (auto [state_buf, slot] : current->swaps) std::swap(*state_buf, *slot);
  };
  std::barrier sync(2, finish_phase);
  auto run = [&](int th) {
    PinTo(th);
    std::vector<std::span<const float>> in;
    for (int64_t s = 0; s < steps; ++s) {
      for (const Phase& ph : phases[s]) {
        if (th == 0) current = &ph;
        for (const Work& w : ph.per_thread[th]) {
          in.clear();
          for (const Buf* b : w.in) in.emplace_back(*b);
          if (Status st = nn::ExecuteTask(*w.task, in, w.out); !st.ok()) {
            std::fprintf(stderr, "runtime_compare: %s\n", st.ToString().c_str());
            std::exit(1);
          }
        }
        sync.arrive_and_wait();  // finish_phase has swapped the phase's new versions in
      }
    }
  };
  const auto t0 = Clock::now();
  phase_start = t0;
  std::thread first(run, 0), second(run, 1);  // not this thread: binding it would outlast the run
  first.join();
  second.join();
  out.samples_per_s = double(data.rows) * double(job.train.epochs) /
                      std::chrono::duration<double>(Clock::now() - t0).count();
  out.sha = nn::ModelSha256(plan.ModelFromState([&](const std::string& k) { return state.at(k); }));
  for (auto& [op, ms] : out.phase_ms) ms /= double(steps);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 60;
  int rounds = 3;
  const char* trace_path = nullptr;  // --trace FILE: trace.json of the last window-1 MLP run
  bool with_toy = true;              // --mlp-only: the MLP part alone
  bool with_mlp = true;              // --toy-only: the toy part alone (a minute less a run)
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--mlp-only")) {
      with_toy = false;
    } else if (!std::strcmp(argv[i], "--toy-only")) {
      with_mlp = false;
    } else if (!std::strcmp(argv[i], "--steps") && has_value) {
      steps = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--trace") && has_value) {
      trace_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--rounds") && has_value) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "runtime_compare: unknown or incomplete argument '%s'\n", argv[i]);
      return 2;
    }
  }
  runtime::TuneProcess();
  // 1. MLP: the reference vs 2 handlers, at two mini-batch sizes (micro-batches of half of it,
  // one per handler). Measured in alternation, `rounds` times after a warm-up; the speed-up is
  // the median of the rounds' ratios (this VM's speed drifts by 20% between seconds).
  bool all_equal = true;
  std::vector<std::pair<int64_t, int64_t>> mlp_batches = {{64, 32}, {256, 128}};
  if (!with_mlp) mlp_batches.clear();
  for (auto [batch, micro] : mlp_batches) {
    JobConfig job = MlpJob(steps * batch, batch, micro);
    nn::Model init = Check(nn::InitialModel(job));
    nn::Dataset data = Check(nn::LoadDataset(job));
    std::map<nn::TaskOp, std::vector<double>> phase1, phase2;  // ms per step, bare 1 and 2 threads
    std::vector<double> ref_rates, w1_rates, w2_rates, w1_ratios, w2_ratios, bare_ratios, of_bare;
    std::string ref_sha, run_sha;
    std::vector<runtime::HandlerFigures> last_handlers;
    double last_wall = 0;
    for (int round = 0; round <= rounds; ++round) {  // round 0 warms up both
      auto trainer = Check(nn::ReferenceTrainer::Create(job, init, data));
      auto t0 = Clock::now();
      Check(trainer->Train());
      const double ref =
          double(data.rows) / std::chrono::duration<double>(Clock::now() - t0).count();
      ref_sha = nn::ModelSha256(trainer->CurrentModel());
      const Bare one = BareThreads(job, init, data, 1), two = BareThreads(job, init, data, 2);
      const double bare = two.samples_per_s;
      all_equal = all_equal && one.sha == ref_sha && two.sha == ref_sha;
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
      bare_ratios.push_back(bare / ref), of_bare.push_back(w1 / bare);
      for (auto [op, ms] : one.phase_ms) phase1[op].push_back(ms);
      for (auto [op, ms] : two.phase_ms) phase2[op].push_back(ms);
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
    std::printf(
        "  ceiling: the same tasks on 2 bare threads, speed-up %.2f (rounds %s); the runtime at "
        "window 1 reaches %.2f of it\n",
        Median(bare_ratios), Join(bare_ratios).c_str(), Median(of_bare));
    for (const auto& [op, ms] : phase1) {
      const double a = Median(ms), b = Median(phase2[op]);
      std::printf("    its %s phases: %.2f ms a step on 1 thread, %.2f on 2 (%.2fx)\n",
                  nn::ToString(op).data(), a, b, a / b);
    }
  }

  if (!with_toy) return all_equal ? 0 : 1;
  // 2. The toy at batch 1 with 4 handlers.
  JobConfig toy = ToyJob(3000);
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
    JobConfig chain = ToyJob(3000, Strategy::kChain, k);
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
