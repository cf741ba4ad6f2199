// The NATS space's URIs, parsed without a server, a file or the network, so that every form and
// every error can be tested on its own (nats_uri_test.cc):
//
//   nats://host:port[,host:port...][?k=v&...]   a server or a cluster
//   tls://host:port[,host:port...]?secure=DIR   the same over TLS, as a secure deployment's role
//   nats:local[?k=v&...]                         a private server for one run (local_server.h)
//
// Parameters: stream, storage (file|memory), replicas (1-5), request_ms, retry_ms, dedupe_ms
// (>= 1000), chunk_bytes (0 or >= 1024), max_value_bytes, max_total_bytes, secure (a deployment's
// directory: acan secure init), role (manager, handler or observer), and for nats:local dir (its
// store). Any other parameter is an error. Opening the space (nats_open.cc) does what needs the
// world: it loads the deployment's credentials, starts nats:local's server and connects.
// Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "acan/space.h"
#include "space/nats/nats_space.h"

namespace acan::nats {

// What the process's environment adds to a URI that does not say it itself, so that neither the
// deployment nor the role needs to be on a command line.
struct NatsUriEnvironment {
  std::string secure_dir;  // ACAN_NATS_SECURE
  std::string role;        // ACAN_NATS_ROLE
  // The values of those variables in this process (empty when unset).
  static NatsUriEnvironment FromProcess();
};

// What a URI names.
struct NatsUri {
  // Everything but what opening fills in: `servers` for nats:local (its server's address) and
  // `credentials` (loaded from `secure_dir`). `role` is the deployment's role to load ("observer"
  // when a secure URI names none), or without a deployment what the client does ("" for none).
  NatsSpaceOptions options;
  bool local = false;         // nats:local
  std::string local_dir;      // nats:local's dir=; empty: a new temporary directory
  std::string secure_dir;     // secure=DIR, else the environment's; empty: no deployment
  bool stream_named = false;  // stream= is in the URI (then it must be the deployment's stream)
};

// Parses `text` (scheme "nats" or "tls"); `defaults` are the limits that max_value_bytes and
// max_total_bytes override. InvalidArgument naming the URI and what in it is wrong.
Result<NatsUri> ParseNatsUri(std::string_view text, const SpaceOptions& defaults,
                             const NatsUriEnvironment& env);

}  // namespace acan::nats
