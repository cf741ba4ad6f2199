// For tests: one private nats-server per test process (JetStream on, a free loopback port, a
// temporary store directory), started on first use from the test's main thread and stopped by
// its PID when the process exits. Every test that needs NATS opens its own stream on it.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "space/nats/local_server.h"

namespace acan::nats::testing {

inline LocalNatsServer& TestServer() {
  static std::unique_ptr<LocalNatsServer> server = [] {
    LocalServerOptions options;
    std::string dir = (std::filesystem::temp_directory_path() / "acan-test-nats-XXXXXX").string();
    if (!mkdtemp(dir.data())) std::abort();
    options.store_dir = dir;
    options.remove_store = true;
    auto started = LocalNatsServer::Start(options);
    if (!started.ok()) {
      ADD_FAILURE() << started.status().ToString();
      std::abort();
    }
    return std::move(started).value();
  }();
  return *server;
}

// A stream name no other space of this process uses.
inline std::string UniqueStream(const std::string& base = "t") {
  static std::atomic<int> next{0};
  return base + std::to_string(next++);
}

// A URI for a new, empty space on the test server.
inline std::string NewSpaceUri(const std::string& params = "storage=memory") {
  return TestServer().url() + "?stream=" + UniqueStream() + (params.empty() ? "" : "&" + params);
}

}  // namespace acan::nats::testing
