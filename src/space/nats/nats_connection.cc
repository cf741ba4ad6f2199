// NatsSpace: the connection (its options, credentials and asynchronous errors) and the requests
// every operation is made of (a retried request, a direct get, a publish, a purge). See
// nats_space.h.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "space/nats/nats_space.h"
#include "space/nats/nats_space_internal.h"

namespace acan::nats {

using namespace std::chrono_literals;

namespace {

// What a failed connection's error means for a secure deployment (secure.h), in its terms.
std::string ConnectHint(const std::string& error, const std::optional<RoleCredentials>& c) {
  const bool tls = error.find("SSL") != std::string::npos;
  if (!c) {
    return tls ? "; the server requires TLS: name the deployment with secure=DIR (made by acan "
                 "secure init) and a role"
               : "";
  }
  if (error.find("Authorization Violation") != std::string::npos) {
    return fmt::format(
        "; the server does not accept role '{}' with this password (its file in "
        "the deployment: {}.password)",
        c->role, c->role);
  }
  if (error.find("local issuer") != std::string::npos ||
      error.find("verify failed") != std::string::npos) {
    return fmt::format(
        "; this client cannot verify the server's certificate with the CA '{}': "
        "is it the deployment's?",
        c->ca_file);
  }
  if (error.find("Expected 'PONG'") != std::string::npos || tls ||
      error.find("EOF") != std::string::npos) {
    return fmt::format(
        "; the server ended the TLS handshake: it does not accept the certificate "
        "'{}' (signed by another CA, or none)",
        c->cert_file);
  }
  return "";
}

}  // namespace

bool IsConnectionLoss(natsStatus s) {
  switch (s) {
    case NATS_TIMEOUT:
    case NATS_NO_RESPONDERS:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_IO_ERROR:
    case NATS_NO_SERVER:
    case NATS_STALE_CONNECTION:
      return true;
    default:
      return false;
  }
}

std::string NatsError(natsStatus s, int jerr) {
  std::string text = natsStatus_GetText(s);
  if (const char* last = nats_GetLastError(nullptr); last && *last && text != last) {
    text += fmt::format(" ({})", last);
  }
  if (jerr != 0) text += fmt::format(" [JetStream error {}]", static_cast<int>(jerr));
  return text;
}

Status NatsSpace::CancelledStatus() const {
  return Status::Cancelled(fmt::format("space '{}' is closed", uri_));
}

Deadline NatsSpace::NonBlocking() const {
  return Deadline::After(std::chrono::milliseconds(options_.retry_ms));
}

Status NatsSpace::Connect() {
  natsOptions* opts = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  // A list of servers (a cluster): each a URL of its own (natsOptions_SetURL takes one).
  std::vector<std::string> urls;
  for (std::string_view rest = options_.servers; !rest.empty();) {
    const size_t comma = rest.find(',');
    urls.emplace_back(rest.substr(0, comma));
    rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
  }
  std::vector<const char*> url_ptrs;
  for (const std::string& u : urls) url_ptrs.push_back(u.c_str());
  if (s == NATS_OK) {
    s = natsOptions_SetServers(opts, url_ptrs.data(), static_cast<int>(url_ptrs.size()));
  }
  if (s == NATS_OK) s = natsOptions_SetName(opts, "acan");
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 2000);
  // A lost server is waited for, not given up on: the calls' deadlines bound the wait.
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 100);
  // The watches' callbacks share the library's delivery threads instead of one thread each.
  if (s == NATS_OK) s = natsOptions_UseGlobalMessageDelivery(opts, true);
  if (s == NATS_OK) s = natsOptions_SetErrorHandler(opts, &NatsSpace::OnAsyncError, this);
  if (s == NATS_OK && options_.credentials) {
    Status applied = CheckCredentials(*options_.credentials);
    if (applied.ok()) applied = ApplyCredentials(opts, *options_.credentials);
    if (!applied.ok()) {
      natsOptions_Destroy(opts);
      return Status(applied.code(), fmt::format("space '{}': {}", uri_, applied.message()));
    }
  }
  if (s == NATS_OK) {
    // A connection attempt whose poll or read a signal interrupted fails as an I/O or protocol
    // error (libnats 3.4.1 does not retry EINTR): a handler process gets SIGRTMIN whenever the
    // chaos changes its speed, and a run of them under kills could not start one (e2e.
    // robustness_processes under ASan: "poll error: 4", "Expected 'PONG', got ''"). Such an
    // attempt is made again, for 5 s at most; a refused or unreachable server is not.
    const Deadline give_up = Deadline::After(5s);
    for (auto backoff = 10ms;; backoff = std::min<std::chrono::milliseconds>(backoff * 2, 200ms)) {
      s = natsConnection_Connect(&nc_, opts);
      if ((s != NATS_IO_ERROR && s != NATS_PROTOCOL_ERROR) || give_up.expired()) break;
      std::this_thread::sleep_for(backoff);
    }
  }
  natsOptions_Destroy(opts);
  if (s != NATS_OK) {
    const std::string error = NatsError(s, 0);
    const std::string as = options_.credentials
                               ? fmt::format(" as role '{}' over TLS", options_.credentials->role)
                               : std::string();
    return Status::Unavailable(fmt::format("cannot connect to NATS at '{}'{} (space '{}'): {}{}",
                                           options_.servers, as, uri_, error,
                                           ConnectHint(error, options_.credentials)));
  }
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = options_.request_ms;
  s = natsConnection_JetStream(&js_, nc_, &jo);
  if (s != NATS_OK) {
    return Status::Unavailable(
        fmt::format("no JetStream context on '{}': {}", options_.servers, NatsError(s, 0)));
  }
  const int64_t max_payload = natsConnection_GetMaxPayload(nc_);
  if (max_payload <= static_cast<int64_t>(2 * kHeaderAllowance)) {
    return Status::Unavailable(fmt::format(
        "the NATS server at '{}' allows only {} bytes per message", options_.servers, max_payload));
  }
  max_payload_ = static_cast<size_t>(max_payload);
  chunk_bytes_ = max_payload_ - kHeaderAllowance;
  if (options_.chunk_bytes > 0) chunk_bytes_ = std::min(chunk_bytes_, options_.chunk_bytes);
  return Status::Ok();
}

void NatsSpace::OnAsyncError(natsConnection* nc, natsSubscription*, natsStatus err, void* closure) {
  if (err != NATS_NOT_PERMITTED) return;
  auto* self = static_cast<NatsSpace*>(closure);
  const char* text = nullptr;
  natsConnection_GetLastError(nc, &text);
  const std::string what = text != nullptr && *text ? text : "permissions violation";
  {
    MutexLock lock(self->mu_);
    self->last_violation_ = what;
  }
  self->violations_.fetch_add(1);
  spdlog::warn("the NATS server refused a request of space '{}'{}: {}", self->uri_,
               self->options_.role.empty() ? std::string()
                                           : fmt::format(" (role '{}')", self->options_.role),
               what);
}

Status NatsSpace::RefusedSince(uint64_t violations_before, std::string_view what) const {
  if (violations_.load() == violations_before) return Status::Ok();
  MutexLock lock(mu_);
  return Status::PermissionDenied(
      fmt::format("{} in space '{}' refused by the server: {}{}", what, uri_, last_violation_,
                  options_.credentials
                      ? fmt::format(" (this client's role is '{}')", options_.credentials->role)
                      : std::string()));
}

Status NatsSpace::Retry(const char* what, Deadline deadline,
                        const std::function<natsStatus()>& request) const {
  auto backoff = 5ms;
  const uint64_t violations = violations_.load();
  for (;;) {
    natsStatus s = request();
    // A refused request gets no answer: the server's error says why, not the timeout.
    if (s != NATS_OK) ACAN_RETURN_IF_ERROR(RefusedSince(violations, what));
    if (!IsConnectionLoss(s)) return Status::Ok();  // the request's own outcome: the caller's
    if (closed_.load()) return CancelledStatus();
    if (deadline.expired()) {
      return Status::Unavailable(
          fmt::format("{} on space '{}': the NATS server at '{}' did not answer: {}", what, uri_,
                      options_.servers, NatsError(s, 0)));
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline.at() - Clock::now()));
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, 200ms);
  }
}

// ---- requests ----

Status NatsSpace::DirectGet(const std::string& stream, jsDirectGetMsgOptions* options,
                            Deadline deadline, natsMsg** msg, natsStatus* result) const {
  // A stream that vanished answers no direct get (the request times out): whether it is gone is
  // asked once a request timed out, and a gone stream holds nothing.
  Status s = Retry("read", deadline, [&] {
    natsMsg_Destroy(*msg);
    *msg = nullptr;
    *result = js_DirectGetMsg(msg, js_, stream.c_str(), nullptr, options);
    if (*result == NATS_TIMEOUT || *result == NATS_NO_RESPONDERS) {
      jsErrCode jerr = static_cast<jsErrCode>(0);
      jsStreamInfo* si = nullptr;
      if (js_GetStreamInfo(&si, js_, stream.c_str(), nullptr, &jerr) == NATS_NOT_FOUND) {
        *result = NATS_NOT_FOUND;
        // Looked up again by the next call, which then reads nothing at once (a write makes the
        // streams again) instead of waiting out a request here each time.
        ForgetStream(stream);
      }
      jsStreamInfo_Destroy(si);
    }
    return *result;
  });
  return s;
}

Status NatsSpace::Publish(const std::string& subject, const void* data, size_t size,
                          const char* chunks_header, Deadline deadline,
                          const uint64_t* expect_subject_seq, uint64_t* seq,
                          const uint64_t* expect_stream_seq, std::string_view ns) {
  const std::string msg_id = fmt::format("{}-{}", client_id_, next_id_.fetch_add(1));
  jsPubOptions po;
  jsPubOptions_Init(&po);
  // A publish retried after a lost reply is stored once: the server answers the retry with the
  // first one's sequence (de-duplication comes before the expected-sequence check).
  po.MsgId = msg_id.c_str();
  po.MaxWait = options_.request_ms;
  if (expect_subject_seq != nullptr) {
    po.ExpectLastSubjectSeq = *expect_subject_seq;
    po.ExpectNoMessage = *expect_subject_seq == 0;
  }
  if (expect_stream_seq != nullptr) po.ExpectLastSeq = *expect_stream_seq;
  natsStatus result = NATS_OK;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  // Retried only while the server still knows the message id: a retry after the window could
  // store a publish that the server did store but whose reply was lost a second time.
  const auto request = std::chrono::milliseconds(options_.request_ms);
  std::chrono::nanoseconds window;
  {
    MutexLock lock(mu_);
    window = dedupe_window_;
  }
  const Deadline within_window =
      Deadline::After(std::max<std::chrono::nanoseconds>(window - request, request));
  const Deadline retry_until = within_window.at() < deadline.at() ? within_window : deadline;
  ACAN_RETURN_IF_ERROR(Retry("put", retry_until, [&] {
    natsMsg* msg = nullptr;
    result = natsMsg_Create(&msg, subject.c_str(), nullptr, static_cast<const char*>(data),
                            static_cast<int>(size));
    if (result == NATS_OK && chunks_header)
      result = natsMsgHeader_Set(msg, kChunksHeader, chunks_header);
    jsPubAck* ack = nullptr;
    jerr = static_cast<jsErrCode>(0);
    if (result == NATS_OK) result = js_PublishMsg(&ack, js_, msg, &po, &jerr);
    if (result == NATS_OK && seq != nullptr) *seq = ack->Sequence;
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(msg);
    if (result == NATS_NO_RESPONDERS && !ns.empty()) {
      // No stream stores the subject: the namespace's streams vanished (a memory-storage server
      // that restarted). Made again where this client may, then published again.
      ForgetNamespace(ns);
      bool exists = false;
      if (!EnsureNamespace(ns, MayManage(), &exists).ok() || !exists) return result;
    }
    return result;
  }));
  if (result == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
  if (result != NATS_OK && jerr == JSStreamWrongLastSequenceErr) {
    return Status::FailedPrecondition(NatsError(result, jerr));
  }
  if (result != NATS_OK) {
    return Status::Unavailable(fmt::format("put to '{}' in space '{}' failed: {}", subject, uri_,
                                           NatsError(result, jerr)));
  }
  return Status::Ok();
}

Status NatsSpace::PurgeSubjects(const std::string& stream, const std::string& filter, uint64_t keep,
                                const char* what) {
  natsStatus result = NATS_OK;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  ACAN_RETURN_IF_ERROR(Retry(what, NonBlocking(), [&] {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = options_.request_ms;
    jo.Stream.Purge.Subject = filter.c_str();
    jo.Stream.Purge.Keep = keep;
    jerr = static_cast<jsErrCode>(0);
    result = js_PurgeStream(js_, stream.c_str(), &jo, &jerr);
    return result;
  }));
  if (result == NATS_OK) return Status::Ok();
  if (result == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
  return Status::Unavailable(fmt::format("{} of '{}' in space '{}' failed: {}", what, filter, uri_,
                                         NatsError(result, jerr)));
}

}  // namespace acan::nats
