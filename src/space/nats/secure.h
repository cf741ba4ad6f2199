// A secure deployment's files (`acan secure init DIR`), made with OpenSSL's libcrypto, and what
// a client of each role reads back from them:
//
//   ca.pem, ca-key.pem                 the deployment's certificate authority (EC P-256)
//   server.pem, server-key.pem         the NATS servers' certificate (subjectAltName: the hosts
//                                      and addresses given, 127.0.0.1 and localhost by default)
//   <role>.pem, <role>-key.pem         a client certificate for each role (CN=acan-<role>)
//   <role>.password                    the role's password (32 random bytes, hex)
//   nats-server.conf                   a nats-server configuration fragment: TLS required
//                                      (1.2 and up), client certificates verified against ca.pem,
//                                      a user per role with the permissions below and the bcrypt
//                                      hash of its password (bcrypt.h), never the password
//   deployment.json                    the job and the stream the permissions are for
//
// Roles, for the job named at init: the job's own streams (nats_layout.h) and subjects only, so
// every other job's tuples, chunks, cells and replies are out of reach of all three:
//   manager   everything of its job: makes its streams, writes, deletes and purges (never in the
//             cells stream, which allows neither)
//   handler   reads the job; writes only what a handler makes (task outputs, proposals, done
//             reports, claims, its alive tuple, tasks it puts back, its traffic account, and the
//             chunks of those): never a parameter version, the lease, the manager's state, the
//             job's descriptor, a cell or a manager's chunk; deletes single messages of its job's
//             tuples and plain chunks (how it takes), never in the fenced stream, never a purge
//   observer  reads only
// Each role's replies come under its own inbox prefix (NatsLayout::InboxPrefix), which only that
// role may subscribe to.
// The server refuses any other write with a permission error, which the client logs and turns
// into PermissionDenied (nats_space.h). Keys, passwords and the configuration are 0600, the
// directory 0700. Stateless functions; thread-safe.
#pragma once

#include <nats/nats.h>

#include <string>
#include <string_view>
#include <vector>

#include "acan/status.h"

namespace acan::nats {

inline constexpr std::string_view kSecureRoles[] = {"manager", "handler", "observer"};

struct SecureInitOptions {
  std::string dir;
  std::string job = "job";      // the job the roles' permissions are for
  std::string stream = "acan";  // the space's stream (its subjects' prefix)
  int days = 365;               // the certificates' validity
  // Names and addresses the servers are reached by (the server certificate's subjectAltName).
  std::vector<std::string> hosts = {"localhost", "127.0.0.1"};
};

// Creates every file above in options.dir (created 0700 when missing). AlreadyExists when the
// directory holds a deployment already (a CA is never overwritten).
Status InitSecureDir(const SecureInitOptions& options);

// Issues a client certificate and key signed by the CA in `dir`, valid from `not_before_days`
// to `not_after_days` from now (negative: in the past), with common name `common_name`, into
// out_prefix + ".pem" and out_prefix + "-key.pem". With `self_signed`, the certificate signs
// itself instead of the CA (what a stranger would present). For tests and rotation.
Status IssueClientCertificate(const std::string& dir, const std::string& common_name,
                              int not_before_days, int not_after_days, bool self_signed,
                              const std::string& out_prefix);

// What a client of `role` presents: the files in `dir`, the password read from its file, and
// the job and stream its permissions are for (deployment.json).
struct RoleCredentials {
  std::string role;
  std::string job;
  std::string stream;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string password;  // never logged
};
// InvalidArgument for an unknown role; NotFound naming the first file that is missing (a
// deployment made before deployment.json existed: make it again).
Result<RoleCredentials> LoadRoleCredentials(const std::string& dir, std::string_view role);

// What a client can tell of its own credentials before it connects: the certificate is within
// its validity period and the key is its key (PermissionDenied or InvalidArgument naming the
// file and the date). Whether the CA signed it is the server's to check.
Status CheckCredentials(const RoleCredentials& c);

// Has a connection made with `opts` present `c`: TLS with the CA to trust, the certificate and
// key, and the role's user and password. InvalidArgument naming a file that cannot be loaded.
Status ApplyCredentials(natsOptions* opts, const RoleCredentials& c);

// The path of the server configuration fragment in `dir`.
std::string SecureServerConfigPath(const std::string& dir);

// The nats-server permissions of `role` for `job` on `stream` (what InitSecureDir writes).
std::string RolePermissions(std::string_view role, std::string_view job, std::string_view stream);

}  // namespace acan::nats
