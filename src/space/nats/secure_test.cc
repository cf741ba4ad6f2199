// A secure deployment (secure.h) against a real nats-server on loopback started with the
// configuration `acan secure init` writes: who gets in (the roles, over TLS) and who does not (a
// plain-text client, a client that trusts another CA, a self-signed or expired certificate, a
// wrong password), and what each role may write, enforced by the server.
#include "space/nats/secure.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nats/nats.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "acan/space.h"
#include "common/thread_annotations.h"
#include "space/nats/bcrypt.h"
#include "space/nats/nats_space.h"

namespace acan::nats {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/secure_" + name + "_" + std::to_string(getpid());
  fs::remove_all(dir);
  return dir;
}

mode_t Mode(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_mode & 0777;
}

// A copy of a deployment's client files, with some replaced: what a misconfigured or foreign
// client holds.
std::string CopyOf(const std::string& dir, const std::string& name) {
  const std::string copy = TempDir(name);
  fs::create_directories(copy);
  for (const auto& e : fs::directory_iterator(dir)) {
    fs::copy_file(e.path(), fs::path(copy) / e.path().filename());
  }
  return copy;
}

class SecureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(TempDir("deployment"));
    ASSERT_TRUE(InitSecureDir({*dir_}).ok());
    auto space = OpenSpace("nats:local?secure=" + *dir_ + "&role=manager");
    ASSERT_TRUE(space.ok()) << space.status().ToString();
    manager_ = space->release();
    url_ = new std::string(dynamic_cast<NatsSpace*>(manager_)->server()->url());
  }
  static void TearDownTestSuite() {
    delete manager_;
    fs::remove_all(*dir_);
    delete dir_;
    delete url_;
  }
  // A client of `role` with the files in `dir`; requests wait `request_ms` for an answer.
  static Result<std::unique_ptr<Space>> Client(const std::string& dir, const std::string& role,
                                               int request_ms = 5000) {
    return OpenSpace(fmt::format("{}?secure={}&role={}&request_ms={}&retry_ms=2000", *url_, dir,
                                 role, request_ms));
  }
  static std::string Port() { return url_->substr(url_->rfind(':') + 1); }

  static std::string* dir_;
  static std::string* url_;
  static Space* manager_;
};
std::string* SecureTest::dir_ = nullptr;
std::string* SecureTest::url_ = nullptr;
Space* SecureTest::manager_ = nullptr;

TEST_F(SecureTest, InitWritesSecretsOnlyTheOwnerReadsAndNeverOverwritesACa) {
  EXPECT_EQ(Mode(*dir_), 0700u);
  for (const char* f : {"ca-key.pem", "server-key.pem", "handler-key.pem", "handler.password",
                        "manager.password", "observer.password", "nats-server.conf"}) {
    EXPECT_EQ(Mode(*dir_ + "/" + f), 0600u) << f;
  }
  EXPECT_TRUE(url_->starts_with("tls://127.0.0.1:")) << *url_;
  Status again = InitSecureDir({*dir_});
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists) << again.ToString();
  EXPECT_NE(again.message().find(*dir_), std::string::npos);
  // A role that is not one, and missing files, are named.
  EXPECT_EQ(LoadRoleCredentials(*dir_, "admin").status().code(), StatusCode::kInvalidArgument);
  const std::string partial = CopyOf(*dir_, "partial");
  fs::remove(partial + "/handler.password");
  auto missing = LoadRoleCredentials(partial, "handler");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("handler.password"), std::string::npos);
  fs::remove_all(partial);
}

// The configuration holds each role's password as a bcrypt hash, which the server started from it
// (SetUpTestSuite: nats:local?secure=DIR) checks: the right password gets in, a wrong one not.
TEST_F(SecureTest, TheServerConfigurationHoldsBcryptHashesThatTheServerChecks) {
  std::stringstream conf;
  conf << std::ifstream(SecureServerConfigPath(*dir_)).rdbuf();
  for (std::string_view role : kSecureRoles) {
    auto creds = LoadRoleCredentials(*dir_, role);
    ASSERT_TRUE(creds.ok()) << creds.status().ToString();
    EXPECT_EQ(conf.str().find(creds->password), std::string::npos) << role;
    const std::string entry = fmt::format("{{ user: \"{}\", password: \"", role);
    const size_t at = conf.str().find(entry);
    ASSERT_NE(at, std::string::npos) << role << ": " << conf.str();
    const size_t from = at + entry.size();
    const std::string hash = conf.str().substr(from, conf.str().find('"', from) - from);
    EXPECT_TRUE(hash.starts_with(fmt::format("$2a${:02}$", kBcryptCost))) << hash;
    EXPECT_EQ(Bcrypt(creds->password, hash).value(), hash) << role;

    // Straight to the server with libnats: no acan code between the password and the server.
    auto connect = [&](const RoleCredentials& c) {
      natsOptions* opts = nullptr;
      EXPECT_EQ(natsOptions_Create(&opts), NATS_OK);
      natsOptions_SetURL(opts, url_->c_str());
      natsOptions_SetTimeout(opts, 2000);
      natsOptions_SetMaxReconnect(opts, 0);
      EXPECT_TRUE(ApplyCredentials(opts, c).ok());
      natsConnection* nc = nullptr;
      const natsStatus s = natsConnection_Connect(&nc, opts);
      const std::string error = s == NATS_OK ? "" : nats_GetLastError(nullptr);
      natsConnection_Destroy(nc);
      natsOptions_Destroy(opts);
      return error;
    };
    EXPECT_EQ(connect(*creds), "") << role;
    RoleCredentials wrong = *creds;
    wrong.password += "0";
    EXPECT_NE(connect(wrong).find("Authorization Violation"), std::string::npos) << role;
  }
}

TEST_F(SecureTest, EachRoleWritesOnlyWhatItMay) {
  ASSERT_TRUE(manager_->Put(Key::Parse("job.p.l0.w.v1").value(), Value::FromString("w1")).ok());
  auto handler = Client(*dir_, "handler", 300);
  ASSERT_TRUE(handler.ok()) << handler.status().ToString();
  Space& h = **handler;
  // What a handler makes.
  for (const char* key : {"job.done.mb.s1.m0", "job.claim.mb.s1.m0.h3", "job.alive.h3",
                          "job.t.mb.s1.m0.y", "job.u.l0.w.s1", "job.task.forward.mb.s2.m0"}) {
    EXPECT_TRUE(h.Put(Key::Parse(key).value(), Value::FromString("x")).ok()) << key;
  }
  auto taken = h.Take(Pattern::Parse("job.task.forward.>").value(), 1, Deadline::Now());
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_EQ(taken->size(), 1u);
  auto read = h.Read(Pattern::Parse("job.p.l0.w.*").value());
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_TRUE(read->has_value());
  // What it never writes: a parameter version, the manager's state, the job's descriptor, the
  // lease. Another job's tuples this client does not even ask for (the server would refuse them:
  // AHandlerReachesNothingOfAnotherJobNorWipesItsOwn).
  Status other = h.Put(Key::Parse("other.done.mb.s1.m0").value(), Value::FromString("rogue"));
  EXPECT_EQ(other.code(), StatusCode::kPermissionDenied) << other.ToString();
  EXPECT_NE(other.message().find("another job's"), std::string::npos) << other.ToString();
  for (const char* key : {"job.p.l0.w.v2", "job.m.state", "job.m.job"}) {
    Status s = h.Put(Key::Parse(key).value(), Value::FromString("rogue"));
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << key << ": " << s.ToString();
    EXPECT_NE(s.message().find("Permissions Violation"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("'handler'"), std::string::npos) << s.ToString();
  }
  auto swapped =
      h.SwapCell(Key::Parse("job.m.lease").value(), Value::FromString("mine"), 0, Deadline::Now());
  EXPECT_EQ(swapped.status().code(), StatusCode::kPermissionDenied) << swapped.status().ToString();
  // Nothing the refused writes carried is in the space: the manager sees its version alone.
  auto versions = manager_->ReadAll(Pattern::Parse("job.p.l0.w.*").value());
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 1u);
  EXPECT_EQ((*versions)[0].key.str(), "job.p.l0.w.v1");
  EXPECT_EQ((*versions)[0].value.AsString(), "w1");
  EXPECT_FALSE(manager_->ReadCell(Key::Parse("job.m.lease").value())->value.size() > 0);

  // An observer reads and writes nothing.
  auto observer = Client(*dir_, "observer", 300);
  ASSERT_TRUE(observer.ok()) << observer.status().ToString();
  EXPECT_TRUE((*observer)->Read(Pattern::Parse("job.p.l0.w.*").value()).ok());
  EXPECT_EQ(
      (*observer)->Put(Key::Parse("job.done.mb.s9.m0").value(), Value::FromString("x")).code(),
      StatusCode::kPermissionDenied);
}

TEST_F(SecureTest, NoRoleWipesTheCells) {
  // The lease and the audit log live in the cells stream: not even a manager purges or deletes.
  ASSERT_TRUE(manager_
                  ->SwapCell(Key::Parse("job.audit.a1").value(), Value::FromString("r1"), 0,
                             Deadline::After(std::chrono::seconds(5)))
                  .ok());
  auto creds = LoadRoleCredentials(*dir_, "manager");
  ASSERT_TRUE(creds.ok());
  natsOptions* opts = nullptr;
  ASSERT_EQ(natsOptions_Create(&opts), NATS_OK);
  natsOptions_SetURL(opts, url_->c_str());
  ASSERT_TRUE(ApplyCredentials(opts, *creds).ok());
  natsConnection* nc = nullptr;
  ASSERT_EQ(natsConnection_Connect(&nc, opts), NATS_OK);
  jsCtx* js = nullptr;
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = 1000;
  ASSERT_EQ(natsConnection_JetStream(&js, nc, &jo), NATS_OK);
  EXPECT_NE(js_PurgeStream(js, "acan_r_job", nullptr, nullptr), NATS_OK);
  EXPECT_NE(js_DeleteMsg(js, "acan_r_job", 1, nullptr, nullptr), NATS_OK);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  natsOptions_Destroy(opts);
  auto cell = manager_->ReadCell(Key::Parse("job.audit.a1").value());
  ASSERT_TRUE(cell.ok());
  EXPECT_EQ(cell->value.AsString(), "r1");
}

// A raw libnats client (not acan's space) with the handler's credentials, as a misbehaving
// handler would be: the server's refusals, each a permission violation naming the subject.
class RawClient {
 public:
  RawClient(const std::string& url, const RoleCredentials& c) {
    natsOptions* opts = nullptr;
    EXPECT_EQ(natsOptions_Create(&opts), NATS_OK);
    natsOptions_SetURL(opts, url.c_str());
    natsOptions_SetErrorHandler(opts, &RawClient::OnError, this);
    EXPECT_TRUE(ApplyCredentials(opts, c).ok());
    EXPECT_EQ(natsConnection_Connect(&nc_, opts), NATS_OK);
    natsOptions_Destroy(opts);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 1000;
    EXPECT_EQ(natsConnection_JetStream(&js_, nc_, &jo), NATS_OK);
  }
  ~RawClient() {
    natsConnection_Close(nc_);
    for (natsSubscription* s : subs_) natsSubscription_Destroy(s);
    jsCtx_Destroy(js_);
    natsConnection_Destroy(nc_);
  }
  // Publishes (a request's body, for $JS.API subjects) and waits for the server's verdict: the
  // text of the violation it sent back, or "" when it sent none within a second.
  std::string Publish(const std::string& subject, const std::string& body = "{}") {
    const uint64_t before = Violations();
    natsConnection_PublishString(nc_, subject.c_str(), body.c_str());
    natsConnection_FlushTimeout(nc_, 1000);
    return WaitForViolation(before);
  }
  std::string Subscribe(const std::string& subject) {
    const uint64_t before = Violations();
    natsSubscription* sub = nullptr;
    natsConnection_SubscribeSync(&sub, nc_, subject.c_str());
    subs_.push_back(sub);
    natsConnection_FlushTimeout(nc_, 1000);
    return WaitForViolation(before);
  }
  jsCtx* js() { return js_; }

 private:
  static void OnError(natsConnection* nc, natsSubscription*, natsStatus err, void* closure) {
    if (err != NATS_NOT_PERMITTED) return;
    auto* self = static_cast<RawClient*>(closure);
    const char* text = nullptr;
    natsConnection_GetLastError(nc, &text);
    MutexLock lock(self->mu_);
    self->last_ = text ? text : "";
    ++self->violations_;
  }
  uint64_t Violations() {
    MutexLock lock(mu_);
    return violations_;
  }
  std::string WaitForViolation(uint64_t before) {
    for (int i = 0; i < 100; ++i) {
      {
        MutexLock lock(mu_);
        if (violations_ != before) return last_;
      }
      usleep(10000);
    }
    return "";
  }

  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  std::vector<natsSubscription*> subs_;
  Mutex mu_;
  std::string last_ GUARDED_BY(mu_);
  uint64_t violations_ GUARDED_BY(mu_) = 0;
};

// Whatever a handler's credentials ask of the server directly: no write, delete, purge, read or
// reply of another job, no chunk of a manager's value, no purge of its own job's streams, no
// delete in its fenced stream, no other role's replies; deleting a task of its own job is what a
// take is, and is let through.
TEST_F(SecureTest, AHandlerReachesNothingOfAnotherJobNorWipesItsOwn) {
  ASSERT_TRUE(
      manager_->Put(Key::Parse("job.task.forward.mb.s7.m0").value(), Value::FromString("task"))
          .ok());
  auto creds = LoadRoleCredentials(*dir_, "handler");
  ASSERT_TRUE(creds.ok());
  RawClient h(*url_, *creds);
  for (const std::string subject :
       {"acan.c.job.m.0123.0", "acan.c.job.f.0123.0", "acan.c.other.h.0123.0",
        "acan.t.4.other.done.x", "acan.r.other.m.lease", "acan.f.t.4.job.p.w.v9",
        "acan.r.job.audit.a99", "$JS.API.STREAM.PURGE.acan_t_job",
        "$JS.API.STREAM.PURGE.acan_c_job", "$JS.API.STREAM.PURGE.acan_f_job",
        "$JS.API.STREAM.MSG.DELETE.acan_f_job", "$JS.API.STREAM.MSG.DELETE.acan_cf_job",
        "$JS.API.STREAM.MSG.DELETE.acan_t_other", "$JS.API.STREAM.PURGE.acan_t_other",
        "$JS.API.DIRECT.GET.acan_t_other", "$JS.API.DIRECT.GET.acan_c_other",
        "$JS.API.STREAM.CREATE.acan_t_other", "$JS.API.STREAM.DELETE.acan_t_job"}) {
    const std::string refused = h.Publish(subject);
    EXPECT_NE(refused.find("Permissions Violation for Publish to \"" + subject + "\""),
              std::string::npos)
        << subject << " was not refused: '" << refused << "'";
  }
  for (const std::string subject : {"_INBOX.>", "_ACAN.acan.job.manager.>",
                                    "_ACAN.acan.job.observer.>", "acan.t.*.other.>", "acan.c.>"}) {
    const std::string refused = h.Subscribe(subject);
    EXPECT_NE(refused.find("Permissions Violation for Subscription to \"" + subject + "\""),
              std::string::npos)
        << subject << " was not refused: '" << refused << "'";
  }
  // Its own job's task, deleted by sequence as a take does: let through.
  jsDirectGetMsgOptions dg;
  jsDirectGetMsgOptions_Init(&dg);
  dg.LastBySubject = "acan.t.4.job.task.forward.mb.s7.m0";
  natsMsg* msg = nullptr;
  ASSERT_EQ(js_DirectGetMsg(&msg, h.js(), "acan_t_job", nullptr, &dg), NATS_OK);
  EXPECT_EQ(js_DeleteMsg(h.js(), "acan_t_job", natsMsg_GetSequence(msg), nullptr, nullptr),
            NATS_OK);
  natsMsg_Destroy(msg);
  EXPECT_FALSE(manager_->Read(Pattern::Parse("job.task.forward.mb.s7.m0").value())->has_value());
}

TEST_F(SecureTest, ClientsThatDoNotBelongAreRefusedWithTheCause) {
  // A client with no deployment files: the server demands TLS (libnats then tries it, and
  // cannot verify the server with the system's CAs).
  auto plain = OpenSpace("nats://127.0.0.1:" + Port() + "?retry_ms=500");
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("cannot connect"), std::string::npos);
  EXPECT_NE(plain.status().message().find("the server requires TLS"), std::string::npos)
      << plain.status().ToString();
  // Plain text on the wire (a client that does not upgrade): no PONG, an error and a close.
  {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::stoi(Port())));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const std::string hello = "CONNECT {\"verbose\":false,\"tls_required\":false}\r\nPING\r\n";
    std::string seen;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);  // INFO
    if (n > 0) seen.append(buf, static_cast<size_t>(n));
    EXPECT_NE(seen.find("\"tls_required\":true"), std::string::npos) << seen;
    (void)::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL);
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) seen.append(buf, static_cast<size_t>(n));
    ::close(fd);
    EXPECT_EQ(seen.find("PONG"), std::string::npos) << seen;
  }

  // A client that trusts another deployment's CA cannot verify this server.
  const std::string other = TempDir("other");
  ASSERT_TRUE(InitSecureDir({other}).ok());
  const std::string foreign_ca = CopyOf(*dir_, "foreign_ca");
  fs::copy_file(other + "/ca.pem", foreign_ca + "/ca.pem", fs::copy_options::overwrite_existing);
  auto no_ca = Client(foreign_ca, "handler");
  ASSERT_FALSE(no_ca.ok());
  EXPECT_NE(no_ca.status().message().find("as role 'handler' over TLS"), std::string::npos);
  EXPECT_NE(no_ca.status().message().find("cannot verify the server's certificate"),
            std::string::npos)
      << no_ca.status().ToString();

  // A certificate the deployment's CA did not sign: the server ends the handshake.
  const std::string stranger = CopyOf(*dir_, "stranger");
  ASSERT_TRUE(
      IssueClientCertificate(stranger, "acan-handler", 0, 30, true, stranger + "/handler").ok());
  auto self_signed = Client(stranger, "handler");
  ASSERT_FALSE(self_signed.ok());
  EXPECT_NE(self_signed.status().message().find("does not accept the certificate"),
            std::string::npos)
      << self_signed.status().ToString();
  // Another deployment's certificate, with this one's password: refused the same way.
  const std::string mixed = CopyOf(*dir_, "mixed");
  fs::copy_file(other + "/handler.pem", mixed + "/handler.pem",
                fs::copy_options::overwrite_existing);
  fs::copy_file(other + "/handler-key.pem", mixed + "/handler-key.pem",
                fs::copy_options::overwrite_existing);
  EXPECT_FALSE(Client(mixed, "handler").ok());

  // A wrong password.
  const std::string wrong = CopyOf(*dir_, "wrong");
  { std::ofstream(wrong + "/handler.password") << "not-the-password\n"; }
  auto bad_password = Client(wrong, "handler");
  ASSERT_FALSE(bad_password.ok());
  EXPECT_NE(
      bad_password.status().message().find("does not accept role 'handler' with this password"),
      std::string::npos)
      << bad_password.status().ToString();

  // An expired certificate, signed by the right CA: this client says so before it connects...
  const std::string expired = CopyOf(*dir_, "expired");
  ASSERT_TRUE(
      IssueClientCertificate(*dir_, "acan-handler", -10, -1, false, expired + "/handler").ok());
  auto old = Client(expired, "handler");
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().code(), StatusCode::kPermissionDenied) << old.status().ToString();
  EXPECT_NE(old.status().message().find("expired on"), std::string::npos);
  // ...and the server refuses it from a client that does not check.
  auto creds = LoadRoleCredentials(expired, "handler");
  ASSERT_TRUE(creds.ok());
  natsOptions* opts = nullptr;
  ASSERT_EQ(natsOptions_Create(&opts), NATS_OK);
  natsOptions_SetURL(opts, url_->c_str());
  natsOptions_SetTimeout(opts, 2000);
  natsOptions_SetMaxReconnect(opts, 0);
  ASSERT_TRUE(ApplyCredentials(opts, *creds).ok());
  natsConnection* nc = nullptr;
  EXPECT_NE(natsConnection_Connect(&nc, opts), NATS_OK);
  natsConnection_Destroy(nc);
  natsOptions_Destroy(opts);

  // The deployment's own clients still get in, and the space is as it was.
  auto good = Client(*dir_, "handler");
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  for (const std::string& d : {other, foreign_ca, stranger, mixed, wrong, expired}) {
    fs::remove_all(d);
  }
}

}  // namespace
}  // namespace acan::nats
