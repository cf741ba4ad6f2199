// LocalNatsServer: a private nats-server child process with JetStream on, listening on a free
// loopback port, its store in a directory of the caller's choosing. Behind "nats:local" (one
// command starts a multi-process run with nothing to set up) and the NATS tests' fixture.
//
// Start writes a configuration file into the store directory, starts the server, waits until it
// has written its ports file and answers a JetStream request, and returns its client URL. The
// destructor stops the server by its PID (SIGTERM, then SIGKILL after a grace period) and reaps
// it; nothing else is ever signalled. Not thread-safe: one owner.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "acan/status.h"
#include "space/nats/secure.h"

namespace acan::nats {

struct LocalServerOptions {
  // Where JetStream keeps its data, the configuration and the server's log; created if missing.
  std::string store_dir;
  // How long Start waits for the server to answer.
  std::chrono::milliseconds ready_timeout{15000};
  // A port to listen on; 0 picks a free one (the server's own choice, read from its ports file).
  int port = 0;
  // Remove store_dir when the server is destroyed (a temporary directory).
  bool remove_store = false;
  // Extra lines appended to the configuration (e.g. cluster or TLS blocks).
  std::string extra_config;
  // With a secure configuration (TLS and users): whom Start's readiness check connects as.
  std::optional<RoleCredentials> probe_credentials;
};

class LocalNatsServer {
 public:
  static Result<std::unique_ptr<LocalNatsServer>> Start(const LocalServerOptions& options);
  ~LocalNatsServer();
  LocalNatsServer(const LocalNatsServer&) = delete;
  LocalNatsServer& operator=(const LocalNatsServer&) = delete;

  const std::string& url() const { return url_; }  // nats://127.0.0.1:PORT
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& store_dir() const { return options_.store_dir; }

  // Stops the server (SIGTERM, SIGKILL after `grace`) and reaps it. Idempotent.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));
  // SIGKILL and reap: a server crash, for fault tests.
  void Kill();
  // Starts the server again on the same store and port (after Stop or Kill).
  Status Restart();

 private:
  explicit LocalNatsServer(LocalServerOptions options) : options_(std::move(options)) {}
  Status Launch();

  LocalServerOptions options_;
  std::string config_path_;
  std::string log_path_;
  std::string url_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// The configuration nats:local adds: messages up to 8 MB (the server's default is 1 MB), so a
// 784x1024 float layer (3.2 MB) is one message instead of four chunks; 8 MB is where the server
// starts warning, and values above it are still chunked.
inline constexpr const char* kLocalServerConfig = "max_payload: 8MB";

// The nats-server executable: $ACAN_NATS_SERVER, else the first nats-server on PATH, else
// /usr/sbin/nats-server (Debian's package puts it there, outside a normal user's PATH).
std::string NatsServerExecutable();

}  // namespace acan::nats
