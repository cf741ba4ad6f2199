#include "runtime/view/telemetry.h"

#include <algorithm>

#include "runtime/core/layout.h"

namespace acan::runtime {

namespace {
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
}  // namespace

Telemetry::Telemetry(const Env* env) : env_(env) {}

void Telemetry::OnStep(const Progress& p, const ControllerSnapshot& c) {
  MutexLock lock(mu_);
  progress_ = p;
  controller_ = c;
  last_step_at_ = env_->Now();
  if (step_times_.size() < 1024) step_times_.push_back(last_step_at_);
  if (step_hook_ && int64_t(step_times_.size()) == step_hook_at_) step_hook_();
  for (auto t : manager_crashes_) recovery_.manager_ms.push_back(Ms(last_step_at_ - t));
  manager_crashes_.clear();
}

void Telemetry::OnTaskDone(const std::string& key, int64_t exec_ns, double speed) {
  MutexLock lock(mu_);
  const std::string cls = Layout::TaskClass(key);
  if (!(speed > 0)) speed = 1.0;
  task_latency_[cls].Record(static_cast<uint64_t>(std::max<int64_t>(exec_ns, 0)));
  if (recovery_.task_ms.size() < 100000) recovery_.task_ms.push_back(double(exec_ns) / 1e6);
  std::vector<double>& of_class = recovery_.task_ms_by_class[cls];
  if (of_class.size() < 20000) {
    of_class.push_back(double(exec_ns) / 1e6);
    recovery_.task_ms_by_class_at_full_speed[cls].push_back(double(exec_ns) / 1e6 / speed);
  }
}

void Telemetry::OnReported(const std::string& key, int64_t exec_ns, double speed) {
  MutexLock lock(mu_);
  if (!(speed > 0)) speed = 1.0;
  const Report report{env_->Now(), exec_ns, speed};
  auto it = lost_.find(key);
  if (it == lost_.end()) {
    // Its loss may be told after its redo (a crashed handler gives up what it held once its
    // thread is out of the task): kept, bounded, for OnHandlerCrash to find.
    if (reported_.size() >= kReportsKept) reported_.clear();
    reported_[key] = report;
    return;
  }
  RecordRedoLocked(key, it->second, report);
  lost_.erase(it);
}

void Telemetry::RecordRedoLocked(const std::string& key, Clock::time_point lost_at,
                                 const Report& redo) {
  recovery_.handler_ms.push_back(Ms(redo.at - lost_at));
  recovery_.lost_task_ms.push_back(double(redo.exec_ns) / 1e6);
  recovery_.lost_classes.push_back(Layout::TaskClass(key));
  recovery_.lost_speeds.push_back(redo.speed);
}

void Telemetry::OnUsefulWork(int handler, int64_t work) {
  MutexLock lock(mu_);
  useful_work_[handler] += work;
}

std::vector<int64_t> Telemetry::UsefulWork(size_t n) const {
  MutexLock lock(mu_);
  std::vector<int64_t> out(n, 0);
  for (const auto& [h, w] : useful_work_) {
    if (h >= 0 && size_t(h) < n) out[size_t(h)] = w;
  }
  return out;
}

std::map<std::string, LatencyHistogram> Telemetry::TaskLatency() const {
  MutexLock lock(mu_);
  return task_latency_;
}

void Telemetry::OnHandlerCrash(const std::vector<AbandonedTask>& lost, Clock::time_point at) {
  MutexLock lock(mu_);
  for (const auto& t : lost) {
    if (lost_.count(t.key)) continue;
    ++recovery_.lost_tasks;
    // Redone already, by another handler, while this one was still giving it up.
    if (auto r = reported_.find(t.key); r != reported_.end() && r->second.at > at) {
      RecordRedoLocked(t.key, at, r->second);
      continue;
    }
    lost_.emplace(t.key, at);
  }
}

void Telemetry::OnManagerCrash() {
  MutexLock lock(mu_);
  manager_crashes_.push_back(env_->Now());
}

void Telemetry::SetStepHook(int64_t n, std::function<void()> hook) {
  MutexLock lock(mu_);
  step_hook_at_ = n;
  step_hook_ = std::move(hook);
}

void Telemetry::OnActive(int slot) {
  MutexLock lock(mu_);
  ++incarnations_;
  active_slot_ = slot;
}

void Telemetry::OnFlight(const FlightStatus& f) {
  MutexLock lock(mu_);
  flight_ = f;
}

void Telemetry::OnRecovered(std::chrono::nanoseconds took, int64_t calls) {
  MutexLock lock(mu_);
  recovery_.manager_recovery_ms.push_back(Ms(took));
  recovery_.manager_recovery_calls.push_back(calls);
}

std::optional<double> Telemetry::MedianStepS(int64_t n) const {
  MutexLock lock(mu_);
  if (n < 1 || int64_t(step_times_.size()) < n + 1) return std::nullopt;
  std::vector<double> gaps;
  for (int64_t i = 0; i < n; ++i) {
    gaps.push_back(std::chrono::duration<double>(step_times_[i + 1] - step_times_[i]).count());
  }
  std::nth_element(gaps.begin(), gaps.begin() + n / 2, gaps.end());
  return gaps[n / 2];
}

StallReport Telemetry::Stall(Clock::time_point run_start) const {
  MutexLock lock(mu_);
  StallReport r;
  const auto now = env_->Now();
  r.t_s = std::chrono::duration<double>(now - run_start).count();
  r.stalled_s = std::chrono::duration<double>(now - std::max(run_start, last_step_at_)).count();
  r.manager_slot = active_slot_;
  r.manager_incarnations = incarnations_;
  r.flight = flight_;
  return r;
}

Clock::time_point Telemetry::last_step_at() const {
  MutexLock lock(mu_);
  return last_step_at_;
}

std::pair<Progress, ControllerSnapshot> Telemetry::Latest() const {
  MutexLock lock(mu_);
  return {progress_, controller_};
}

RecoveryStats Telemetry::recovery() const {
  MutexLock lock(mu_);
  RecoveryStats r = recovery_;
  r.lost_not_redone = int64_t(lost_.size());
  return r;
}

}  // namespace acan::runtime
