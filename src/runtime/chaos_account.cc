#include "runtime/chaos_account.h"

#include "runtime/messages.h"
#include "runtime/progress.h"

namespace acan::runtime {

void ChaosAccount::OnPut(const Key& key, const Value& value) {
  auto parsed = layout_.Parse(key);
  if (!parsed.ok()) return;
  switch (parsed->kind) {
    case KeyKind::kTask: {
      auto attempt = TaskMessageAttempt(value);
      std::lock_guard lock(mu_);
      if (attempt.ok()) attempt_[parsed->task_key] = *attempt;
      return;
    }
    case KeyKind::kClaim: {
      std::lock_guard lock(mu_);
      if (done_.count(parsed->task_key) == 0) {
        Held& h = held_[parsed->task_key];
        if (h.handler != parsed->handler) h = {parsed->handler, Clock::now()};
      }
      return;
    }
    case KeyKind::kDone: {
      auto done = DecodeDoneMessage(value);
      if (!done.ok() || !done->error.empty() || !done->missing.empty()) return;
      const double s = double(done->exec_ns) / 1e9;
      const int64_t in_hand_ns = done->in_hand_ns > 0 ? done->in_hand_ns : done->exec_ns;
      {
        std::lock_guard lock(mu_);
        held_.erase(parsed->task_key);
        total_s_ += s;
        if (done_.insert(parsed->task_key).second) useful_s_ += s;
        if (auto it = lost_now_.find(parsed->task_key); it != lost_now_.end()) {
          // The report of the attempt the kill hit, in flight then: nothing was lost after all.
          if (done->attempt > it->second.attempt) {
            recovery_ms_.push_back(
                std::chrono::duration<double, std::milli>(Clock::now() - it->second.at).count());
            redo_ms_.push_back(double(in_hand_ns) / 1e6);
            redo_classes_.push_back(Layout::TaskClass(parsed->task_key));
          } else {
            --lost_;
          }
          lost_now_.erase(it);
        }
      }
      telemetry_.OnTaskDone(parsed->task_key, in_hand_ns);
      return;
    }
    case KeyKind::kManagerState: {
      auto p = Progress::FromJson(value.AsString());
      if (!p.ok()) return;
      telemetry_.OnStep(*p, ControllerSnapshot{});
      if (p->finished) {
        std::lock_guard lock(mu_);
        finished_ = true;
      }
      return;
    }
    default:
      return;
  }
}

void ChaosAccount::OnHandlerKilled(int id) {
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
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
      lost_now_[it->first] = {now, attempt == attempt_.end() ? 0 : attempt->second};
      ++lost_;
      it = held_.erase(it);
    }
  }
}

RecoveryStats ChaosAccount::recovery() const {
  RecoveryStats r = telemetry_.recovery();
  std::lock_guard lock(mu_);
  r.handler_ms = recovery_ms_;
  r.lost_task_ms = redo_ms_;
  r.lost_classes = redo_classes_;
  return r;
}

void ChaosAccount::OnManagerKilled() { telemetry_.OnManagerCrash(); }

double ChaosAccount::extra_compute_ratio() const {
  std::lock_guard lock(mu_);
  return useful_s_ > 0 ? total_s_ / useful_s_ - 1 : 0.0;
}

bool ChaosAccount::job_finished() const {
  std::lock_guard lock(mu_);
  return finished_;
}

int64_t ChaosAccount::lost_tasks() const {
  std::lock_guard lock(mu_);
  return lost_;
}

}  // namespace acan::runtime
