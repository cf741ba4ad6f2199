#include "common/kill_point.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace acan {
namespace {

std::atomic<bool> g_armed{false};
int g_signal = SIGKILL;  // written before g_armed is set
std::string g_point;     // written before g_armed is set
int64_t g_at = 0;        // the visit that dies, from 1
std::atomic<int64_t> g_visits{0};

}  // namespace

void ArmKillPoints() {
  if (g_armed.load()) return;
  const char* name = "ACAN_TEST_KILL_AT";
  const char* spec = std::getenv(name);
  int signal = SIGKILL;
  if (spec == nullptr || *spec == '\0') {
    name = "ACAN_TEST_STOP_AT";
    spec = std::getenv(name);
    signal = SIGSTOP;
  }
  if (spec == nullptr || *spec == '\0') return;
  const std::string_view text(spec);
  const size_t colon = text.rfind(':');
  int64_t n = 0;
  if (colon == std::string_view::npos || colon == 0 ||
      std::from_chars(text.data() + colon + 1, text.data() + text.size(), n).ec != std::errc() ||
      n < 1) {
    std::fprintf(stderr, "acan: ignoring %s='%s' (expected <point>:<n>, n >= 1)\n", name, spec);
    return;
  }
  g_point = std::string(text.substr(0, colon));
  g_signal = signal;
  g_at = n;
  g_armed.store(true, std::memory_order_release);
}

void KillPoint(std::string_view point) {
  if (!g_armed.load(std::memory_order_acquire) || point != g_point) return;
  if (g_visits.fetch_add(1) + 1 == g_at) {
    if (const char* once = std::getenv("ACAN_TEST_KILL_ONCE"); once != nullptr && *once != '\0') {
      const int fd = open(once, O_CREAT | O_EXCL | O_WRONLY, 0644);
      if (fd < 0) return;  // another process (or an earlier incarnation) died here already
      close(fd);
    }
    if (g_signal == SIGSTOP) {
      std::fprintf(stderr, "acan: ACAN_TEST_STOP_AT: stopped at %s:%lld (pid %d)\n",
                   g_point.c_str(), static_cast<long long>(g_at), static_cast<int>(getpid()));
    } else {
      std::fprintf(stderr, "acan: ACAN_TEST_KILL_AT: killed at %s:%lld\n", g_point.c_str(),
                   static_cast<long long>(g_at));
    }
    std::fflush(stderr);
    raise(g_signal);
  }
}

}  // namespace acan
