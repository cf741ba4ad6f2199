#include "runtime/job_runner.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "nn/plan.h"
#include "runtime/crashable_space.h"
#include "runtime/handler.h"
#include "runtime/manager.h"
#include "space/census_space.h"

namespace acan::runtime {

namespace {

using std::chrono::milliseconds;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// A task key without its step token: "mb.s12.m0" -> "mb.m0".
std::string TaskClass(const std::string& key) {
  std::string out;
  size_t begin = 0;
  while (begin <= key.size()) {
    size_t end = key.find('.', begin);
    if (end == std::string::npos) end = key.size();
    std::string_view token(key.data() + begin, end - begin);
    const bool step = token.size() > 1 && token[0] == 's' &&
                      token.find_first_not_of("0123456789", 1) == std::string_view::npos;
    if (!step) {
      if (!out.empty()) out += '.';
      out += token;
    }
    begin = end + 1;
  }
  return out;
}

// What the run's threads report while it goes: the latest progress and controller state, and the
// crash-to-recovery times.
class Telemetry {
 public:
  void OnStep(const Progress& p, const ControllerSnapshot& c) {
    std::lock_guard lock(mu_);
    progress_ = p;
    controller_ = c;
    last_step_at_ = Clock::now();
    if (step_times_.size() < 1024) step_times_.push_back(last_step_at_);
    if (step_hook_ && int64_t(step_times_.size()) == step_hook_at_) step_hook_();
    for (auto t : manager_crashes_) recovery_.manager_ms.push_back(Ms(Clock::now() - t));
    manager_crashes_.clear();
  }
  void OnTaskDone(const std::string& key, int64_t exec_ns) {
    std::lock_guard lock(mu_);
    const std::string cls = TaskClass(key);
    if (recovery_.task_ms.size() < 100000) recovery_.task_ms.push_back(double(exec_ns) / 1e6);
    std::vector<double>& of_class = recovery_.task_ms_by_class[cls];
    if (of_class.size() < 20000) of_class.push_back(double(exec_ns) / 1e6);
    auto it = lost_.find(key);
    if (it != lost_.end()) {
      recovery_.handler_ms.push_back(Ms(Clock::now() - it->second));
      recovery_.lost_task_ms.push_back(double(exec_ns) / 1e6);
      recovery_.lost_classes.push_back(cls);
      lost_.erase(it);
    }
  }
  void OnHandlerCrash(const std::vector<Handler::AbandonedTask>& lost, Clock::time_point at) {
    std::lock_guard lock(mu_);
    for (const auto& t : lost) lost_.emplace(t.key, at);
  }
  // Calls `hook` (on the manager's thread) when the n-th step completes.
  void SetStepHook(int64_t n, std::function<void()> hook) {
    std::lock_guard lock(mu_);
    step_hook_at_ = n;
    step_hook_ = std::move(hook);
  }
  void OnActive(int slot) {
    std::lock_guard lock(mu_);
    ++incarnations_;
    active_slot_ = slot;
  }
  void OnFlight(const FlightStatus& f) {
    std::lock_guard lock(mu_);
    flight_ = f;
  }
  void OnRecovered(std::chrono::nanoseconds took, int64_t calls) {
    std::lock_guard lock(mu_);
    recovery_.manager_recovery_ms.push_back(Ms(took));
    recovery_.manager_recovery_calls.push_back(calls);
  }
  // The median time between the first `n` + 1 step completions, once there are that many.
  std::optional<double> MedianStepS(int64_t n) const {
    std::lock_guard lock(mu_);
    if (n < 1 || int64_t(step_times_.size()) < n + 1) return std::nullopt;
    std::vector<double> gaps;
    for (int64_t i = 0; i < n; ++i) {
      gaps.push_back(std::chrono::duration<double>(step_times_[i + 1] - step_times_[i]).count());
    }
    std::nth_element(gaps.begin(), gaps.begin() + n / 2, gaps.end());
    return gaps[n / 2];
  }
  // A stall report without the space's census and the crash counts, which others know.
  StallReport Stall(Clock::time_point run_start) const {
    std::lock_guard lock(mu_);
    StallReport r;
    const auto now = Clock::now();
    r.t_s = std::chrono::duration<double>(now - run_start).count();
    r.stalled_s = std::chrono::duration<double>(now - std::max(run_start, last_step_at_)).count();
    r.manager_slot = active_slot_;
    r.manager_incarnations = incarnations_;
    r.flight = flight_;
    return r;
  }
  Clock::time_point last_step_at() const {
    std::lock_guard lock(mu_);
    return last_step_at_;
  }
  void OnManagerCrash() {
    std::lock_guard lock(mu_);
    manager_crashes_.push_back(Clock::now());
  }
  std::pair<Progress, ControllerSnapshot> Latest() const {
    std::lock_guard lock(mu_);
    return {progress_, controller_};
  }
  RecoveryStats recovery() const {
    std::lock_guard lock(mu_);
    return recovery_;
  }

 private:
  mutable std::mutex mu_;
  Progress progress_;
  ControllerSnapshot controller_;
  RecoveryStats recovery_;
  std::unordered_map<std::string, Clock::time_point> lost_;
  std::vector<Clock::time_point> manager_crashes_;
  Clock::time_point last_step_at_;
  std::vector<Clock::time_point> step_times_;  // of the first steps (the chaos calibration)
  int64_t incarnations_ = 0;
  int active_slot_ = -1;
  FlightStatus flight_;
  int64_t step_hook_at_ = 0;
  std::function<void()> step_hook_;
};

// How a run ends: the job finished, or something stopped it. The main thread sleeps on it
// (waking only for the metrics), so no thread polls while the handlers compute.
class RunEnd {
 public:
  bool finished() const { return finished_.load(); }
  bool stopped() const { return stopped_.load(); }
  bool over() const { return finished() || stopped(); }
  void Finish() { Set(&finished_); }
  void Stop() { Set(&stopped_); }
  // Wakes the waiter early (e.g. to start the chaos once the calibration steps are done).
  void Poke() { Set(&poked_); }
  // Waits until the run is over, a poke or `until`; true when it is over.
  bool WaitUntil(Clock::time_point until) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, until, [&] { return over() || poked_.load(); });
    poked_.store(false);
    return over();
  }

 private:
  void Set(std::atomic<bool>* flag) {
    {
      std::lock_guard lock(mu_);
      flag->store(true);
    }
    cv_.notify_all();
  }
  std::atomic<bool> finished_{false}, stopped_{false}, poked_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

// Runs managers in one slot: a manager that crashes is replaced by a new one (a new incarnation
// with no local state) after a short delay, until the job is finished or the run stops.
class ManagerSlot {
 public:
  ManagerSlot(int id, Space* space, const Layout& layout, const JobConfig& job,
              const nn::Dataset& data, const RunOptions& options, Telemetry* telemetry, RunEnd* end,
              std::atomic<bool>* killed_once)
      : id_(id),
        space_(space),
        layout_(layout),
        job_(job),
        data_(data),
        options_(options),
        telemetry_(telemetry),
        end_(end),
        killed_once_(killed_once) {}

  void Start() {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), fmt::format("acan-manager{}", id_).c_str());
      Loop();
    });
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // Kills the manager of this slot if it is the active one (a standby has nothing to lose).
  void CrashIfActive() {
    if (active_.load()) crash_.store(true);
  }
  void Stop() { crash_.store(true); }
  int64_t crashes() const { return crashes_.load(); }
  Status status() const {
    std::lock_guard lock(mu_);
    return status_;
  }
  bool has_controller() const {
    std::lock_guard lock(mu_);
    return has_controller_;
  }
  ControllerSnapshot controller() const {
    std::lock_guard lock(mu_);
    return controller_;
  }

 private:
  void Loop() {
    while (!end_->over()) {
      ManagerOptions mo;
      mo.owner = fmt::format("manager-{}", id_);
      mo.window = options_.window;
      mo.task_size = options_.task_size;
      mo.adapt_task_size = options_.adapt_task_size;
      mo.lease = options_.lease;
      mo.controller = options_.controller;
      mo.controller.handlers = options_.handlers;
      mo.on_step = [this](const Progress& p, const ControllerSnapshot& c) {
        telemetry_->OnStep(p, c);
        {
          std::lock_guard lock(mu_);
          controller_ = c;
          has_controller_ = true;
        }
        if (options_.on_progress) options_.on_progress(p);
        if (options_.kill_manager_after_step >= 0 &&
            p.next_step >= options_.kill_manager_after_step && !killed_once_->exchange(true)) {
          crash_.store(true);
        }
      };
      CrashableSpace view(space_, &crash_);
      mo.on_active = [this] {
        active_.store(true);
        telemetry_->OnActive(id_);
      };
      mo.on_recovered = [&](std::chrono::nanoseconds took) {
        telemetry_->OnRecovered(took, view.calls());
        if (options_.kill_manager_after_recovery > 1) {
          view.KillAt(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         took * (options_.kill_manager_after_recovery - 1)));
        }
      };
      mo.on_flight = [this](const FlightStatus& f) { telemetry_->OnFlight(f); };
      mo.on_epoch_end = options_.on_epoch_end;
      mo.on_task_done = [this](const std::string& key, int64_t exec_ns) {
        telemetry_->OnTaskDone(key, exec_ns);
      };
      mo.trace = options_.trace.get();
      Manager manager(&view, layout_, &job_, &data_, mo);
      Status s = manager.Run(crash_);
      const bool was_active = active_.exchange(false);
      if (s.ok()) {
        end_->Finish();
        return;
      }
      // Killed: whatever its last call said, its view of the space died under it.
      if ((s.IsCancelled() || view.dead()) && !end_->over()) {
        if (was_active) {
          crashes_.fetch_add(1);
          telemetry_->OnManagerCrash();
          if (options_.trace) {
            options_.trace->Instant(TraceRecorder::kManagerLane, "manager crash", "crash");
          }
        }
        crash_.store(false);
        std::this_thread::sleep_for(options_.manager_restart_delay);
        continue;
      }
      if (s.IsUnavailable() && !end_->over()) {
        // It lost its lease (another took over, or it was held up past it): it is a standby
        // again, waiting for a lease that lapses, so a run never waits on nobody.
        continue;
      }
      if (!s.IsCancelled() && !s.IsUnavailable()) {
        std::lock_guard lock(mu_);
        status_ = s;
        end_->Stop();
      }
      return;
    }
  }

  int id_;
  Space* space_;
  const Layout& layout_;
  const JobConfig& job_;
  const nn::Dataset& data_;
  const RunOptions& options_;
  Telemetry* telemetry_;
  RunEnd* end_;
  std::atomic<bool>* killed_once_;  // the test hook kills one manager per run
  std::atomic<bool> crash_{false};
  std::atomic<bool> active_{false};
  std::atomic<int64_t> crashes_{0};
  mutable std::mutex mu_;
  Status status_;
  ControllerSnapshot controller_;
  bool has_controller_ = false;
  std::thread thread_;
};

// Runs handlers in one slot: a crashed handler loses what it holds and comes back, empty-handed,
// after a delay.
class HandlerSlot {
 public:
  HandlerSlot(Space* space, const Layout& layout, HandlerOptions options, const RunOptions& run,
              Telemetry* telemetry)
      : space_(space),
        layout_(layout),
        options_(std::move(options)),
        run_(run),
        telemetry_(telemetry) {}

  // Binds the handler's thread to one CPU (before Start).
  void PinTo(int cpu) { cpu_ = cpu; }
  void Start() {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), fmt::format("acan-h{}", options_.id).c_str());
      if (cpu_ >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu_, &set);
        (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
      }
      Loop();
    });
  }
  // The injected crash: from this moment the handler's work is lost. Its supervisor (this slot,
  // on the caller's thread) sees it at once and says so; the thread itself notices when its
  // kernel returns (a kernel cannot be interrupted) and throws the result away.
  void Crash() {
    const auto now = Clock::now();
    int64_t incarnation = 0;
    {
      // The moment, the incarnation and the stop together: the slot's thread reads the first two
      // only after it sees the stop, and starts the next incarnation under the same lock.
      std::lock_guard lock(crash_mu_);
      if (finished_.load() || stop_.load()) return;  // already down
      crashed_at_ = now;
      incarnation = incarnation_;
      stop_.store(true);
    }
    if (run_.supervise) (void)AnnounceDeath(space_, layout_, options_.id, incarnation);
  }
  void Stop() {
    finished_.store(true);
    stop_.store(true);
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  HandlerStats& stats() { return stats_; }

 private:
  void Loop() {
    while (!finished_.load()) {
      {
        std::lock_guard lock(crash_mu_);
        if (finished_.load()) return;
        stop_.store(false);
        incarnation_ = ++options_.incarnation;
      }
      Handler handler(space_, layout_, options_, &stats_);
      if (!handler.Announce().ok()) return;  // the space closed
      handler.Run(stop_);
      if (finished_.load() || !stop_.load()) return;  // done, or the space closed
      Clock::time_point crashed_at;
      {
        std::lock_guard lock(crash_mu_);
        crashed_at = crashed_at_;
      }
      stats_.crashes.fetch_add(1);
      telemetry_->OnHandlerCrash(handler.abandoned(), crashed_at);
      DropClaimsOfClosedSteps(handler.abandoned());
      if (options_.trace) {
        options_.trace->Instant(TraceRecorder::HandlerLane(options_.id), "handler crash", "crash",
                                fmt::format(R"({{"lost_tasks":{}}})", handler.abandoned().size()));
      }
      std::this_thread::sleep_for(run_.handler_restart_delay);
    }
  }

  // The dead incarnation's claims on tasks of steps that were cleaned up meanwhile: the manager
  // no longer looks at those tasks, so nobody else would remove them. The step is closed before
  // its clean-up removes claims, so a claim of a step still open here is removed by the clean-up.
  void DropClaimsOfClosedSteps(const std::vector<Handler::AbandonedTask>& abandoned) {
    for (const Handler::AbandonedTask& t : abandoned) {
      auto open = space_->Read(layout_.StepOpen(t.step));
      if (open.ok() && !open->has_value()) {
        (void)space_->Take(layout_.Claim(t.key, options_.id), SIZE_MAX, Deadline::Now());
      }
    }
  }

  Space* space_;
  const Layout& layout_;
  HandlerOptions options_;
  const RunOptions& run_;
  Telemetry* telemetry_;
  HandlerStats stats_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  std::mutex crash_mu_;
  int64_t incarnation_ = 0;       // guarded by crash_mu_
  Clock::time_point crashed_at_;  // guarded by crash_mu_
  int cpu_ = -1;
  std::thread thread_;
};

}  // namespace

Result<RunResult> RunJob(const JobConfig& job, const nn::Dataset& data, const nn::Model& init,
                         const RunOptions& options) {
  if (options.handlers < 1) return Status::InvalidArgument("handlers must be at least 1");
  // spdlog builds its registry on first use; do it here, before the run's threads may log at
  // once (its lazy construction inside the uninstrumented library is a race to ThreadSanitizer).
  (void)spdlog::default_logger_raw();
  if (options.window < 1) return Status::InvalidArgument("window must be at least 1");
  if (options.adapt_task_size && job.partition.strategy == Strategy::kChain) {
    return Status::InvalidArgument(
        "the chain strategy's task size sets what a step is and cannot adapt; give "
        "partition.task_size or let it default once");
  }
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<Space> opened, OpenSpace(options.space_uri));
  // The census sees what lands in the space (beneath an injected fault, which may drop a put).
  auto census_space = std::make_unique<CensusSpace>(std::move(opened), /*class_token=*/1);
  CensusSpace* census = census_space.get();
  std::unique_ptr<Space> space = std::move(census_space);
  if (options.wrap_space) space = options.wrap_space(std::move(space));
  ACAN_ASSIGN_OR_RETURN(Key token, Key::Parse(options.job_token));
  Layout layout(token.str());
  ACAN_RETURN_IF_ERROR(Manager::InitJob(space.get(), layout, job, init));

  const auto start = Clock::now();
  Telemetry telemetry;
  RunEnd end;
  std::atomic<bool> killed_once{false};
  std::atomic<int> pouch{options.pouch};
  auto buffers = std::make_shared<BufferPool>(size_t{512} << 20);
  std::vector<std::unique_ptr<HandlerSlot>> handlers;
  for (int h = 0; h < options.handlers; ++h) {
    HandlerOptions ho;
    ho.id = h;
    if (size_t(h) < options.capabilities.size()) ho.capabilities = options.capabilities[h];
    ho.pouch = &pouch;
    ho.trace = options.trace.get();
    ho.buffers = buffers;
    handlers.push_back(std::make_unique<HandlerSlot>(space.get(), layout, ho, options, &telemetry));
  }
  std::vector<std::unique_ptr<ManagerSlot>> slots;
  for (int m = 0; m < (options.standby ? 2 : 1); ++m) {
    slots.push_back(std::make_unique<ManagerSlot>(m, space.get(), layout, job, data, options,
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
  std::vector<MetricsRow> metrics;
  std::vector<StallReport> stalls;
  int64_t last_samples = 0;
  auto last_t = start;
  auto next_sample = start + options.metrics_interval;
  auto sample = [&] {
    auto now = Clock::now();
    auto [p, c] = telemetry.Latest();
    MetricsRow row;
    row.t_s = std::chrono::duration<double>(now - start).count();
    int64_t samples = 0;
    for (const auto& e : p.epochs) samples += e.rows;
    double dt = std::chrono::duration<double>(now - last_t).count();
    row.samples_per_s = dt > 0 ? double(samples - last_samples) / dt : 0;
    last_samples = samples;
    last_t = now;
    row.step = p.next_step;
    row.task_size = p.task_size;
    row.pouch = c.pouch;
    row.completion_rate = c.completion_rate;
    row.mean_timeout_ms = c.mean_timeout_ms;
    row.timeouts_ms = c.timeouts_ms;
    for (auto& h : handlers) {
      row.handler_tasks.push_back(h->stats().tasks.load());
      row.handler_work.push_back(h->stats().work.load());
      row.handler_speeds.push_back(h->stats().speed.load());
      row.handler_crashes += h->stats().crashes.load();
    }
    for (auto& s : slots) row.manager_crashes += s->crashes();
    metrics.push_back(std::move(row));
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
      sample();
      next_sample += options.metrics_interval;
    }
  }
  // The run is over when the last step is applied: what follows is shutting down.
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (chaos) chaos->Stop();
  for (auto& s : slots) s->Stop();
  for (auto& s : slots) s->Join();
  sample();
  for (auto& h : handlers) h->Stop();
  for (auto& h : handlers) h->Join();

  ACAN_RETURN_IF_ERROR(stalled);
  for (auto& s : slots) ACAN_RETURN_IF_ERROR(s->status());
  RunResult result;
  result.stalls = std::move(stalls);
  result.wall_s = wall_s;
  result.metrics = std::move(metrics);
  result.recovery = telemetry.recovery();
  result.trace = options.trace;
  ACAN_ASSIGN_OR_RETURN(result.progress, Manager::ReadProgress(space.get(), layout));
  ACAN_ASSIGN_OR_RETURN(nn::Plan plan, nn::Plan::Create(job, result.progress.task_size, data.rows));
  ACAN_ASSIGN_OR_RETURN(result.model,
                        ReadModel(space.get(), layout, plan, result.progress.total_steps));
  for (int h = 0; h < options.handlers; ++h) {
    HandlerStats& st = handlers[h]->stats();
    HandlerReport r;
    r.id = h;
    r.tasks = st.tasks.load();
    r.busy_s = double(st.busy_ns.load()) / 1e9;
    r.work = st.work.load();
    r.lost_s = double(st.lost_ns.load()) / 1e9;
    r.idle_ratio = wall_s > 0 ? std::max(0.0, 1.0 - (r.busy_s + r.lost_s) / wall_s) : 0;
    r.speed = st.speed.load();
    r.crashes = st.crashes.load();
    r.missing_inputs = st.missing_inputs.load();
    r.bad_tuples = st.bad_tuples.load();
    r.reused = st.reused.load();
    result.handlers.push_back(r);
  }
  for (auto& s : slots) {
    result.manager_crashes += s->crashes();
    if (s->has_controller()) result.controller = s->controller();
  }
  result.pouch = pouch.load();
  result.space = space->Stats();
  result.census = census->Snapshot();
  space->Close();
  return result;
}

}  // namespace acan::runtime
