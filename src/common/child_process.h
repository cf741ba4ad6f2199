// Starting a child process (fork and exec, in this one place) and telling how one ended. A child
// started here does not outlive the thread that started it: it gets a signal of its choosing when
// that thread ends, its parent SIGKILLed included (PR_SET_PDEATHSIG). Stateless; thread-safe,
// but the parent-death signal is tied to the calling thread: start children from a thread that
// lives as long as they should.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "acan/status.h"

namespace acan {

struct SpawnOptions {
  // The signal the child gets when the thread that started it ends (0: none). SIGTERM lets a role
  // process leave cleanly, within its bound (roles.h, SignalStop).
  int parent_death_signal = SIGTERM;
  // Signals that stay blocked across the exec, pending rather than fatal until the program is
  // ready for them; every other signal is open in the child.
  std::vector<int> blocked;
  // A process group of its own: a terminal's Ctrl-C (SIGINT to the foreground group) does not
  // reach it, and its owner stops it when it chooses (a server after its clients).
  bool own_process_group = false;
  // Standard input, output and error to /dev/null (a server that logs to a file of its own).
  bool quiet = false;
};

// Starts `argv` (argv[0]: the executable's path) as a child process and returns its PID.
// Unavailable naming the executable and the reason when the fork or the exec fails: an exec that
// fails is reported here, through a close-on-exec pipe, and the child is reaped, never left for
// the caller to find as an exit code 127 later.
// REQUIRES: argv is not empty.
Result<pid_t> SpawnChild(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// How a child ended, from waitpid's status: "exit code 3", "killed by signal 9".
std::string DescribeExit(int wstatus);

// The path of this executable (/proc/self/exe), to start its own commands as children; "acan"
// when it cannot be read.
std::string SelfExecutable();

}  // namespace acan
