#include "runtime/run/supervisor.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "runtime/chaos/crashable_space.h"
#include "runtime/state/liveness.h"

namespace acan::runtime {

bool RunEnd::WaitUntil(Clock::time_point until) {
  MutexLock lock(mu_);
  // A wake-up for none of them waits again.
  while (!over() && !poked_.load() && cv_.WaitUntil(mu_, until) == std::cv_status::no_timeout) {
  }
  poked_.store(false);
  return over();
}

void RunEnd::Set(std::atomic<bool>* flag) {
  {
    MutexLock lock(mu_);
    flag->store(true);
  }
  cv_.SignalAll();
}

ManagerSettings ManagerSettingsFor(const RunOptions& run, int id) {
  ManagerSettings mo;
  mo.owner = fmt::format("manager-{}", id);
  mo.window = run.window;
  mo.task_size = run.task_size;
  mo.adapt_task_size = run.adapt_task_size;
  mo.speculate = run.speculate;
  mo.lease = run.lease;
  mo.controller = run.controller;
  mo.controller.handlers = run.handlers;
  mo.memory = run.manager_memory;
  mo.trace = run.trace.get();
  mo.on_epoch_end = run.on_epoch_end;
  return mo;
}

ManagerSlot::ManagerSlot(int id, Space* space, const Layout& layout, const JobConfig& job,
                         const nn::Dataset& data, const RunOptions& options, const RunHooks& hooks,
                         Telemetry* telemetry, RunEnd* end, std::atomic<bool>* killed_once)
    : id_(id),
      space_(space),
      layout_(layout),
      job_(job),
      data_(data),
      options_(options),
      hooks_(hooks),
      telemetry_(telemetry),
      end_(end),
      killed_once_(killed_once) {}

void ManagerSlot::Start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), fmt::format("acan-manager{}", id_).c_str());
    Loop();
  });
}

void ManagerSlot::Join() {
  if (thread_.joinable()) thread_.join();
}

Status ManagerSlot::status() const {
  MutexLock lock(mu_);
  return status_;
}

bool ManagerSlot::has_controller() const {
  MutexLock lock(mu_);
  return has_controller_;
}

ControllerSnapshot ManagerSlot::controller() const {
  MutexLock lock(mu_);
  return controller_;
}

void ManagerSlot::Loop() {
  while (!end_->over()) {
    ManagerSettings mo = ManagerSettingsFor(options_, id_);
    mo.on_step = [this](const Progress& p, const ControllerSnapshot& c) {
      telemetry_->OnStep(p, c);
      {
        MutexLock lock(mu_);
        controller_ = c;
        has_controller_ = true;
      }
      if (options_.on_progress) options_.on_progress(p);
      if (hooks_.kill_manager_after_step >= 0 && p.next_step >= hooks_.kill_manager_after_step &&
          !killed_once_->exchange(true)) {
        crash_.store(true);
      }
      if (hooks_.pause_manager_after_step >= 0 && p.next_step == hooks_.pause_manager_after_step &&
          !std::exchange(paused_, true)) {
        std::this_thread::sleep_for(hooks_.pause_manager_for);
      }
    };
    CrashableSpace view(space_, &crash_);
    mo.on_active = [&] {
      active_.store(true);
      telemetry_->OnActive(id_);
      const int64_t incarnation = ++active_incarnations_;
      if (hooks_.manager_crash_at) {
        if (const int64_t n = hooks_.manager_crash_at(id_, incarnation); n > 0) view.KillAtWrite(n);
      }
    };
    mo.on_recovered = [&](std::chrono::nanoseconds took) {
      telemetry_->OnRecovered(took, view.calls());
      if (hooks_.kill_manager_after_recovery > 1) {
        view.KillAt(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       took * (hooks_.kill_manager_after_recovery - 1)));
      }
    };
    mo.on_flight = [this](const FlightStatus& f) { telemetry_->OnFlight(f); };
    mo.on_task_done = [this](const std::string& key, int handler, int64_t exec_ns, int64_t work,
                             double speed) {
      telemetry_->OnTaskDone(key, exec_ns, speed);
      telemetry_->OnUsefulWork(handler, work);
    };
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
        spdlog::info("manager slot {} crashed while active", id_);
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
      MutexLock lock(mu_);
      status_ = s;
      end_->Stop();
    }
    return;
  }
}

HandlerSlot::HandlerSlot(Space* space, const Layout& layout, HandlerSettings options,
                         const RunOptions& run, Telemetry* telemetry, const Env* env)
    : space_(space),
      layout_(layout),
      options_(std::move(options)),
      run_(run),
      telemetry_(telemetry),
      env_(env, &stats_.speed) {
  options_.env = &env_;
}

void HandlerSlot::Start() {
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

void HandlerSlot::Crash() {
  const auto now = Clock::now();
  int64_t incarnation = 0;
  {
    // The moment, the incarnation and the stop together: the slot's thread reads the first two
    // only after it sees the stop, and starts the next incarnation under the same lock.
    MutexLock lock(crash_mu_);
    if (finished_.load() || stop_.load()) return;  // already down
    crashed_at_ = now;
    incarnation = incarnation_;
    stop_.store(true);
  }
  spdlog::info("handler {} (incarnation {}) crashed", options_.id, incarnation);
  if (run_.supervise) (void)AnnounceDeath(space_, layout_, options_.id, incarnation);
}

void HandlerSlot::Stop() {
  finished_.store(true);
  stop_.store(true);
}

void HandlerSlot::Join() {
  if (thread_.joinable()) thread_.join();
}

int64_t HandlerSlot::incarnation() {
  MutexLock lock(crash_mu_);
  return incarnation_;
}

void HandlerSlot::Loop() {
  while (RunIncarnation()) std::this_thread::sleep_for(run_.handler_restart_delay);
}

bool HandlerSlot::RunIncarnation() {
  int64_t incarnation = 0;
  {
    MutexLock lock(crash_mu_);
    if (finished_.load()) return false;
    stop_.store(false);
    incarnation = incarnation_ = ++options_.incarnation;
  }
  // The incarnation's view of the space, which dies only at a write it is told to die at
  // (RunHooks): a Crash() stops the handler through stop_, which then gives back what it holds.
  static const std::atomic<bool> kNeverCrashed{false};
  CrashableSpace view(space_, &kNeverCrashed);
  if (crash_at_write_) {
    if (const int64_t n = crash_at_write_(incarnation); n > 0) {
      view.KillAtWrite(n, [this] { Crash(); });
    }
  }
  HandlerSettings options = options_;
  // A lost task's redo is timed by its report, whichever manager (if any) is there to read it.
  options.on_reported = [this](const std::string& key, int64_t exec_ns, double speed) {
    telemetry_->OnReported(key, exec_ns, speed);
  };
  Handler handler(&view, layout_, options, &stats_);
  if (handler.Announce().ok()) {
    handler.Run(stop_);
  } else if (!stop_.load()) {
    return false;  // the space closed
  }
  if (finished_.load() || !stop_.load()) return false;  // done, or the space closed
  Clock::time_point crashed_at;
  {
    MutexLock lock(crash_mu_);
    crashed_at = crashed_at_;
  }
  stats_.crashes.fetch_add(1);
  telemetry_->OnHandlerCrash(handler.abandoned(), crashed_at);
  DropClaimsOfClosedSteps(handler.abandoned());
  if (options_.trace) {
    options_.trace->Instant(TraceRecorder::HandlerLane(options_.id), "handler crash", "crash",
                            fmt::format(R"({{"lost_tasks":{}}})", handler.abandoned().size()));
  }
  return true;
}

// The manager no longer looks at the tasks of a cleaned-up step, so nobody else would remove
// those claims. The step is closed before its clean-up removes claims, so a claim of a step still
// open here is removed by the clean-up.
void HandlerSlot::DropClaimsOfClosedSteps(const std::vector<Handler::AbandonedTask>& abandoned) {
  for (const Handler::AbandonedTask& t : abandoned) {
    auto open = space_->Read(layout_.StepOpen(t.step));
    if (open.ok() && !open->has_value()) {
      (void)space_->Erase(layout_.Claim(t.key, options_.id));
    }
  }
}

}  // namespace acan::runtime
