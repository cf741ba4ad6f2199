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
#include "runtime/handler.h"
#include "runtime/manager.h"

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
  void OnHandlerCrash(const std::vector<std::string>& lost, Clock::time_point at) {
    std::lock_guard lock(mu_);
    for (const auto& k : lost) lost_.emplace(k, at);
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
  // Waits until the run is over or `until`; true when it is over.
  bool WaitUntil(Clock::time_point until) {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, until, [&] { return over(); });
  }

 private:
  void Set(std::atomic<bool>* flag) {
    {
      std::lock_guard lock(mu_);
      flag->store(true);
    }
    cv_.notify_all();
  }
  std::atomic<bool> finished_{false}, stopped_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

// Runs managers in one slot: a manager that crashes is replaced by a new one (a new incarnation
// with no local state) after a short delay, until the job is finished or the run stops.
class ManagerSlot {
 public:
  ManagerSlot(int id, Space* space, const Layout& layout, const nn::JobConfig& job,
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
      mo.on_active = [this] { active_.store(true); };
      mo.on_epoch_end = options_.on_epoch_end;
      mo.on_task_done = [this](const std::string& key, int64_t exec_ns) {
        telemetry_->OnTaskDone(key, exec_ns);
      };
      mo.trace = options_.trace.get();
      Manager manager(space_, layout_, &job_, &data_, mo);
      Status s = manager.Run(crash_);
      const bool was_active = active_.exchange(false);
      if (s.ok()) {
        end_->Finish();
        return;
      }
      if (s.IsCancelled() && !end_->over()) {
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
  const nn::JobConfig& job_;
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
      if (options_.trace) {
        options_.trace->Instant(TraceRecorder::HandlerLane(options_.id), "handler crash", "crash",
                                fmt::format(R"({{"lost_tasks":{}}})", handler.abandoned().size()));
      }
      std::this_thread::sleep_for(run_.handler_restart_delay);
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

Result<RunResult> RunJob(const nn::JobConfig& job, const nn::Dataset& data, const nn::Model& init,
                         const RunOptions& options) {
  if (options.handlers < 1) return Status::InvalidArgument("handlers must be at least 1");
  if (options.window < 1) return Status::InvalidArgument("window must be at least 1");
  if (options.adapt_task_size && job.partition.strategy == nn::Strategy::kChain) {
    return Status::InvalidArgument(
        "the chain strategy's task size sets what a step is and cannot adapt; give "
        "partition.task_size or let it default once");
  }
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<Space> space, OpenSpace(options.space_uri));
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
  Chaos chaos(options.chaos, options.handlers,
              ChaosActions{[&](int h, double speed) { handlers[h]->stats().speed.store(speed); },
                           [&](int h) { handlers[h]->Crash(); },
                           [&] {
                             for (auto& s : slots) s->CrashIfActive();
                           }});
  chaos.Start();
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
  while (!end.WaitUntil(next_sample)) {
    sample();
    next_sample += options.metrics_interval;
  }
  // The run is over when the last step is applied: what follows is shutting down.
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  chaos.Stop();
  for (auto& s : slots) s->Stop();
  for (auto& s : slots) s->Join();
  sample();
  for (auto& h : handlers) h->Stop();
  for (auto& h : handlers) h->Join();

  for (auto& s : slots) ACAN_RETURN_IF_ERROR(s->status());
  RunResult result;
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
    result.handlers.push_back(r);
  }
  for (auto& s : slots) {
    result.manager_crashes += s->crashes();
    if (s->has_controller()) result.controller = s->controller();
  }
  result.pouch = pouch.load();
  result.space = space->Stats();
  space->Close();
  return result;
}

}  // namespace acan::runtime
