#include "space/nats/nats_uri.h"

#include <fmt/format.h>

#include <cstdlib>

#include "space/uri_internal.h"

namespace acan::nats {

namespace {

Status CheckStreamName(const SpaceUri& uri, const std::string& name) {
  if (name.empty() || name.size() > 64 ||
      name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") !=
          std::string::npos) {
    return Status::InvalidArgument(fmt::format(
        "space URI '{}': stream='{}' must be 1 to 64 letters, digits, '-' or '_'", uri.text, name));
  }
  return Status::Ok();
}

// "host:port,host:port" as "<scheme>://host:port,<scheme>://host:port".
Result<std::string> ServerList(const SpaceUri& uri) {
  std::string servers;
  std::string_view list = uri.authority;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view one = list.substr(0, comma);
    if (one.empty() || one.find(':') == std::string_view::npos) {
      return Status::InvalidArgument(
          fmt::format("space URI '{}': server '{}' is not of the form host:port", uri.text, one));
    }
    servers += (servers.empty() ? "" : ",") + uri.scheme + "://" + std::string(one);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return servers;
}

}  // namespace

NatsUriEnvironment NatsUriEnvironment::FromProcess() {
  NatsUriEnvironment env;
  if (const char* dir = std::getenv("ACAN_NATS_SECURE"); dir != nullptr) env.secure_dir = dir;
  if (const char* role = std::getenv("ACAN_NATS_ROLE"); role != nullptr) env.role = role;
  return env;
}

Result<NatsUri> ParseNatsUri(std::string_view text, const SpaceOptions& defaults,
                             const NatsUriEnvironment& env) {
  ACAN_ASSIGN_OR_RETURN(SpaceUri uri, SpaceUri::Parse(text));
  NatsUri out;
  NatsSpaceOptions& options = out.options;
  options.limits = defaults;
  ACAN_ASSIGN_OR_RETURN(options.limits.max_value_bytes,
                        uri.UintParam("max_value_bytes", options.limits.max_value_bytes));
  ACAN_ASSIGN_OR_RETURN(options.limits.max_total_bytes,
                        uri.UintParam("max_total_bytes", options.limits.max_total_bytes));
  if (const std::string* stream = uri.Param("stream")) options.stream = *stream;
  out.stream_named = uri.params.contains("stream");
  ACAN_RETURN_IF_ERROR(CheckStreamName(uri, options.stream));
  out.local = uri.authority.empty() && uri.path == "local";
  // nats:local keeps tuples in the server's memory unless told otherwise: its server lives and
  // dies with the run, and file storage made the Fashion-MNIST run 6.5 times slower on this
  // machine (docs/benchmarks.md). storage=file is what survives a restart of the server.
  options.memory_storage = out.local;
  if (const std::string* storage = uri.Param("storage")) {
    if (*storage != "file" && *storage != "memory") {
      return Status::InvalidArgument(fmt::format(
          "space URI '{}': storage='{}' must be 'file' or 'memory'", uri.text, *storage));
    }
    options.memory_storage = *storage == "memory";
  }
  ACAN_ASSIGN_OR_RETURN(uint64_t replicas, uri.UintParam("replicas", 1));
  if (replicas < 1 || replicas > 5) {
    return Status::InvalidArgument(
        fmt::format("space URI '{}': replicas={} must be 1 to 5", uri.text, replicas));
  }
  options.replicas = static_cast<int>(replicas);
  ACAN_ASSIGN_OR_RETURN(uint64_t request_ms, uri.UintParam("request_ms", 5000));
  ACAN_ASSIGN_OR_RETURN(uint64_t retry_ms, uri.UintParam("retry_ms", 60000));
  ACAN_ASSIGN_OR_RETURN(uint64_t dedupe_ms, uri.UintParam("dedupe_ms", 30000));
  if (dedupe_ms < 1000) {
    return Status::InvalidArgument(fmt::format(
        "space URI '{}': dedupe_ms={} must be at least 1000 (how long the server remembers a "
        "publish, so that a retried one is stored once)",
        uri.text, dedupe_ms));
  }
  options.dedupe_ms = static_cast<int64_t>(dedupe_ms);
  options.request_ms = static_cast<int64_t>(std::max<uint64_t>(request_ms, 1));
  options.retry_ms = static_cast<int64_t>(retry_ms);
  ACAN_ASSIGN_OR_RETURN(uint64_t chunk_bytes, uri.UintParam("chunk_bytes", 0));
  if (chunk_bytes != 0 && chunk_bytes < 1024) {
    return Status::InvalidArgument(fmt::format(
        "space URI '{}': chunk_bytes={} must be at least 1024 (0: as large as a message allows)",
        uri.text, chunk_bytes));
  }
  options.chunk_bytes = static_cast<size_t>(chunk_bytes);
  // A secure deployment (acan secure init DIR): secure=DIR and role=R, or ACAN_NATS_SECURE and
  // ACAN_NATS_ROLE, so that neither needs to be on a command line. tls:// demands it.
  std::string role;
  if (const std::string* dir = uri.Param("secure")) {
    out.secure_dir = *dir;
  } else {
    out.secure_dir = env.secure_dir;
  }
  if (const std::string* r = uri.Param("role")) {
    role = *r;
  } else {
    role = env.role;
  }
  if (out.secure_dir.empty() && uri.scheme == "tls") {
    return Status::InvalidArgument(fmt::format(
        "space URI '{}': tls:// needs the deployment's files: secure=DIR (or ACAN_NATS_SECURE), "
        "made by acan secure init DIR",
        uri.text));
  }
  if (!role.empty()) {
    bool known = false;
    for (std::string_view r : kSecureRoles) known = known || r == role;
    if (!known) {
      return Status::InvalidArgument(
          fmt::format("space URI '{}': role='{}' is not a role (manager, handler or observer)",
                      uri.text, role));
    }
  }
  // A process of a deployment that does not say its role gets the least: an observer's. Without
  // a deployment the role is what the client does (nats_space.h): no permissions.
  options.role = !out.secure_dir.empty() && role.empty() ? "observer" : role;

  if (out.local) {
    if (const std::string* dir = uri.Param("dir")) out.local_dir = *dir;
    ACAN_RETURN_IF_ERROR(uri.RejectUnusedParams());
    return out;
  }
  if (uri.authority.empty() || !uri.path.empty()) {
    return Status::InvalidArgument(fmt::format(
        "space URI '{}': expected nats://host:port[,host:port...] or nats:local", uri.text));
  }
  ACAN_RETURN_IF_ERROR(uri.RejectUnusedParams());
  ACAN_ASSIGN_OR_RETURN(options.servers, ServerList(uri));
  return out;
}

}  // namespace acan::nats
