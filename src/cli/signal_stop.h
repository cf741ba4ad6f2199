// SIGTERM and SIGINT as a stop request, for the commands that run until told to stop (the role
// processes, the supervisor of a run of processes), and the bound on how long a role may take to
// leave once told: a role whose space does not answer would otherwise wait out every call to it
// (each call to a lost NATS server is retried for the URI's retry_ms, a minute by default) and
// answer SIGTERM minutes later, or, orphaned by a killed supervisor, never. Thread-safe.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stop_token>
#include <string>

namespace acan::cli {

// A bound on a process's leaving: still running `within` after the stop signal, it says so on
// stderr, with whether its space's server can be reached, and exits at once with `exit_code`.
struct LeaveBound {
  std::chrono::milliseconds within{0};  // 0: no bound
  std::string who;                      // what the line calls the process: "handler 3"
  std::string space;                    // its space's URI (its servers are probed for the line)
  int exit_code = 1;
};

// How long a role process (acan manager, acan handler) has to leave after SIGTERM or SIGINT:
// a clean leave (a handler returns its tasks, a manager frees its lease) takes well under a
// second when the space answers; the bound leaves room for a slow build (sanitizers) on a busy
// machine, and is still a hundred times less than the minutes a lost server's retries take.
inline constexpr std::chrono::milliseconds kRoleLeaveWithin{5000};

// Blocks SIGTERM and SIGINT in the calling thread (construct it before any other thread starts,
// so that all inherit the mask) and turns the first one into a stop request; with a bound, the
// process ends that long after it whatever it is doing.
class SignalStop {
 public:
  explicit SignalStop(LeaveBound bound = {});
  std::stop_token token() const { return state_->source.get_token(); }
  int signal() const { return state_->signal.load(); }  // 0 until one arrived

 private:
  // Shared with the thread that waits for the signal, which may outlive this object.
  struct State {
    std::stop_source source;
    std::atomic<int> signal{0};
  };
  std::shared_ptr<State> state_;
};

}  // namespace acan::cli
