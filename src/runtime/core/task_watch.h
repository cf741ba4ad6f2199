// TaskWatch: what the manager decides about the tasks it has sent, as a pure core (etcd raft's
// shape): it takes events (a task sent, a report, a clock tick, what a look in the space found)
// and returns what to do (look at the queue, a claim or the reports; wait; send again and why;
// send a copy to a faster handler), changing only the tasks' own records (their deadlines and
// attempts), the controller's timeouts and the straggler rules. The manager's loop carries the
// decisions out against the space; this class never touches a space, a thread or a clock of its
// own, so every deadline, recovery and straggler rule is tested synchronously
// (task_watch_test.cc). Not thread-safe: one manager owns one.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "acan/clock.h"
#include "runtime/core/controller.h"
#include "runtime/core/dataflow.h"
#include "runtime/core/dispatch.h"
#include "runtime/core/records.h"
#include "runtime/core/straggler.h"

namespace acan::runtime {

// What the loop is asked to find out in the space about a task before the core can decide.
enum class Look {
  kQueued,     // is its task tuple still waiting in the space?
  kClaim,      // who holds it (Liveness::ClaimOf)?
  kReported,   // is its done report in the space already?
  kIdle,       // is no task of the job queued at all (some handler is idle)?
  kClaimants,  // which handlers hold a live claim on it (Liveness::LiveClaimants)?
};

// What the loop found so far for one task (each answer once asked).
struct Seen {
  std::optional<bool> queued;
  std::optional<ClaimState> claim;
  std::optional<bool> reported;
  std::optional<bool> idle;
  std::optional<std::vector<int>> claimants;
};

// What to do with a task.
struct Decision {
  enum class Kind {
    kLook,       // find out `look`, then ask again
    kNothing,    // not due, or nothing to do
    kWait,       // nothing was lost: wait, its deadline moved on
    kExtend,     // a live handler is slow: its deadline moved on (a deadline extended)
    kResend,     // lost: drop its claims and send it again, for `reason`
    kSpeculate,  // send one copy to a faster handler (not a retransmission)
  };
  Kind kind = Kind::kNothing;
  Look look = Look::kQueued;
  const char* reason = nullptr;

  static Decision Ask(Look l) { return {Kind::kLook, l, nullptr}; }
  static Decision Do(Kind k, const char* why = nullptr) { return {k, Look::kQueued, why}; }
};

// The steps a manager has in flight, by step.
using StepsInFlight = std::map<int64_t, StepFlow>;

class TaskWatch {
 public:
  // A claimed task is sent again anyway after this many timeouts (a hung handler).
  static constexpr int kHungFactor = 16;

  // REQUIRES: `controller` and `stragglers` outlive the watch.
  TaskWatch(Controller* controller, StragglerWatch* stragglers, bool speculate)
      : controller_(controller), stragglers_(stragglers), speculate_(speculate) {}

  // A copy of `t` goes out at `now` (a first send, a retransmission or a speculative copy): its
  // deadline, and when it is next looked at as a straggler. Returns its timeout.
  std::chrono::nanoseconds OnSent(StepTask& t, Clock::time_point now) const;

  // A copy of `t` reported done by `handler` after `exec_ns` of kernel time (a copy that came
  // second too: every copy's time tells how fast its handler is).
  void OnReport(const StepTask& t, int handler, int64_t exec_ns);
  // `t` is done for the first time at `now`: a first attempt's latency teaches the controller.
  void OnDone(const StepTask& t, Clock::time_point now);

  // The tasks sent and not done whose deadlines have passed at `now`, in step and task order.
  std::vector<TaskRef> Due(const StepsInFlight& steps, Clock::time_point now) const;

  // A due task: what `seen` so far means (ask again after each kLook with the answer added).
  // Queued: wait. Held by a live claim not yet hung: extend. No claim but a report in the space:
  // wait for it to be read. Otherwise it is lost: the timeout backs off and it goes again, its
  // reason named after the claim ("timeout", "handler-restarted", "handler-died",
  // "claim-lapsed", "hung").
  Decision OnDeadline(StepTask& t, const Seen& seen, Clock::time_point now);

  // A handler restarted (a restart notice): a task in flight whose claim is `claim` goes again
  // at once when the claim is stale or dead, without waiting for its deadline or backing off.
  static Decision OnRestartNotice(const StepTask& t, ClaimState claim);

  // The oldest step's task `t` at `now` (stragglers are looked for in the oldest step only): when
  // due a look, its next look is scheduled, and kLook kIdle is returned when it may deserve a
  // copy (ask OnStragglerSeen then); else kNothing. Without speculation, always kNothing.
  Decision OnStragglerTick(StepTask& t, Clock::time_point now) const;
  // What `seen` means for that task: with some handler idle and one live claimant far slower
  // than the fastest other handler, one speculative copy (marked sent); else kNothing. `seen.idle`
  // may be shared by the tasks of one turn (the loop asks once).
  Decision OnStragglerSeen(StepTask& t, const Seen& seen, Clock::time_point now) const;

  // A task of a step a predecessor had in flight, found `done` (its outputs are all in the
  // space) or `held` (queued, or claimed by a live handler): done or in flight with a fresh
  // deadline (true: in flight, counted in the pouch), else left to be sent.
  bool OnRecovered(StepTask& t, bool done, bool held, Clock::time_point now) const;

  // When the loop must look again: the earliest deadline in flight, the earliest straggler look
  // of the oldest step, no later than `latest`.
  Clock::time_point NextWake(const StepsInFlight& steps, Clock::time_point latest) const;

 private:
  Controller* controller_;
  StragglerWatch* stragglers_;
  const bool speculate_;
};

}  // namespace acan::runtime
