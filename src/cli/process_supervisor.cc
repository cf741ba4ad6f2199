#include "cli/process_supervisor.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "common/child_process.h"

namespace acan::cli {

const char* RoleName(Role role) { return role == Role::kManager ? "manager" : "handler"; }

ProcessSupervisor::ProcessSupervisor(Options options) : options_(std::move(options)) {
  processes_.push_back({Role::kManager, "m0"});
  processes_.push_back({Role::kManager, "m1"});
  for (int h = 0; h < options_.handlers; ++h) {
    processes_.push_back({Role::kHandler, fmt::format("h{}", h), h});
  }
}

ProcessSupervisor::~ProcessSupervisor() {
  for (RoleProcess& p : processes_) {
    if (p.pid <= 0) continue;
    kill(p.pid, SIGKILL);
    waitpid(p.pid, nullptr, 0);
    p.pid = -1;
  }
}

Status ProcessSupervisor::Start(RoleProcess& p) {
  // The speed signal stays blocked across the exec (pending, not fatal) until the handler
  // command is ready for it.
  SpawnOptions spawn;
  spawn.blocked = {SIGRTMIN};
  auto pid = SpawnChild(options_.command(p), spawn);
  if (!pid.ok()) {
    return Status(pid.status().code(),
                  fmt::format("{} {}: {}", RoleName(p.role), p.name, pid.status().message()));
  }
  p.pid = *pid;
  return Status::Ok();
}

Status ProcessSupervisor::StartAll() {
  for (RoleProcess& p : processes_) {
    if (Status s = Start(p); !s.ok()) {
      Stop(1);
      return s;
    }
  }
  return Status::Ok();
}

int ProcessSupervisor::running() const {
  return static_cast<int>(
      std::count_if(processes_.begin(), processes_.end(), [](const auto& p) { return p.pid > 0; }));
}

void ProcessSupervisor::Stop(int exit_code) {
  if (stopping()) return;
  stop_at_ = Clock::now();
  exit_code_ = exit_code;
  for (const RoleProcess& p : processes_) {
    if (p.pid > 0) kill(p.pid, SIGTERM);
  }
}

bool ProcessSupervisor::Kill(RoleProcess& p) {
  if (p.pid <= 0) return false;
  spdlog::info("chaos: SIGKILL {} {} (pid {})", RoleName(p.role), p.name, p.pid);
  kill(p.pid, SIGKILL);
  p.kills++;
  p.killed = true;
  return true;
}

void ProcessSupervisor::SetSpeed(int h, double speed) {
  const pid_t pid = handler(h).pid;
  if (pid <= 0) return;
  union sigval value = {};
  value.sival_int = static_cast<int>(std::lround(speed * 1000));
  (void)sigqueue(pid, SIGRTMIN, value);
}

bool ProcessSupervisor::ReapOne() {
  if (stop_at_ && Clock::now() - *stop_at_ > options_.stop_grace) {
    for (const RoleProcess& p : processes_) {
      if (p.pid <= 0) continue;
      fmt::print(stderr, "acan: {} {} (pid {}) did not leave within {} ms of SIGTERM; SIGKILL\n",
                 RoleName(p.role), p.name, p.pid, options_.stop_grace.count());
      kill(p.pid, SIGKILL);
    }
    stop_at_ = Clock::now();  // said once a grace
  }
  int wstatus = 0;
  const pid_t pid = waitpid(-1, &wstatus, WNOHANG);
  if (pid <= 0) return false;
  auto it = std::find_if(processes_.begin(), processes_.end(),
                         [pid](const RoleProcess& p) { return p.pid == pid; });
  if (it != processes_.end()) OnDeath(*it, pid, wstatus);
  return true;
}

void ProcessSupervisor::OnDeath(RoleProcess& p, pid_t pid, int wstatus) {
  p.pid = -1;
  const bool by_chaos = std::exchange(p.killed, false);
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
    p.done = true;
    if (p.role == Role::kManager && managers_done() && !finished_at_) finished_at_ = Clock::now();
    return;
  }
  if (stopping() || finished_at_) return;
  const char* role = RoleName(p.role);
  if (WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 2 || WEXITSTATUS(wstatus) == 127)) {
    // Bad input or a missing executable: starting it again would fail the same way.
    fmt::print(stderr, "acan: {} {} failed ({}); stopping the run\n", role, p.name,
               DescribeExit(wstatus));
    Stop(WEXITSTATUS(wstatus) == 2 ? 2 : 1);
    return;
  }
  if (options_.on_death) options_.on_death(p);
  if (++p.restarts - p.kills > options_.max_restarts) {
    fmt::print(stderr, "acan: {} {} died {} times; stopping the run\n", role, p.name, p.restarts);
    Stop(1);
    return;
  }
  if (!options_.quiet && !by_chaos) {
    fmt::print(stderr, "acan: {} {} (pid {}) died ({}); started again\n", role, p.name, pid,
               DescribeExit(wstatus));
  }
  if (Status s = Start(p); !s.ok()) {
    fmt::print(stderr, "acan: {}; stopping the run\n", s.ToString());
    Stop(1);
    return;
  }
  spdlog::info("{} {} started again (pid {}, restart {})", role, p.name, p.pid, p.restarts);
}

}  // namespace acan::cli
