// ChaosAccount: what a supervisor of processes learns about real kills from the puts it watches at
// the server (NatsSpace::WatchPuts), independent of the processes it kills: which handler holds
// which task (its claims), which tasks a kill loses, how long each one's redo took from the kill
// (against the usual time of its class: the same task in the other steps), the next step after a
// manager's kill, and the compute done more than once. It keeps a Telemetry, so summary.json's
// "recovery" has the in-process run's fields; a task's time there is its time in its handler's
// hands, from the take to the report (the trips through the server are most of it across
// processes), not its kernel's time alone.
// Thread-safe: puts arrive on a libnats thread, kills on the supervisor's.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "acan/key.h"
#include "acan/value.h"
#include "common/thread_annotations.h"
#include "runtime/core/layout.h"
#include "runtime/core/summary.h"
#include "runtime/view/telemetry.h"

namespace acan::runtime {

class ChaosAccount {
 public:
  explicit ChaosAccount(const Layout& layout) : layout_(layout) {}

  // Every put of the job, in the order the server received them.
  void OnPut(const Key& key, const Value& value);
  // Handler `id` was killed now: the tasks it holds are lost, their redo timed from now.
  void OnHandlerKilled(int id);
  // The active manager was killed now: the next step's completion is timed from now.
  void OnManagerKilled();

  RecoveryStats recovery() const;
  // Kernel time of every report, and of the work lost in killed handlers (claim to kill), over
  // the kernel time of the first report of each task, less one; 0 before any report.
  double extra_compute_ratio() const;
  int64_t lost_tasks() const;
  // Of them, those whose redo has not been reported (yet): at the job's end, 0 when every lost
  // task's recovery was timed.
  int64_t lost_not_redone() const;
  // Each redone lost task's path, for finding where a slow recovery spent its time: its class, the
  // handler killed, the milliseconds from the kill to its restart notice, to the resend (the new
  // attempt's put), to the redo's claim (and by whom), to its report, its time in hand, and the
  // manager kills between.
  std::vector<LostTaskTrace> lost_trace() const;
  // From a report's sending (its handler's clock) to its reading here: how far this watch runs
  // behind the job (the trace's times above are times of reading).
  LatencyHistogram watch_lag() const;
  // The manager saved its state with the last step applied: killing it now would only lose the
  // artefacts it writes next (the chaos spares it).
  bool job_finished() const;

 private:
  struct Held {
    int handler = -1;
    Clock::time_point since;
  };
  struct Lost {
    Clock::time_point at;  // the kill
    int64_t at_wall_ns = 0;
    int32_t attempt =
        0;             // the attempt it held (a report without a time: a later one's is the redo)
    int handler = -1;  // the one killed
    std::optional<Clock::time_point> noticed, resent, claimed;
    int claimer = -1;
  };
  // Forgets the tasks of steps long past (kKeepSteps behind the newest seen), so that a long run's
  // account stays bounded: a report of one arriving later still counts as compute, and as useful
  // (a duplicate that late is not told from a first report).
  void ForgetOldStepsLocked(int64_t step) REQUIRES(mu_);
  static constexpr int64_t kKeepSteps = 256;
  const Layout layout_;
  Telemetry telemetry_;
  mutable Mutex mu_;
  std::map<std::string, Held> held_ GUARDED_BY(mu_);        // task key -> its last claim
  std::set<std::string> done_ GUARDED_BY(mu_);              // task keys reported at least once
  std::map<std::string, int32_t> attempt_ GUARDED_BY(mu_);  // each task's last attempt sent
  std::map<std::string, Lost> lost_now_ GUARDED_BY(mu_);    // lost, not yet redone
  // kill -> redo reported, the redo's own time, its class (as RecoveryStats).
  std::vector<double> recovery_ms_ GUARDED_BY(mu_), redo_ms_ GUARDED_BY(mu_);
  std::vector<std::string> redo_classes_ GUARDED_BY(mu_);
  std::vector<double> redo_speeds_ GUARDED_BY(mu_);
  std::vector<LostTaskTrace> trace_ GUARDED_BY(mu_);  // lost_trace()
  std::vector<Clock::time_point> manager_kills_ GUARDED_BY(mu_);
  LatencyHistogram watch_lag_ GUARDED_BY(mu_);
  double useful_s_ GUARDED_BY(mu_) = 0;
  double total_s_ GUARDED_BY(mu_) = 0;
  int64_t lost_ GUARDED_BY(mu_) = 0;
  bool finished_ GUARDED_BY(mu_) = false;
  int64_t newest_step_ GUARDED_BY(mu_) = 0;      // of a task seen
  int64_t forgotten_below_ GUARDED_BY(mu_) = 0;  // steps forgotten
};

}  // namespace acan::runtime
