#include "runtime/run/job_runner.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "acan/worker.h"
#include "nn/plan.h"
#include "runtime/audit/audit.h"
#include "runtime/chaos/crashable_space.h"
#include "runtime/core/budget.h"
#include "runtime/core/decimated.h"
#include "runtime/handler/handler.h"
#include "runtime/manager/manager.h"
#include "runtime/run/supervisor.h"
#include "space/census_space.h"

namespace acan::runtime {

namespace {

// RunHooks::crash_in_task_every: a handler's kernels, crashing the handler during every n-th one.
class CrashInTask final : public EnvWrapper {
 public:
  explicit CrashInTask(int64_t every) : EnvWrapper(Env::Default()), every_(every) {}
  std::function<void()> crash;  // set once its slot exists, before the slot starts
  Status ExecuteTask(const nn::TaskSpec& spec, std::span<const std::span<const float>> inputs,
                     std::vector<std::vector<float>>* outputs,
                     const TaskRunContext& context) const override {
    if (count_.fetch_add(1) % every_ == every_ - 1) crash();
    return target()->ExecuteTask(spec, inputs, outputs, context);
  }

 private:
  int64_t every_;
  mutable std::atomic<int64_t> count_{0};
};

}  // namespace

RunHooks RunHooks::SeededCrashes(uint64_t seed, int64_t manager_range, int64_t handler_range,
                                 int64_t max_crashes) {
  auto draw = [=](int64_t who, int64_t incarnation, int64_t range) -> int64_t {
    if (range <= 0 || incarnation > max_crashes) return 0;
    return CrashPoint(seed, who, incarnation, range);
  };
  RunHooks hooks;
  hooks.manager_crash_at = [=](int slot, int64_t i) { return draw(-1 - slot, i, manager_range); };
  hooks.handler_crash_at = [=](int h, int64_t i) { return draw(h, i, handler_range); };
  return hooks;
}

Result<RunResult> RunJob(const JobConfig& given, const nn::Dataset& data, const nn::Model& init,
                         const RunOptions& options, const RunHooks& hooks) {
  JobConfig job = given;  // with the tile bands the run cuts for budgets that differ
  if (options.handlers < 1) return Status::InvalidArgument("handlers must be at least 1");
  if (options.window < 1) return Status::InvalidArgument("window must be at least 1");
  if (options.adapt_task_size && job.partition.strategy == Strategy::kChain) {
    return Status::InvalidArgument(
        "the chain strategy's task size sets what a step is and cannot adapt; give "
        "partition.task_size or let it default once");
  }
  ACAN_ASSIGN_OR_RETURN(SpaceOptions space_options, JobSpaceOptions(options.job_token));
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<Space> opened, OpenSpace(options.space_uri, space_options));
  // The census sees what lands in the space (beneath an injected fault, which may drop a put).
  auto census_space = std::make_unique<CensusSpace>(std::move(opened), /*class_token=*/1);
  CensusSpace* census = census_space.get();
  std::unique_ptr<Space> space = std::move(census_space);
  if (hooks.wrap_space) space = hooks.wrap_space(std::move(space));
  ACAN_ASSIGN_OR_RETURN(Key token, Key::Parse(options.job_token));
  Layout layout(token.str());
  // A tiles job's shards are its tiles: their edge is the run's task size, chosen once, so that
  // every task fits the smallest handler budget.
  int64_t task_size = options.task_size;
  {
    const int64_t smallest = SmallestBudget(options.handler_memory);
    const int64_t fixed = task_size > 0 ? task_size : job.partition.task_size;
    const bool tiles = job.partition.strategy == Strategy::kTiles;
    const int64_t start = options.adapt_task_size || smallest > 0
                              ? InitialTaskSize(job.model.layers, tiles, job.train.batch)
                              : 0;
    if (tiles && fixed == 0 && job.partition.tile_bands.empty()) {
      std::vector<int64_t> budgets;
      for (int h = 0; h < options.handlers && !options.handler_memory.empty(); ++h)
        budgets.push_back(options.handler_memory[h % options.handler_memory.size()]);
      ACAN_ASSIGN_OR_RETURN(job.partition.tile_bands,
                            BandsForBudgets(job, job.train.batch, start, budgets, /*data=*/0,
                                            options.manager_memory));
    }
    if (smallest > 0 || (tiles && fixed == 0 && options.adapt_task_size)) {
      ACAN_ASSIGN_OR_RETURN(TaskFit fit,
                            FitTasks(job, job.train.batch, fixed, start, smallest, /*data=*/0));
      if (tiles) task_size = fit.task_size;
    }
  }
  ACAN_RETURN_IF_ERROR(
      Manager::InitJob(space.get(), layout, job, init, nullptr, nullptr, nullptr, task_size));

  const auto start = Clock::now();
  Telemetry telemetry;
  RunEnd end;
  std::atomic<bool> killed_once{false};
  std::atomic<int> pouch{options.pouch};
  auto buffers = std::make_shared<BufferPool>(size_t{512} << 20);
  std::vector<std::unique_ptr<CrashInTask>> crash_in_task;  // RunHooks::crash_in_task_every
  std::vector<std::unique_ptr<HandlerSlot>> handlers;
  for (int h = 0; h < options.handlers; ++h) {
    HandlerSettings ho;
    ho.id = h;
    if (size_t(h) < options.capabilities.size()) ho.capabilities = options.capabilities[h];
    ho.pouch = &pouch;
    ho.trace = options.trace.get();
    ho.buffers = buffers;
    if (!options.handler_memory.empty())
      ho.memory = options.handler_memory[h % options.handler_memory.size()];
    ho.size_class = HandlerSizeClass(job.partition.tile_bands, ho.memory);
    ho.size_classes = SizeClasses(job.partition.tile_bands);
    if (hooks.crash_in_task_every > 0) {
      crash_in_task.push_back(std::make_unique<CrashInTask>(hooks.crash_in_task_every));
    }
    handlers.push_back(std::make_unique<HandlerSlot>(
        space.get(), layout, ho, options, &telemetry,
        hooks.crash_in_task_every > 0 ? crash_in_task.back().get() : Env::Default()));
    if (hooks.handler_crash_at) {
      handlers.back()->CrashAtWrite(
          [&hooks, h](int64_t incarnation) { return hooks.handler_crash_at(h, incarnation); });
    }
    if (hooks.crash_in_task_every > 0) {
      crash_in_task.back()->crash = [slot = handlers.back().get()] { slot->Crash(); };
    }
  }
  std::vector<std::unique_ptr<ManagerSlot>> slots;
  for (int m = 0; m < (options.standby ? 2 : 1); ++m) {
    slots.push_back(std::make_unique<ManagerSlot>(m, space.get(), layout, job, data, options, hooks,
                                                  &telemetry, &end, &killed_once));
  }
  // Chaos in seconds starts now; in steps, once the calibration steps are timed.
  std::unique_ptr<Chaos> chaos;
  auto start_chaos = [&](const ChaosOptions& o) {
    chaos = std::make_unique<Chaos>(
        o, options.handlers,
        ChaosActions{[&](int h, double speed) { handlers[h]->stats().speed.store(speed); },
                     [&](int h) { handlers[h]->Crash(); },
                     [&] {
                       for (auto& s : slots) s->CrashIfActive();
                     }});
    chaos->Start();
  };
  if (!options.chaos.relative()) start_chaos(options.chaos);
  // One handler per CPU this process may use, when there are enough: otherwise the scheduler may
  // wake two compute-bound handlers on one core and leave them there for whole steps. Not with
  // injected slow-downs: a slowed handler sleeps most of its task time (a real slow processor
  // would be another machine), and a free scheduler then hands its core to the others (measured:
  // adaptivity throughput 0.95-0.97 of capacity free, 0.83-0.90 pinned).
  bool slowed = false;
  for (double f : options.chaos.speeds) slowed = slowed || f != 1.0;
  if (options.pin_handlers && !slowed) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 &&
        CPU_COUNT(&allowed) >= options.handlers) {
      int h = 0;
      for (int cpu = 0; cpu < CPU_SETSIZE && h < options.handlers; ++cpu) {
        if (CPU_ISSET(cpu, &allowed)) handlers[h++]->PinTo(cpu);
      }
    }
  }
  for (auto& h : handlers) h->Start();
  for (auto& s : slots) s->Start();

  // Sample the metrics time series until the job is done.
  Decimated<MetricsRow> metrics;  // bounded: a long run keeps its history at lower resolution
  std::vector<StallReport> stalls;
  int64_t last_samples = 0;
  auto last_t = start;
  auto next_sample = start + options.metrics_interval;
  auto sample = [&](bool finished) {
    auto [p, c] = telemetry.Latest();
    MetricsRow row = RunMetrics(p, c, start, &last_t, &last_samples);
    for (auto& h : handlers) {
      row.handler_tasks.push_back(h->stats().tasks.load());
      row.handler_work.push_back(h->stats().work.load());
      row.handler_speeds.push_back(h->stats().speed.load());
      row.handler_crashes += h->stats().crashes.load();
    }
    for (auto& s : slots) row.manager_crashes += s->crashes();
    row.handler_useful_work = telemetry.UsefulWork(handlers.size());
    const Census resident = census->Snapshot();
    row.space_tuples = resident.total.tuples;
    row.space_bytes = resident.total.bytes;
    if (options.on_sample) {
      LiveSample live;
      live.row = row;
      live.progress = p;
      live.controller = c;
      for (size_t h = 0; h < handlers.size(); ++h) {
        live.handlers.push_back(ReportOf(static_cast<int>(h), handlers[h]->stats()));
      }
      live.space = space->Stats();
      live.task_latency = telemetry.TaskLatency();
      live.stalls = static_cast<int64_t>(stalls.size());
      live.finished = finished;
      options.on_sample(live);
    }
    metrics.Push(std::move(row), /*keep=*/finished);
  };
  // Stalls: no step for max(floor, 8 x the longest current timeout), reported again each time as
  // long again passes.
  auto stall_limit = [&] {
    double longest_ms = 0;
    for (const auto& [cls, ms] : telemetry.Latest().second.timeouts_ms) {
      longest_ms = std::max(longest_ms, ms);
    }
    return std::max(std::chrono::duration_cast<Clock::duration>(options.stall_floor),
                    std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double, std::milli>(8 * longest_ms)));
  };
  auto next_stall_check = start + stall_limit();
  Status stalled;
  auto check_stall = [&] {
    const auto now = Clock::now();
    const auto last = std::max(start, telemetry.last_step_at());
    const auto limit = stall_limit();
    if (now - last < limit) {
      next_stall_check = last + limit;
      return;
    }
    StallReport r = telemetry.Stall(start);
    r.space = census->Snapshot();
    for (auto& sl : slots) r.manager_crashes += sl->crashes();
    for (auto& h : handlers) r.handler_crashes += h->stats().crashes.load();
    spdlog::warn("acan: the run is stalled: {}", r.ToString());
    if (options.on_stall) options.on_stall(r);
    stalls.push_back(r);
    next_stall_check = now + limit;
    if (options.abort_after_stall.count() > 0 && now - last >= options.abort_after_stall) {
      stalled = Status::Timeout("the run gave up: " + r.ToString());
      end.Stop();
    }
  };
  const int64_t calibration = std::max<int64_t>(1, options.chaos.calibration_steps);
  if (options.chaos.relative()) telemetry.SetStepHook(calibration + 1, [&end] { end.Poke(); });
  while (!end.WaitUntil(std::min(next_sample, next_stall_check))) {
    if (!chaos) {  // chaos in steps, not started yet
      if (auto step_s = telemetry.MedianStepS(calibration)) {
        start_chaos(options.chaos.InSeconds(*step_s));
      }
    }
    if (Clock::now() >= next_stall_check) check_stall();
    if (Clock::now() >= next_sample) {
      sample(false);
      next_sample += options.metrics_interval;
    }
  }
  // The run is over when the last step is applied: what follows is shutting down.
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (chaos) chaos->Stop();
  for (auto& s : slots) s->Stop();
  for (auto& s : slots) s->Join();
  for (auto& h : handlers) h->Stop();
  for (auto& h : handlers) h->Join();

  ACAN_RETURN_IF_ERROR(stalled);
  for (auto& s : slots) ACAN_RETURN_IF_ERROR(s->status());
  RunResult result;
  ACAN_ASSIGN_OR_RETURN(result.progress, Manager::ReadProgress(space.get(), layout));
  ACAN_ASSIGN_OR_RETURN(nn::Plan plan, nn::Plan::Create(job, result.progress.task_size, data.rows));
  ACAN_ASSIGN_OR_RETURN(result.model,
                        ReadModel(space.get(), layout, plan, result.progress.total_steps));
  ACAN_ASSIGN_OR_RETURN(result.audit, ReadAuditChain(space.get(), layout));
  // The last sample, once nothing moves and the outcome is read back: what it shows (/metrics'
  // last page, metrics.prom, metrics.csv's last row) is what summary.json records.
  sample(true);
  result.stalls = std::move(stalls);
  result.wall_s = wall_s;
  result.metrics = std::move(metrics).Take();
  result.recovery = telemetry.recovery();
  result.trace = options.trace;
  for (int h = 0; h < options.handlers; ++h) {
    HandlerFigures r = ReportOf(h, handlers[h]->stats());
    r.idle_ratio = wall_s > 0 ? std::max(0.0, 1.0 - (r.busy_s + r.lost_s) / wall_s) : 0;
    result.handlers.push_back(r);
  }
  for (auto& s : slots) {
    result.manager_crashes += s->crashes();
    if (s->has_controller()) result.controller = s->controller();
  }
  result.pouch = pouch.load();
  if (job.partition.tile_bands != given.partition.tile_bands) {
    result.tile_bands = job.partition.tile_bands;
  }
  result.space = space->Stats();
  result.census = census->Snapshot();
  space->Close();
  return result;
}

}  // namespace acan::runtime
