#include "runtime/core/task_watch.h"

#include <algorithm>

namespace acan::runtime {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;

nanoseconds TaskWatch::OnSent(StepTask& t, Clock::time_point now) const {
  t.sent_at = now;
  const nanoseconds timeout = controller_->Timeout(t.spec);
  t.deadline = t.sent_at + timeout;
  if (const auto fastest = stragglers_->Fastest(t.spec, -1); fastest && speculate_) {
    t.straggler_check_at = t.sent_at + nanoseconds(static_cast<int64_t>(fastest->second));
  }
  return timeout;
}

void TaskWatch::OnReport(const StepTask& t, int handler, int64_t exec_ns) {
  stragglers_->Observe(handler, t.spec, exec_ns);
}

void TaskWatch::OnDone(const StepTask& t, Clock::time_point now) {
  if (t.attempt == 1) controller_->Observe(t.spec, duration_cast<nanoseconds>(now - t.sent_at));
}

namespace {

bool InFlight(const StepTask& t) { return t.attempt > 0 && !t.done && t.dispatched; }

}  // namespace

std::vector<TaskRef> TaskWatch::Due(const StepsInFlight& steps, Clock::time_point now) const {
  std::vector<TaskRef> due;
  for (const auto& [step, st] : steps) {
    for (size_t i = 0; i < st.tasks.size(); ++i) {
      if (InFlight(st.tasks[i]) && st.tasks[i].deadline <= now) due.emplace_back(step, i);
    }
  }
  return due;
}

Decision TaskWatch::OnDeadline(StepTask& t, const Seen& seen, Clock::time_point now) {
  using Kind = Decision::Kind;
  // Still queued in the space: nothing was lost, the handlers are just busy. Wait longer.
  if (!seen.queued.has_value()) return Decision::Ask(Look::kQueued);
  if (*seen.queued) {
    t.deadline = now + controller_->Timeout(t.spec);
    return Decision::Do(Kind::kWait);
  }
  // Claimed by a live incarnation: slow, not lost (unless it has been far too long).
  if (!seen.claim.has_value()) return Decision::Ask(Look::kClaim);
  const ClaimState claim = *seen.claim;
  const nanoseconds timeout = controller_->Timeout(t.spec);
  if (claim == ClaimState::kAlive && now - t.sent_at < kHungFactor * timeout) {
    t.deadline = now + timeout;
    return Decision::Do(Kind::kExtend);
  }
  if (claim == ClaimState::kNone) {
    // Done, its claim gone and its report landed after the loop took the reports: nothing is
    // lost, the report is read on the next turn.
    if (!seen.reported.has_value()) return Decision::Ask(Look::kReported);
    if (*seen.reported) {
      t.deadline = now + timeout;
      return Decision::Do(Kind::kWait);
    }
  }
  controller_->Backoff(t.spec);
  return Decision::Do(Kind::kResend, claim == ClaimState::kNone     ? "timeout"
                                     : claim == ClaimState::kStale  ? "handler-restarted"
                                     : claim == ClaimState::kDead   ? "handler-died"
                                     : claim == ClaimState::kLapsed ? "claim-lapsed"
                                                                    : "hung");
}

Decision TaskWatch::OnRestartNotice(const StepTask& t, ClaimState claim) {
  // A known death, not a sign of congestion: the timeout stays as it is.
  if (!InFlight(t) || (claim != ClaimState::kStale && claim != ClaimState::kDead)) return {};
  return Decision::Do(Decision::Kind::kResend,
                      claim == ClaimState::kDead ? "handler-died" : "handler-restarted");
}

Decision TaskWatch::OnStragglerTick(StepTask& t, Clock::time_point now) const {
  if (!speculate_ || !InFlight(t) || t.speculated || t.straggler_check_at > now) return {};
  // Past the moment any claimant could still be overtaken by a copy it is not looked at again
  // (a manager that woke for each task of the step as long as it ran cost two handlers at full
  // speed 14% of their throughput, docs/benchmarks.md). The moment is judged on the times known
  // now; one learnt later (a handler slowed down and reporting so) reaches only the next tasks.
  const auto until = stragglers_->WorthACopyUntilNs(t.spec);
  if (until && double(duration_cast<nanoseconds>(now - t.sent_at).count()) >= *until) {
    t.straggler_check_at = Clock::time_point::max();
    return {};
  }
  // Looked at again after the fastest handler's time for it.
  const auto fastest = stragglers_->Fastest(t.spec, -1);
  t.straggler_check_at =
      now +
      std::max<Clock::duration>(nanoseconds(static_cast<int64_t>(fastest ? fastest->second : 1e6)),
                                std::chrono::microseconds(100));
  return Decision::Ask(Look::kIdle);
}

Decision TaskWatch::OnStragglerSeen(StepTask& t, const Seen& seen, Clock::time_point now) const {
  if (!seen.idle.has_value()) return Decision::Ask(Look::kIdle);
  if (!*seen.idle) return {};
  // One live claimant: queued, lost (the deadlines' business) or run twice already otherwise.
  if (!seen.claimants.has_value()) return Decision::Ask(Look::kClaimants);
  if (seen.claimants->size() != 1) return {};
  const double elapsed = double(duration_cast<nanoseconds>(now - t.sent_at).count());
  if (!stragglers_->WorthACopy(seen.claimants->front(), t.spec, elapsed)) return {};
  t.speculated = true;
  return Decision::Do(Decision::Kind::kSpeculate);
}

bool TaskWatch::OnRecovered(StepTask& t, bool done, bool held, Clock::time_point now) const {
  t.dispatched = done || held;
  t.done = done;
  if (!t.dispatched || done) return false;
  // Queued or running: a fresh deadline instead of a second copy.
  t.attempt = 1;
  t.sent_at = now;
  t.deadline = t.sent_at + controller_->Timeout(t.spec);
  return true;
}

Clock::time_point TaskWatch::NextWake(const StepsInFlight& steps, Clock::time_point latest) const {
  Clock::time_point wake = latest;
  for (const auto& [step, st] : steps) {
    for (const StepTask& t : st.tasks) {
      if (InFlight(t)) wake = std::min(wake, t.deadline);
    }
  }
  if (!steps.empty()) {  // stragglers are looked for in the oldest step only
    for (const StepTask& t : steps.begin()->second.tasks) {
      if (InFlight(t) && !t.speculated) wake = std::min(wake, t.straggler_check_at);
    }
  }
  return wake;
}

}  // namespace acan::runtime
