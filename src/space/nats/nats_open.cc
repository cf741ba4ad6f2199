// Opening "nats://...", "tls://..." and "nats:local" URIs (parsed in nats_uri.cc): the
// deployment's credentials, nats:local's private server, and the scheme's registration.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "space/nats/nats_space.h"
#include "space/nats/nats_uri.h"

namespace acan::nats {

namespace {

Result<std::unique_ptr<Space>> OpenNats(std::string_view text, const SpaceOptions& defaults) {
  ACAN_ASSIGN_OR_RETURN(NatsUri uri,
                        ParseNatsUri(text, defaults, NatsUriEnvironment::FromProcess()));
  NatsSpaceOptions& options = uri.options;
  if (!uri.secure_dir.empty()) {
    ACAN_ASSIGN_OR_RETURN(options.credentials, LoadRoleCredentials(uri.secure_dir, options.role));
    // The deployment's permissions are for its stream: the URI names it, or is given it.
    if (uri.stream_named && options.stream != options.credentials->stream) {
      return Status::InvalidArgument(fmt::format(
          "space URI '{}': stream='{}', but the deployment '{}' is for stream '{}' (acan secure "
          "init --stream)",
          text, options.stream, uri.secure_dir, options.credentials->stream));
    }
    options.stream = options.credentials->stream;
    options.role = options.credentials->role;
  }

  std::unique_ptr<LocalNatsServer> server;
  if (uri.local) {
    // nats:local: a private server for this run, its store in `dir` (a new temporary directory
    // when absent, removed with the space).
    LocalServerOptions local;
    local.store_dir = uri.local_dir;
    local.extra_config = kLocalServerConfig;
    if (!uri.secure_dir.empty()) {
      // The deployment's TLS and users; the server's owner checks it answers as a manager.
      std::ifstream conf(SecureServerConfigPath(uri.secure_dir));
      std::stringstream config;
      config << conf.rdbuf();
      if (!conf || config.str().empty()) {
        return Status::NotFound(
            fmt::format("space URI '{}': cannot read '{}' (made by acan "
                        "secure init)",
                        text, SecureServerConfigPath(uri.secure_dir)));
      }
      local.extra_config += "\n" + config.str();
      ACAN_ASSIGN_OR_RETURN(local.probe_credentials,
                            LoadRoleCredentials(uri.secure_dir, "manager"));
    }
    if (local.store_dir.empty()) {
      std::string tmpl = (std::filesystem::temp_directory_path() / "acan-nats-XXXXXX").string();
      if (!mkdtemp(tmpl.data())) {
        return Status::Unavailable(
            fmt::format("cannot create a directory for nats:local: {}", strerror(errno)));
      }
      local.store_dir = tmpl;
      local.remove_store = true;
    }
    ACAN_ASSIGN_OR_RETURN(server, LocalNatsServer::Start(local));
    options.servers = server->url();
  }
  ACAN_ASSIGN_OR_RETURN(auto space, NatsSpace::Open(std::string(text), std::move(options)));
  space->AdoptServer(std::move(server));
  return std::unique_ptr<Space>(std::move(space));
}

}  // namespace

Status RegisterNatsSpace() {
  ACAN_RETURN_IF_ERROR(RegisterSpaceScheme("nats", OpenNats));
  return RegisterSpaceScheme("tls", OpenNats);
}

}  // namespace acan::nats
