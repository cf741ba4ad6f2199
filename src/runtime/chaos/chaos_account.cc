#include "runtime/chaos/chaos_account.h"

#include "runtime/core/messages.h"
#include "runtime/core/progress.h"
#include "runtime/state/env.h"

namespace acan::runtime {

void ChaosAccount::OnPut(const Key& key, const Value& value) {
  auto parsed = layout_.Parse(key);
  if (!parsed.ok()) return;
  switch (parsed->kind) {
    case KeyKind::kTask: {
      auto attempt = TaskMessageAttempt(value);
      MutexLock lock(mu_);
      if (!attempt.ok()) return;
      attempt_[parsed->task_key] = *attempt;
      ForgetOldStepsLocked(parsed->step);
      // The put a lost task was claimed from came before its claim, which came before the kill:
      // a put of it read after the kill is its resending, whatever its attempt (a manager that
      // took over numbers its attempts from 1 again).
      if (auto it = lost_now_.find(parsed->task_key); it != lost_now_.end() && !it->second.resent) {
        it->second.resent = Clock::now();
      }
      return;
    }
    case KeyKind::kClaim: {
      MutexLock lock(mu_);
      if (done_.count(parsed->task_key) == 0) {
        Held& h = held_[parsed->task_key];
        if (h.handler != parsed->handler) h = {parsed->handler, Clock::now()};
      }
      if (auto it = lost_now_.find(parsed->task_key);
          it != lost_now_.end() && it->second.resent && !it->second.claimed) {
        it->second.claimed = Clock::now();
        it->second.claimer = parsed->handler;
      }
      return;
    }
    case KeyKind::kDone: {
      auto done = DecodeDoneMessage(value);
      if (!done.ok() || !done->error.empty() || !done->missing.empty()) return;
      const double s = double(done->exec_ns) / 1e9;
      const int64_t in_hand_ns = done->in_hand_ns > 0 ? done->in_hand_ns : done->exec_ns;
      const int64_t read_wall_ns = Env::Default()->WallNs();
      {
        MutexLock lock(mu_);
        if (done->reported_wall_ns > 0) {
          watch_lag_.Record(uint64_t(std::max<int64_t>(read_wall_ns - done->reported_wall_ns, 0)));
        }
        held_.erase(parsed->task_key);
        total_s_ += s;
        if (done_.insert(parsed->task_key).second) useful_s_ += s;
        if (auto it = lost_now_.find(parsed->task_key); it != lost_now_.end()) {
          // The report of the attempt the kill hit, sent before the kill and in flight then:
          // nothing was lost after all. Any other report is the redo, whatever its attempt's
          // number (a manager that took over numbers them from 1 again).
          const Lost& killed = it->second;
          const bool sent_before_kill =
              done->handler == killed.handler &&
              (done->reported_wall_ns > 0 ? done->reported_wall_ns <= killed.at_wall_ns
                                          : done->attempt <= killed.attempt);
          if (!sent_before_kill) {
            const Lost& l = it->second;
            // The redo's report as its handler sent it (this watch may read it later, behind the
            // job's stream of puts); as read here when the report does not say.
            const auto now =
                done->reported_wall_ns > 0
                    ? l.at + std::chrono::nanoseconds(done->reported_wall_ns - l.at_wall_ns)
                    : Clock::now();
            auto ms = [&l](std::optional<Clock::time_point> t) -> std::optional<double> {
              if (!t) return std::nullopt;
              return std::chrono::duration<double, std::milli>(*t - l.at).count();
            };
            recovery_ms_.push_back(std::chrono::duration<double, std::milli>(now - l.at).count());
            redo_ms_.push_back(double(in_hand_ns) / 1e6);
            redo_classes_.push_back(Layout::TaskClass(parsed->task_key));
            redo_speeds_.push_back(done->speed);
            int manager_kills = 0;
            for (auto t : manager_kills_) manager_kills += t >= l.at && t <= now;
            trace_.push_back({.task = parsed->task_key,
                              .task_class = redo_classes_.back(),
                              .killed_handler = l.handler,
                              .noticed_ms = ms(l.noticed),
                              .resent_ms = ms(l.resent),
                              .claimed_ms = ms(l.claimed),
                              .claimed_by = l.claimer,
                              .done_ms = recovery_ms_.back(),
                              .redo_in_hand_ms = redo_ms_.back(),
                              .manager_kills_between = manager_kills});
          } else {
            --lost_;
          }
          lost_now_.erase(it);
        }
      }
      telemetry_.OnTaskDone(parsed->task_key, in_hand_ns);
      return;
    }
    case KeyKind::kRestartNotice: {
      MutexLock lock(mu_);
      for (auto& [task, lost] : lost_now_) {
        if (lost.handler == parsed->handler && !lost.noticed) lost.noticed = Clock::now();
      }
      return;
    }
    case KeyKind::kManagerState: {
      auto p = Progress::FromJson(value.AsString());
      if (!p.ok()) return;
      telemetry_.OnStep(*p, ControllerSnapshot{});
      if (p->finished) {
        MutexLock lock(mu_);
        finished_ = true;
      }
      return;
    }
    default:
      return;
  }
}

void ChaosAccount::ForgetOldStepsLocked(int64_t step) {
  newest_step_ = std::max(newest_step_, step);
  // In strides of kKeepSteps, so that the maps are walked once per kKeepSteps steps.
  if (newest_step_ - forgotten_below_ < 2 * kKeepSteps) return;
  forgotten_below_ = newest_step_ - kKeepSteps;
  auto old = [&](const std::string& task) REQUIRES(mu_) {
    const int64_t s = Layout::StepOf(task);
    return s >= 0 && s < forgotten_below_ && lost_now_.count(task) == 0;
  };
  std::erase_if(attempt_, [&](const auto& kv) REQUIRES(mu_) { return old(kv.first); });
  std::erase_if(held_, [&](const auto& kv) REQUIRES(mu_) { return old(kv.first); });
  std::erase_if(done_, [&](const std::string& task) REQUIRES(mu_) { return old(task); });
}

void ChaosAccount::OnHandlerKilled(int id) {
  const auto now = Clock::now();
  const int64_t now_wall_ns = Env::Default()->WallNs();
  MutexLock lock(mu_);
  {
    for (auto it = held_.begin(); it != held_.end();) {
      if (it->second.handler != id) {
        ++it;
        continue;
      }
      // What it had run of the task is lost with it (at most: a task waiting in its pouch had
      // not begun).
      total_s_ += std::chrono::duration<double>(now - it->second.since).count();
      auto attempt = attempt_.find(it->first);
      Lost& lost = lost_now_[it->first];
      lost = Lost{};
      lost.at = now;
      lost.at_wall_ns = now_wall_ns;
      lost.attempt = attempt == attempt_.end() ? 0 : attempt->second;
      lost.handler = id;
      ++lost_;
      it = held_.erase(it);
    }
  }
}

RecoveryStats ChaosAccount::recovery() const {
  RecoveryStats r = telemetry_.recovery();
  MutexLock lock(mu_);
  r.handler_ms = recovery_ms_;
  r.lost_task_ms = redo_ms_;
  r.lost_classes = redo_classes_;
  r.lost_speeds = redo_speeds_;
  r.lost_tasks = lost_;
  r.lost_not_redone = int64_t(lost_now_.size());
  // These are in-hand times, the trips through the server included, which a slow-down does not
  // stretch: no class time at full speed is made of them (the at-speed recovery stays null).
  r.task_ms_by_class_at_full_speed.clear();
  return r;
}

void ChaosAccount::OnManagerKilled() {
  telemetry_.OnManagerCrash();
  MutexLock lock(mu_);
  manager_kills_.push_back(Clock::now());
}

LatencyHistogram ChaosAccount::watch_lag() const {
  MutexLock lock(mu_);
  return watch_lag_;
}

std::vector<LostTaskTrace> ChaosAccount::lost_trace() const {
  MutexLock lock(mu_);
  return trace_;
}

double ChaosAccount::extra_compute_ratio() const {
  MutexLock lock(mu_);
  return useful_s_ > 0 ? total_s_ / useful_s_ - 1 : 0.0;
}

bool ChaosAccount::job_finished() const {
  MutexLock lock(mu_);
  return finished_;
}

int64_t ChaosAccount::lost_tasks() const {
  MutexLock lock(mu_);
  return lost_;
}

int64_t ChaosAccount::lost_not_redone() const {
  MutexLock lock(mu_);
  return int64_t(lost_now_.size());
}

}  // namespace acan::runtime
