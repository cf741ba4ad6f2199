#include "space/nats/secure.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "space/nats/bcrypt.h"
#include "space/nats/nats_layout.h"

namespace acan::nats {
namespace {

namespace fs = std::filesystem;

using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using CertPtr = std::unique_ptr<X509, decltype(&X509_free)>;

std::string OpenSslError(std::string_view what) {
  const unsigned long e = ERR_get_error();
  char buf[256] = "unknown error";
  if (e != 0) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return fmt::format("{}: {}", what, buf);
}

std::string In(const std::string& dir, std::string_view name) {
  return (fs::path(dir) / std::string(name)).string();
}

// Opens `path` for writing with mode `mode` (0600 for secrets), truncating it.
Result<std::FILE*> OpenForWrite(const std::string& path, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    return Status::Unavailable(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  ::fchmod(fd, mode);
  std::FILE* f = ::fdopen(fd, "w");
  if (f == nullptr) {
    ::close(fd);
    return Status::Unavailable(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  return f;
}

Status WriteText(const std::string& path, const std::string& text, mode_t mode) {
  ACAN_ASSIGN_OR_RETURN(std::FILE * f, OpenForWrite(path, mode));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) {
    return Status::Unavailable(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  return Status::Ok();
}

Status WriteKey(const std::string& path, EVP_PKEY* key) {
  ACAN_ASSIGN_OR_RETURN(std::FILE * f, OpenForWrite(path, 0600));
  const bool ok = PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  std::fclose(f);
  if (!ok) return Status::Internal(OpenSslError("cannot write the key '" + path + "'"));
  return Status::Ok();
}

Status WriteCert(const std::string& path, X509* cert) {
  ACAN_ASSIGN_OR_RETURN(std::FILE * f, OpenForWrite(path, 0644));
  const bool ok = PEM_write_X509(f, cert) == 1;
  std::fclose(f);
  if (!ok) return Status::Internal(OpenSslError("cannot write the certificate '" + path + "'"));
  return Status::Ok();
}

Result<KeyPtr> NewKey() {
  KeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), EVP_PKEY_free);
  if (!key) return Status::Internal(OpenSslError("cannot make an EC P-256 key"));
  return key;
}

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) {
    return Status::InvalidArgument(
        OpenSslError(fmt::format("bad certificate extension '{}'", value)));
  }
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) return Status::Internal(OpenSslError("cannot add a certificate extension"));
  return Status::Ok();
}

struct CertSpec {
  std::string common_name;
  int not_before_days = 0;
  int not_after_days = 365;
  bool ca = false;
  bool server = false;    // serverAuth and the subjectAltName below; else clientAuth
  std::string alt_names;  // "DNS:localhost,IP:127.0.0.1"
};

// A certificate for `key`, signed by `issuer_key` as `issuer` (both null: self-signed).
Result<CertPtr> MakeCert(const CertSpec& spec, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key) {
  CertPtr cert(X509_new(), X509_free);
  if (!cert) return Status::Internal(OpenSslError("X509_new"));
  X509_set_version(cert.get(), 2);
  std::unique_ptr<BIGNUM, decltype(&BN_free)> serial(BN_new(), BN_free);
  BN_rand(serial.get(), 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY);
  BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get()));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), long{spec.not_before_days} * 86400);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), long{spec.not_after_days} * 86400);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("acan"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1,
                             -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  EVP_PKEY* signer_key = issuer_key != nullptr ? issuer_key : key;
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  ACAN_RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash"));
  ACAN_RETURN_IF_ERROR(
      AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always"));
  if (spec.ca) {
    ACAN_RETURN_IF_ERROR(
        AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
    ACAN_RETURN_IF_ERROR(
        AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign"));
  } else {
    ACAN_RETURN_IF_ERROR(
        AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE"));
    ACAN_RETURN_IF_ERROR(
        AddExtension(cert.get(), signer, NID_key_usage, "critical,digitalSignature"));
    ACAN_RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_ext_key_usage,
                                      spec.server ? "serverAuth" : "clientAuth"));
    if (!spec.alt_names.empty()) {
      ACAN_RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_subject_alt_name, spec.alt_names));
    }
  }
  if (X509_sign(cert.get(), signer_key, EVP_sha256()) == 0) {
    return Status::Internal(OpenSslError("cannot sign the certificate"));
  }
  return cert;
}

// The PEM certificate (or key) at `path`, `what` naming it in errors ("the CA certificate");
// a file that is not one is a `malformed` error.
Result<CertPtr> ReadCert(const std::string& path, const std::string& what,
                         StatusCode malformed = StatusCode::kDataLoss) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    return Status::NotFound(
        fmt::format("cannot open {} '{}': {}", what, path, std::strerror(errno)));
  }
  CertPtr cert(PEM_read_X509(f, nullptr, nullptr, nullptr), X509_free);
  std::fclose(f);
  if (!cert) return Status(malformed, OpenSslError(fmt::format("{} '{}' is not PEM", what, path)));
  return cert;
}

Result<KeyPtr> ReadKey(const std::string& path, const std::string& what,
                       StatusCode malformed = StatusCode::kDataLoss) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    return Status::NotFound(
        fmt::format("cannot open {} '{}': {}", what, path, std::strerror(errno)));
  }
  KeyPtr key(PEM_read_PrivateKey(f, nullptr, nullptr, nullptr), EVP_PKEY_free);
  std::fclose(f);
  if (!key) return Status(malformed, OpenSslError(fmt::format("{} '{}' is not PEM", what, path)));
  return key;
}

Result<std::pair<CertPtr, KeyPtr>> ReadCa(const std::string& dir) {
  ACAN_ASSIGN_OR_RETURN(CertPtr cert, ReadCert(In(dir, "ca.pem"), "the CA certificate"));
  ACAN_ASSIGN_OR_RETURN(KeyPtr key, ReadKey(In(dir, "ca-key.pem"), "the CA key"));
  return std::make_pair(std::move(cert), std::move(key));
}

Result<std::string> RandomHex(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  if (RAND_bytes(raw.data(), static_cast<int>(raw.size())) != 1) {
    return Status::Internal(OpenSslError("no random bytes"));
  }
  std::string hex;
  for (unsigned char c : raw) hex += fmt::format("{:02x}", c);
  return hex;
}

std::string Quoted(std::string_view s) { return fmt::format("\"{}\"", s); }

std::string List(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + Quoted(items[i]);
  return out + "]";
}

}  // namespace

std::string SecureServerConfigPath(const std::string& dir) { return In(dir, "nats-server.conf"); }

// The role's permissions in nats-server's syntax, from the layout's own builders: the job's
// streams (their JetStream API subjects are $JS.API.<verb>.<stream>) and subjects.
std::string RolePermissions(std::string_view role, std::string_view job, std::string_view stream) {
  const NatsLayout layout{std::string(stream)};
  const std::string j(job);
  std::vector<std::string> read_api;
  for (StreamKind kind : kStreamKinds) {
    const std::string st = layout.StreamName(kind, j);
    read_api.push_back("$JS.API.STREAM.INFO." + st);
    read_api.push_back("$JS.API.DIRECT.GET." + st);
    read_api.push_back("$JS.API.DIRECT.GET." + st + ".>");  // the last message of a subject
  }
  // Replies under the role's own prefix; puts seen by watchers (blocked gets and takes, the
  // supervisor's accounts) on the job's tuple subjects.
  std::vector<std::string> sub = {layout.InboxPrefix(j, role) + ".>"};
  for (StreamKind kind : {StreamKind::kTuples, StreamKind::kFenced}) {
    for (const std::string& subject : layout.StreamSubjects(kind, j)) sub.push_back(subject);
  }
  for (const std::string& end : {j, j + ".>"}) sub.push_back(layout.WatchPrefix(true) + "*." + end);
  std::vector<std::string> pub = read_api;
  if (role == "manager") {
    pub.push_back("$JS.API.INFO");  // whether JetStream answers (LocalNatsServer's probe)
    for (StreamKind kind : kStreamKinds) {
      const std::string st = layout.StreamName(kind, j);
      pub.push_back("$JS.API.STREAM.CREATE." + st);
      pub.push_back("$JS.API.STREAM.MSG.GET." + st);  // a cell's revision at the leader
      // The cells (the lease, the audit log) are neither deleted nor purged, by anyone.
      if (kind == StreamKind::kCells) continue;
      pub.push_back("$JS.API.STREAM.MSG.DELETE." + st);
      pub.push_back("$JS.API.STREAM.PURGE." + st);
    }
    for (StreamKind kind : {StreamKind::kTuples, StreamKind::kFenced, StreamKind::kCells}) {
      for (const std::string& subject : layout.StreamSubjects(kind, j)) pub.push_back(subject);
    }
    pub.push_back(layout.ChunkWriterFilter(j, ChunkWriter::kManager));
    pub.push_back(layout.ChunkWriterFilter(j, ChunkWriter::kFenced));
  } else if (role == "handler") {
    // Takes delete the taken message (and its chunks); nothing is purged.
    for (StreamKind kind : {StreamKind::kTuples, StreamKind::kChunks}) {
      pub.push_back("$JS.API.STREAM.MSG.DELETE." + layout.StreamName(kind, j));
    }
    for (const char* kind : {"task", "t", "u", "done", "claim", "alive", "usage"}) {
      pub.push_back(fmt::format("{}*.{}.{}.>", layout.TuplePrefix(false), j, kind));
    }
    pub.push_back(layout.ChunkWriterFilter(j, ChunkWriter::kHandler));
  }
  return fmt::format("{{ publish: {{ allow: {} }}, subscribe: {{ allow: {} }} }}", List(pub),
                     List(sub));
}

Status InitSecureDir(const SecureInitOptions& o) {
  if (o.dir.empty()) return Status::InvalidArgument("acan secure init needs a directory");
  if (o.days < 1) return Status::InvalidArgument("the certificates' validity must be >= 1 day");
  if (o.job.empty() ||
      o.job.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                              "0123456789-_") != std::string::npos) {
    return Status::InvalidArgument(
        fmt::format("'{}' is not a job id (one key token: letters, digits, '-' or '_')", o.job));
  }
  if (o.stream.empty() || o.stream.size() > 64 ||
      o.stream.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                 "0123456789-_") != std::string::npos) {
    return Status::InvalidArgument(
        fmt::format("'{}' is not a stream name (1 to 64 letters, digits, '-' or '_')", o.stream));
  }
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  if (ec) {
    return Status::Unavailable(fmt::format("cannot create '{}': {}", o.dir, ec.message()));
  }
  fs::permissions(o.dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (fs::exists(In(o.dir, "ca.pem")) || fs::exists(In(o.dir, "ca-key.pem"))) {
    return Status::AlreadyExists(fmt::format(
        "'{}' holds a deployment already (ca.pem): remove it or choose another directory", o.dir));
  }
  std::string alt;
  for (const std::string& h : o.hosts) {
    unsigned char addr[16];
    const bool ip =
        ::inet_pton(AF_INET, h.c_str(), addr) == 1 || ::inet_pton(AF_INET6, h.c_str(), addr) == 1;
    alt += (alt.empty() ? "" : ",") + std::string(ip ? "IP:" : "DNS:") + h;
  }
  ACAN_ASSIGN_OR_RETURN(KeyPtr ca_key, NewKey());
  ACAN_ASSIGN_OR_RETURN(CertPtr ca, MakeCert({"acan CA", 0, o.days, true, false, ""}, ca_key.get(),
                                             nullptr, nullptr));
  ACAN_RETURN_IF_ERROR(WriteKey(In(o.dir, "ca-key.pem"), ca_key.get()));
  ACAN_RETURN_IF_ERROR(WriteCert(In(o.dir, "ca.pem"), ca.get()));
  ACAN_ASSIGN_OR_RETURN(KeyPtr server_key, NewKey());
  ACAN_ASSIGN_OR_RETURN(CertPtr server, MakeCert({"acan NATS server", 0, o.days, false, true, alt},
                                                 server_key.get(), ca.get(), ca_key.get()));
  ACAN_RETURN_IF_ERROR(WriteKey(In(o.dir, "server-key.pem"), server_key.get()));
  ACAN_RETURN_IF_ERROR(WriteCert(In(o.dir, "server.pem"), server.get()));

  const std::string abs = fs::absolute(o.dir).string();
  std::ostringstream conf;
  conf << "# Made by acan secure init for job '" << o.job << "' on stream '" << o.stream
       << "'. TLS for every client (nats-server 2.9 negotiates TLS 1.2 and up), client\n"
       << "# certificates verified against ca.pem, and a user per role (docs/security.md).\n"
       << "tls {\n  cert_file: " << Quoted(In(abs, "server.pem"))
       << "\n  key_file: " << Quoted(In(abs, "server-key.pem"))
       << "\n  ca_file: " << Quoted(In(abs, "ca.pem")) << "\n  verify: true\n  timeout: 2\n}\n"
       << "authorization {\n  users: [\n";
  for (std::string_view role : kSecureRoles) {
    ACAN_ASSIGN_OR_RETURN(KeyPtr key, NewKey());
    ACAN_ASSIGN_OR_RETURN(CertPtr cert,
                          MakeCert({"acan-" + std::string(role), 0, o.days, false, false, ""},
                                   key.get(), ca.get(), ca_key.get()));
    ACAN_RETURN_IF_ERROR(WriteKey(In(o.dir, std::string(role) + "-key.pem"), key.get()));
    ACAN_RETURN_IF_ERROR(WriteCert(In(o.dir, std::string(role) + ".pem"), cert.get()));
    ACAN_ASSIGN_OR_RETURN(std::string password, RandomHex(32));
    ACAN_RETURN_IF_ERROR(
        WriteText(In(o.dir, std::string(role) + ".password"), password + "\n", 0600));
    // The server keeps only the password's bcrypt hash: its configuration lets no reader connect
    // as a role. The clients present the password itself, from the role's file.
    ACAN_ASSIGN_OR_RETURN(std::string hash, BcryptHash(password));
    conf << "    { user: " << Quoted(role) << ", password: " << Quoted(hash)
         << ", permissions: " << RolePermissions(role, o.job, o.stream) << " }\n";
  }
  conf << "  ]\n}\n";
  ACAN_RETURN_IF_ERROR(WriteText(SecureServerConfigPath(o.dir), conf.str(), 0600));
  return WriteText(In(o.dir, "deployment.json"),
                   nlohmann::json{{"job", o.job}, {"stream", o.stream}}.dump() + "\n", 0644);
}

Status IssueClientCertificate(const std::string& dir, const std::string& common_name,
                              int not_before_days, int not_after_days, bool self_signed,
                              const std::string& out_prefix) {
  ACAN_ASSIGN_OR_RETURN(KeyPtr key, NewKey());
  CertSpec spec{common_name, not_before_days, not_after_days, false, false, ""};
  // (A Result is never built from an OK status: the sanitizer build's assertion found one here.)
  Result<CertPtr> cert = [&]() -> Result<CertPtr> {
    if (self_signed) return MakeCert(spec, key.get(), nullptr, nullptr);
    ACAN_ASSIGN_OR_RETURN(auto ca, ReadCa(dir));
    return MakeCert(spec, key.get(), ca.first.get(), ca.second.get());
  }();
  if (!cert.ok()) return cert.status();
  ACAN_RETURN_IF_ERROR(WriteKey(out_prefix + "-key.pem", key.get()));
  return WriteCert(out_prefix + ".pem", cert->get());
}

Result<RoleCredentials> LoadRoleCredentials(const std::string& dir, std::string_view role) {
  bool known = false;
  for (std::string_view r : kSecureRoles) known = known || r == role;
  if (!known) {
    return Status::InvalidArgument(
        fmt::format("'{}' is not a role (manager, handler or observer)", role));
  }
  RoleCredentials c;
  c.role = role;
  c.ca_file = In(dir, "ca.pem");
  c.cert_file = In(dir, std::string(role) + ".pem");
  c.key_file = In(dir, std::string(role) + "-key.pem");
  const std::string password_file = In(dir, std::string(role) + ".password");
  for (const std::string* f : std::initializer_list<const std::string*>{
           &c.ca_file, &c.cert_file, &c.key_file, &password_file}) {
    if (!fs::exists(*f)) {
      return Status::NotFound(fmt::format(
          "the {} credentials are incomplete: '{}' is missing (made by acan secure init)", role,
          *f));
    }
  }
  std::ifstream in(password_file);
  std::getline(in, c.password);
  if (c.password.empty()) {
    return Status::DataLoss(fmt::format("'{}' holds no password", password_file));
  }
  const std::string deployment = In(dir, "deployment.json");
  std::ifstream d(deployment);
  if (!d) {
    return Status::NotFound(fmt::format(
        "'{}' is missing: the deployment in '{}' was made by an earlier acan secure init, whose "
        "permissions reached every job; make it again",
        deployment, dir));
  }
  const nlohmann::json j = nlohmann::json::parse(d, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("job") || !j["job"].is_string() || !j.contains("stream") ||
      !j["stream"].is_string()) {
    return Status::DataLoss(fmt::format(
        "'{}' is not a deployment's description (a JSON object with \"job\" and \"stream\")",
        deployment));
  }
  c.job = j["job"].get<std::string>();
  c.stream = j["stream"].get<std::string>();
  return c;
}

Status CheckCredentials(const RoleCredentials& c) {
  ACAN_ASSIGN_OR_RETURN(CertPtr cert, ReadCert(c.cert_file, "the " + c.role + " certificate",
                                               StatusCode::kInvalidArgument));
  auto when = [](const ASN1_TIME* t) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    ASN1_TIME_print(bio.get(), t);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<size_t>(std::max(n, 0L)));
  };
  if (X509_cmp_current_time(X509_get0_notAfter(cert.get())) <= 0) {
    return Status::PermissionDenied(
        fmt::format("the {} certificate '{}' expired on {}: make new ones with acan secure init",
                    c.role, c.cert_file, when(X509_get0_notAfter(cert.get()))));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(cert.get())) >= 0) {
    return Status::PermissionDenied(fmt::format("the {} certificate '{}' is not valid before {}",
                                                c.role, c.cert_file,
                                                when(X509_get0_notBefore(cert.get()))));
  }
  ACAN_ASSIGN_OR_RETURN(
      KeyPtr key, ReadKey(c.key_file, "the " + c.role + " key", StatusCode::kInvalidArgument));
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument(
        fmt::format("the {} key '{}' is not the key of '{}'", c.role, c.key_file, c.cert_file));
  }
  return Status::Ok();
}

Status ApplyCredentials(natsOptions* opts, const RoleCredentials& c) {
  natsStatus s = natsOptions_SetSecure(opts, true);
  if (s == NATS_OK) s = natsOptions_LoadCATrustedCertificates(opts, c.ca_file.c_str());
  if (s != NATS_OK) {
    return Status::InvalidArgument(fmt::format("the CA certificate '{}' cannot be loaded: {}",
                                               c.ca_file, nats_GetLastError(nullptr)));
  }
  s = natsOptions_LoadCertificatesChain(opts, c.cert_file.c_str(), c.key_file.c_str());
  if (s != NATS_OK) {
    return Status::InvalidArgument(
        fmt::format("the {} certificate '{}' or its key '{}' cannot be loaded: {}", c.role,
                    c.cert_file, c.key_file, nats_GetLastError(nullptr)));
  }
  s = natsOptions_SetUserInfo(opts, c.role.c_str(), c.password.c_str());
  if (s != NATS_OK) return Status::Internal("natsOptions_SetUserInfo failed");
  // Replies (a direct get's carry values) come under the role's own prefix, which no other role
  // may subscribe to.
  const std::string inbox = NatsLayout(c.stream).InboxPrefix(c.job, c.role);
  if (natsOptions_SetCustomInboxPrefix(opts, inbox.c_str()) != NATS_OK) {
    return Status::Internal("natsOptions_SetCustomInboxPrefix failed");
  }
  return Status::Ok();
}

}  // namespace acan::nats
