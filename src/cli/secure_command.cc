// `acan secure init DIR`: the files of a secure deployment (space/nats/secure.h): a CA, the NATS
// servers' certificate, a certificate and a password for each role (manager, handler, observer)
// and a nats-server configuration with TLS required, client certificates verified and each
// role's permissions. `nats:local?secure=DIR` starts its private server with them; a client
// names the deployment and its role with `?secure=DIR&role=R` (or ACAN_NATS_SECURE and
// ACAN_NATS_ROLE).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "space/nats/secure.h"

namespace acan::cli {

void AddSecureCommand(CLI::App& app, int* exit_code) {
  auto* secure = app.add_subcommand("secure", "A secure deployment: TLS, roles, permissions");
  secure->require_subcommand(1);
  auto o = std::make_shared<nats::SecureInitOptions>();
  auto* init = secure->add_subcommand(
      "init",
      "Create DIR with a CA, the server's and each role's certificate and password, and "
      "a nats-server configuration (TLS required, per-role permissions)");
  init->add_option("dir", o->dir, "Directory to create (0700); refused if it holds a CA")
      ->required();
  init->add_option("--job", o->job, "The job the roles' permissions are for")
      ->capture_default_str();
  init->add_option("--stream", o->stream, "The space's stream (its URI's stream=)")
      ->capture_default_str();
  init->add_option("--days", o->days, "Validity of the certificates")
      ->capture_default_str()
      ->check(kAtLeastOne);
  init->add_option("--host", o->hosts,
                   "A name or address the servers are reached by (repeatable; default: "
                   "localhost and 127.0.0.1)");
  init->callback([o, exit_code] {
    if (Status s = nats::InitSecureDir(*o); !s.ok()) {
      std::fprintf(stderr, "acan secure init: %s\n", s.ToString().c_str());
      *exit_code =
          s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kAlreadyExists ? 2
                                                                                             : 1;
      return;
    }
    std::printf(
        "%s: ca.pem, server.pem, {manager,handler,observer}.pem with keys and passwords, "
        "nats-server.conf\nuse: --space 'nats:local?secure=%s' or a server started with -c "
        "%s/nats-server.conf and clients at 'tls://HOST:PORT?secure=%s&role=ROLE'\n",
        o->dir.c_str(), o->dir.c_str(), o->dir.c_str(), o->dir.c_str());
    *exit_code = 0;
  });
}

}  // namespace acan::cli
