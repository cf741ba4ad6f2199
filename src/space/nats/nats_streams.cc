// NatsSpace: the connection, the namespaces' streams, and the requests every operation is made
// of (a retried request, a direct get, a publish). See nats_space.h.
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
    std::lock_guard lock(self->mu_);
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
  std::lock_guard lock(mu_);
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

// ---- namespaces ----

Status NatsSpace::CheckNamespace(std::string_view ns, std::string_view what) const {
  if (!options_.credentials || ns == options_.credentials->job) return Status::Ok();
  return Status::PermissionDenied(fmt::format(
      "{} in space '{}': namespace '{}' is another job's; the deployment's roles are for job '{}' "
      "(acan secure init --job)",
      what, uri_, ns, options_.credentials->job));
}

void NatsSpace::NoteDedupeWindow(const jsStreamInfo* info) {
  if (info == nullptr || info->Config == nullptr) return;
  // 0 is the server's default, two minutes.
  const std::chrono::nanoseconds window{info->Config->Duplicates > 0 ? info->Config->Duplicates
                                                                     : int64_t{120} * 1000000000};
  std::lock_guard lock(mu_);
  if (window < dedupe_window_) dedupe_window_ = window;
}

natsStatus NatsSpace::StreamInfo(const std::string& name, jsStreamInfo** info,
                                 jsErrCode* jerr) const {
  jsStreamInfo* si = nullptr;
  natsStatus result = NATS_OK;
  Status s = Retry("stream lookup", NonBlocking(), [&] {
    jsStreamInfo_Destroy(si);
    si = nullptr;
    *jerr = static_cast<jsErrCode>(0);
    result = js_GetStreamInfo(&si, js_, name.c_str(), nullptr, jerr);
    return result;
  });
  if (!s.ok()) result = s.IsCancelled() ? NATS_CONNECTION_CLOSED : NATS_TIMEOUT;
  if (info != nullptr && result == NATS_OK) {
    *info = si;
  } else {
    jsStreamInfo_Destroy(si);
  }
  return result;
}

Status NatsSpace::EnsureStream(StreamKind kind, std::string_view ns, bool create, bool* exists) {
  const std::string name = layout_.StreamName(kind, ns);
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const uint64_t violations = violations_.load();
  natsStatus s = StreamInfo(name, &si, &jerr);
  ACAN_RETURN_IF_ERROR(RefusedSince(violations, "stream lookup"));
  if (s == NATS_OK) NoteDedupeWindow(si);
  jsStreamInfo_Destroy(si);
  *exists = s == NATS_OK;
  if (s == NATS_OK || (s == NATS_NOT_FOUND && !create)) return Status::Ok();
  if (s != NATS_NOT_FOUND) {
    if (s == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
    return Status::Unavailable(fmt::format("cannot look up stream '{}' on '{}': {}", name,
                                           options_.servers, NatsError(s, jerr)));
  }
  if (!MayManage()) {
    return Status::NotFound(fmt::format(
        "space '{}': namespace '{}' has no streams yet (stream '{}'), and a client of role '{}' "
        "does not make them: its job's manager does",
        uri_, ns, name, options_.role));
  }
  const std::vector<std::string> subjects = layout_.StreamSubjects(kind, ns);
  std::vector<const char*> subject_list;
  for (const std::string& subj : subjects) subject_list.push_back(subj.c_str());
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = name.c_str();
  cfg.Subjects = subject_list.data();
  cfg.SubjectsLen = static_cast<int>(subject_list.size());
  // Cells (the audit log's records among them) are on file whatever the tuples' storage: an
  // append-only record survives a restart of the server, and a memory-stored one would hold
  // every record of a long run in the server's memory (a death and a join for every crash). So
  // are the fenced tuples and their chunks (the versions, the manager's state, the descriptor,
  // the lease): what a job is made again from when a memory-storage server that restarted lost
  // every other tuple (docs/architecture.md, "Forged, and lost all at once").
  const bool in_memory = options_.memory_storage && kind != StreamKind::kCells &&
                         kind != StreamKind::kFenced && kind != StreamKind::kFencedChunks;
  cfg.Storage = in_memory ? js_MemoryStorage : js_FileStorage;
  cfg.Replicas = options_.replicas;
  cfg.AllowDirect = true;
  cfg.Duplicates = options_.dedupe_ms * 1000000;  // nanoseconds
  if (kind == StreamKind::kCells) {
    cfg.MaxMsgsPerSubject = 1;  // a new revision replaces the old one
    cfg.DenyDelete = true;
    cfg.DenyPurge = true;  // the audit log: nobody wipes it
  }
  // What the fenced stream stores, and only that (a refused put is not), for WatchPuts.
  const std::string republish_from = layout_.RepublishSource(),
                    republish_to = layout_.RepublishDestination();
  jsRePublish republish;
  if (kind == StreamKind::kFenced) {
    jsRePublish_Init(&republish);
    republish.Source = republish_from.c_str();
    republish.Destination = republish_to.c_str();
    cfg.RePublish = &republish;
  }
  si = nullptr;
  jerr = static_cast<jsErrCode>(0);
  s = js_AddStream(&si, js_, &cfg, nullptr, &jerr);
  if (s == NATS_OK) NoteDedupeWindow(si);
  jsStreamInfo_Destroy(si);
  if (s == NATS_OK) {
    *exists = true;
    return Status::Ok();
  }
  ACAN_RETURN_IF_ERROR(RefusedSince(violations, "stream creation"));
  // Another opener may have created it in between.
  si = nullptr;
  if (StreamInfo(name, &si, &jerr) == NATS_OK) {
    NoteDedupeWindow(si);
    jsStreamInfo_Destroy(si);
    *exists = true;
    return Status::Ok();
  }
  return Status::Unavailable(fmt::format("cannot create stream '{}' ({}, {} replicas) on '{}': {}",
                                         name, in_memory ? "memory" : "file", options_.replicas,
                                         options_.servers, NatsError(s, jerr)));
}

Status NatsSpace::EnsureNamespace(std::string_view ns, bool create, bool* exists) {
  {
    std::lock_guard lock(mu_);
    if (namespaces_.contains(ns)) {
      *exists = true;
      return Status::Ok();
    }
  }
  ACAN_RETURN_IF_ERROR(CheckNamespace(ns, "access"));
  *exists = true;
  for (StreamKind kind : kStreamKinds) {
    bool there = false;
    ACAN_RETURN_IF_ERROR(EnsureStream(kind, ns, create, &there));
    *exists = *exists && there;
    if (!*exists) break;  // only a look: one missing stream says it
  }
  if (*exists) {
    std::lock_guard lock(mu_);
    namespaces_.emplace(ns);
  }
  return Status::Ok();
}

void NatsSpace::ForgetNamespace(std::string_view ns) const {
  std::lock_guard lock(mu_);
  if (auto it = namespaces_.find(ns); it != namespaces_.end()) namespaces_.erase(it);
}

void NatsSpace::ForgetStream(std::string_view stream) const {
  for (StreamKind kind : kStreamKinds) {
    if (auto ns = layout_.NamespaceOfStream(kind, stream)) ForgetNamespace(*ns);
  }
}

Result<std::vector<std::string>> NatsSpace::AllNamespaces() const {
  if (options_.credentials) return std::vector<std::string>{options_.credentials->job};
  jsStreamNamesList* list = nullptr;
  natsStatus result = NATS_OK;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  ACAN_RETURN_IF_ERROR(Retry("listing the streams", NonBlocking(), [&] {
    jsStreamNamesList_Destroy(list);
    list = nullptr;
    result = js_StreamNames(&list, js_, nullptr, &jerr);
    return result;
  }));
  std::vector<std::string> out;
  if (result == NATS_OK && list != nullptr) {
    for (int i = 0; i < list->Count; ++i) {
      if (auto ns = layout_.NamespaceOfStream(StreamKind::kTuples, list->List[i])) {
        out.push_back(std::move(*ns));
      }
    }
  }
  jsStreamNamesList_Destroy(list);
  if (result != NATS_OK && result != NATS_NOT_FOUND) {
    if (result == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
    return Status::Unavailable(
        fmt::format("listing the streams of space '{}' failed: {}", uri_, NatsError(result, jerr)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<std::string>> NatsSpace::NamespacesFor(const Pattern& pattern) {
  std::vector<std::string> candidates;
  if (std::optional<std::string> ns = NatsLayout::NamespaceOf(pattern)) {
    ACAN_RETURN_IF_ERROR(CheckNamespace(*ns, "read"));
    candidates.push_back(std::move(*ns));
  } else {
    ACAN_ASSIGN_OR_RETURN(candidates, AllNamespaces());
  }
  std::vector<std::string> out;
  for (std::string& ns : candidates) {
    bool exists = false;
    ACAN_RETURN_IF_ERROR(EnsureNamespace(ns, /*create=*/false, &exists));
    if (exists) out.push_back(std::move(ns));
  }
  return out;
}

// ---- where keys live ----

bool NatsSpace::IsFenced(const Key& key) const {
  for (const Pattern& p : fenced_keys_) {
    if (p.Matches(key)) return true;
  }
  return false;
}

NatsSpace::Store NatsSpace::MakeStore(bool fenced, std::string_view ns) const {
  return Store{fenced, std::string(ns),
               layout_.StreamName(fenced ? StreamKind::kFenced : StreamKind::kTuples, ns),
               layout_.TuplePrefix(fenced)};
}

NatsSpace::Store NatsSpace::StoreOf(const Key& key) const {
  return MakeStore(IsFenced(key), NatsLayout::NamespaceOf(key));
}

std::vector<NatsSpace::Store> NatsSpace::StoresFor(const Pattern& pattern,
                                                   std::string_view ns) const {
  bool overlaps = false;
  for (const Pattern& p : fenced_keys_) {
    if (p.Covers(pattern)) return {MakeStore(true, ns)};
    overlaps = overlaps || p.Overlaps(pattern);
  }
  if (overlaps) return {MakeStore(false, ns), MakeStore(true, ns)};
  return {MakeStore(false, ns)};
}

std::string NatsSpace::CellSubject(const Key& key) const {
  return layout_.CellSubject(IsFenced(key), key);
}

std::string NatsSpace::CellStream(const Key& key) const {
  return layout_.StreamName(IsFenced(key) ? StreamKind::kFenced : StreamKind::kCells,
                            NatsLayout::NamespaceOf(key));
}

ChunkWriter NatsSpace::WriterOf(const Key& key) const {
  if (IsFenced(key)) return ChunkWriter::kFenced;
  return options_.role == "handler" ? ChunkWriter::kHandler : ChunkWriter::kManager;
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
    std::lock_guard lock(mu_);
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
