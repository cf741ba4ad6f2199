// The role processes of `acan train --processes` (DESIGN.md section 9a): an active manager, a
// standby and N handlers, children of this process (common/child_process.h). The supervisor learns
// of each death from waitpid at once and starts the role again under the same name, a handler under
// the same id, once the others are told (Options::on_death): a dead handler's tasks are sent again
// without waiting for their deadlines, a dead manager's lease is free for the standby. It stops
// them all on request, and kills whatever still runs when it is destroyed; a child whose
// supervisor was killed gets SIGTERM from the kernel (the parent-death signal) and leaves within
// its bound (roles.h, SignalStop). No role outlives the run.
//
// Not thread-safe: one thread calls it, the one that made it (a child's parent-death signal comes
// when the thread that started it ends).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "acan/status.h"

namespace acan::cli {

enum class Role { kManager, kHandler };
const char* RoleName(Role role);  // "manager", "handler"

struct RoleProcess {
  Role role = Role::kHandler;
  std::string name;  // m0, m1, h0, ...
  int id = 0;        // the handler's id
  pid_t pid = -1;    // -1: not running
  int restarts = 0;
  int kills = 0;        // of the restarts, the chaos's own kills
  bool killed = false;  // the chaos killed it: the death waitpid reports next is that one
  bool done = false;    // exited 0: the job is finished (or it left on request)
};

class ProcessSupervisor {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    int handlers = 1;
    // A role that dies more often than this, the chaos's kills aside, stops the run.
    int max_restarts = 50;
    // After Stop, how long the roles have to leave before they are SIGKILLed (theirs is shorter:
    // this is for one that cannot even answer a signal).
    std::chrono::milliseconds stop_grace{10000};
    // Without it, each death the chaos did not cause is said on stderr.
    bool quiet = false;
    // The command line of a role process, at each start (a handler started again gets the speed
    // of the interval it starts in). REQUIRED.
    std::function<std::vector<std::string>(const RoleProcess&)> command;
    // A role that died before the job finished, before it is started again: what the others
    // must learn at once.
    std::function<void(const RoleProcess&)> on_death;
  };

  explicit ProcessSupervisor(Options options);
  ProcessSupervisor(const ProcessSupervisor&) = delete;
  ProcessSupervisor& operator=(const ProcessSupervisor&) = delete;
  // SIGKILLs and reaps every role still running.
  ~ProcessSupervisor();

  // Starts the managers m0 and m1, then handlers h0..h<n-1>. A role that cannot be started stops
  // the run (those started are told to leave) and its error is returned.
  Status StartAll();

  // Reaps one death, if one is waiting, and acts on it; false when none was:
  //  - exit 0: the role is done (both managers done: the job is finished);
  //  - once stopping or the job finished: nothing more;
  //  - exit 2 (bad input) or 127 (it could not run): starting it again would fail the same way,
  //    the run stops;
  //  - otherwise on_death, and the role is started again, unless it died more than max_restarts
  //    times or cannot be started: then the run stops.
  // Also SIGKILLs the roles that outstay Options::stop_grace after Stop.
  bool ReapOne();

  // SIGTERM to every running role: each leaves, and is not started again. The first stop's exit
  // code is the run's.
  void Stop(int exit_code);
  // The chaos's SIGKILL of a running role: its death is not said and does not count against
  // max_restarts. False when it is not running.
  bool Kill(RoleProcess& p);
  // A running handler's new slow-down (SIGRTMIN queued with the slow-down times 1000).
  void SetSpeed(int h, double speed);

  int running() const;
  bool stopping() const { return stop_at_.has_value(); }
  int exit_code() const { return exit_code_; }
  bool managers_done() const { return processes_[0].done && processes_[1].done; }
  // When the second manager ended with exit 0, if both have.
  std::optional<Clock::time_point> finished_at() const { return finished_at_; }

  // Managers at 0 and 1, handler h at 2 + h.
  const std::vector<RoleProcess>& processes() const { return processes_; }
  RoleProcess& manager(int i) { return processes_[i]; }
  RoleProcess& handler(int h) { return processes_[2 + h]; }

 private:
  Status Start(RoleProcess& p);
  // Acts on the death of `p` (reaped with `wstatus`).
  void OnDeath(RoleProcess& p, pid_t pid, int wstatus);

  const Options options_;
  std::vector<RoleProcess> processes_;
  std::optional<Clock::time_point> stop_at_;
  std::optional<Clock::time_point> finished_at_;
  int exit_code_ = 0;
};

}  // namespace acan::cli
