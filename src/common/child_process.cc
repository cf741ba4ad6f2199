#include "common/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace acan {

Result<pid_t> SpawnChild(const std::vector<std::string>& args, const SpawnOptions& options) {
  // Everything the child uses is made before the fork: in a child of a threaded process only
  // async-signal-safe calls are safe until the exec (an allocation could wait forever on a lock
  // another thread held at the fork).
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  sigset_t mask;
  sigemptyset(&mask);
  for (int signal : options.blocked) sigaddset(&mask, signal);
  const auto failed = [&](const char* step, int error) {
    return Status::Unavailable(
        fmt::format("cannot start '{}': {} failed: {}", args[0], step, std::strerror(error)));
  };
  // The child writes its errno here when it cannot exec; a successful exec closes the pipe.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return failed("pipe", errno);
  std::fflush(nullptr);  // a child must not inherit (and print again) what is buffered here
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(report[0]);
    close(report[1]);
    return failed("fork", error);
  }
  if (pid == 0) {
    close(report[0]);
    int error = 0;
    if (options.parent_death_signal != 0 &&
        prctl(PR_SET_PDEATHSIG, options.parent_death_signal) != 0) {
      error = errno;
    } else if (options.parent_death_signal != 0 && getppid() != parent) {
      _exit(127);  // the parent died before the prctl: no signal would come
    } else {
      pthread_sigmask(SIG_SETMASK, &mask, nullptr);
      if (options.own_process_group) setpgid(0, 0);
      if (options.quiet) {
        const int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
          dup2(devnull, STDIN_FILENO);
          dup2(devnull, STDOUT_FILENO);
          dup2(devnull, STDERR_FILENO);
        }
      }
      execv(argv[0], argv.data());
      error = errno;
    }
    (void)!write(report[1], &error, sizeof error);
    _exit(127);
  }
  close(report[1]);
  int error = 0;
  ssize_t n = 0;
  do {
    n = read(report[0], &error, sizeof error);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof error)) {
    waitpid(pid, nullptr, 0);
    return failed("exec", error);
  }
  return pid;
}

std::string DescribeExit(int wstatus) {
  if (WIFSIGNALED(wstatus)) return fmt::format("killed by signal {}", WTERMSIG(wstatus));
  if (WIFEXITED(wstatus)) return fmt::format("exit code {}", WEXITSTATUS(wstatus));
  return "stopped";
}

std::string SelfExecutable() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "acan" : p.string();
}

}  // namespace acan
