#include "cli/signal_stop.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "space/nats/nats_uri.h"

namespace acan::cli {

namespace {

constexpr int kProbeMs = 300;

// Whether a TCP connection to `host_port` ("127.0.0.1:4222") opens within kProbeMs: "" when it
// does, else why not.
std::string ConnectError(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return "not host:port";
  const std::string host = host_port.substr(0, colon), port = host_port.substr(colon + 1);
  addrinfo hints = {};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return gai_strerror(rc);
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p = {fd, POLLOUT, 0};
      rc = poll(&p, 1, kProbeMs);
      int so_error = ETIMEDOUT;
      socklen_t len = sizeof so_error;
      if (rc == 1) getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      errno = so_error;
      rc = so_error == 0 ? 0 : -1;
    }
    error = rc == 0 ? std::string() : std::strerror(errno);
    close(fd);
    if (error.empty()) break;
  }
  freeaddrinfo(found);
  return error;
}

// What the line says of the space at `uri`: whether its first server can be reached now.
std::string ServerState(const std::string& uri) {
  auto parsed = nats::ParseNatsUri(uri, SpaceOptions{}, nats::NatsUriEnvironment::FromProcess());
  if (!parsed.ok() || parsed->local || parsed->options.servers.empty()) return "";
  std::string server = parsed->options.servers.substr(0, parsed->options.servers.find(','));
  if (size_t scheme = server.find("://"); scheme != std::string::npos) {
    server = server.substr(scheme + 3);
  }
  const std::string error = ConnectError(server);
  return error.empty() ? fmt::format(" (its server {} accepts connections)", server)
                       : fmt::format(" (its server {}: {})", server, error);
}

const char* SignalName(int signal) {
  return signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "the signal";
}

}  // namespace

SignalStop::SignalStop(LeaveBound bound) : state_(std::make_shared<State>()) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  // Blocked in this thread before any other starts, so every thread inherits the mask and the
  // signal waits for the watcher below.
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([state = state_, set, bound = std::move(bound)] {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) return;
    state->signal.store(sig);
    state->source.request_stop();
    if (bound.within.count() <= 0) return;
    std::this_thread::sleep_for(bound.within);
    // Still here: the leave is stuck, on a space that does not answer (or on anything else that
    // does not look at the stop request). Said and ended with write and _exit: neither waits on
    // a lock that a stuck thread may hold.
    const std::string line = fmt::format(
        "acan: {} did not leave within {:.1f} s of {}: its space did not answer{}; exiting "
        "without a clean leave (exit {})\n",
        bound.who, std::chrono::duration<double>(bound.within).count(), SignalName(sig),
        ServerState(bound.space), bound.exit_code);
    (void)!write(STDERR_FILENO, line.data(), line.size());
    _exit(bound.exit_code);
  }).detach();
}

}  // namespace acan::cli
