#include "space/nats/nats_space.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <zlib.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "common/kill_point.h"
#include "space/cell_internal.h"
#include "space/nats/wire.h"
#include "space/uri_internal.h"

namespace acan::nats {

using namespace std::chrono_literals;

namespace {

// The longest a blocked getter waits before it looks again (a put that raced its subscription).
constexpr auto kMaxWaitSlice = 50ms;
// Patterns with a watch of their own; getters on further patterns look every kMaxWaitSlice.
constexpr size_t kMaxWatches = 1024;
// Room left in a message for headers: they count toward the server's max_payload.
constexpr size_t kHeaderAllowance = 4096;
constexpr const char* kChunksHeader = "Acan-Chunks";  // "<count> <crc32> <id>"

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

std::string RandomId() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

struct MsgGuard {
  natsMsg* msg = nullptr;
  ~MsgGuard() { natsMsg_Destroy(msg); }
};

}  // namespace

struct NatsSpace::Head {
  const Store* store = nullptr;
  uint64_t seq = 0;
  Key key;
  size_t size = 0;
  std::string chunks;  // the Acan-Chunks header; empty for an inline value
  Value value;         // an inline value
};

NatsSpace::NatsSpace(std::string uri, NatsSpaceOptions options)
    : uri_(std::move(uri)),
      options_(std::move(options)),
      tuples_{options_.stream, options_.stream + ".t.", options_.stream + ".t."},
      fenced_{options_.stream + "_fenced", options_.stream + ".f.t.", options_.stream + ".w.t."},
      chunk_prefix_(options_.stream + ".c."),
      chunk_stream_(options_.stream + "_chunks"),
      cell_prefix_(options_.stream + ".r."),
      cell_stream_(options_.stream + "_cells"),
      fenced_cell_prefix_(options_.stream + ".f.r."),
      fenced_keys_(options_.limits.fenced),
      client_id_(RandomId()) {}

NatsSpace::~NatsSpace() {
  Close();
  // The connection first: once it is closed no message is delivered, so the watches' subscriptions
  // can go (the other order is libnats 3.4.1's crash, nats.c issue 637).
  if (nc_) natsConnection_Close(nc_);
  for (auto& [filter, watch] : watches_) natsSubscription_Destroy(watch->sub);
  for (auto& watch : put_watches_) natsSubscription_Destroy(watch->sub);
  jsCtx_Destroy(js_);
  natsConnection_Destroy(nc_);
}

Status NatsSpace::CancelledStatus() const {
  return Status::Cancelled(fmt::format("space '{}' is closed", uri_));
}

Deadline NatsSpace::NonBlocking() const {
  return Deadline::After(std::chrono::milliseconds(options_.retry_ms));
}

Result<std::unique_ptr<NatsSpace>> NatsSpace::Open(std::string uri, NatsSpaceOptions options) {
  std::unique_ptr<NatsSpace> space(new NatsSpace(std::move(uri), std::move(options)));
  ACAN_RETURN_IF_ERROR(space->Connect());
  ACAN_RETURN_IF_ERROR(space->EnsureStream(space->options_.stream, space->tuples_.prefix + ">"));
  ACAN_RETURN_IF_ERROR(space->EnsureStream(space->chunk_stream_, space->chunk_prefix_ + ">"));
  ACAN_RETURN_IF_ERROR(
      space->EnsureStream(space->cell_stream_, space->cell_prefix_ + ">", StreamKind::kCells));
  ACAN_RETURN_IF_ERROR(space->EnsureStream(space->fenced_.stream, space->options_.stream + ".f.>",
                                           StreamKind::kFenced));
  return space;
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

void NatsSpace::NoteDedupeWindow(const jsStreamInfo* info) {
  if (info == nullptr || info->Config == nullptr) return;
  // 0 is the server's default, two minutes.
  const std::chrono::nanoseconds window{info->Config->Duplicates > 0 ? info->Config->Duplicates
                                                                     : int64_t{120} * 1000000000};
  if (dedupe_window_.count() == 0 || window < dedupe_window_) dedupe_window_ = window;
}

Status NatsSpace::EnsureStream(const std::string& name, const std::string& subjects,
                               StreamKind kind) {
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&si, js_, name.c_str(), nullptr, &jerr);
  if (s == NATS_OK) NoteDedupeWindow(si);
  jsStreamInfo_Destroy(si);
  if (s == NATS_OK) return Status::Ok();
  if (s != NATS_NOT_FOUND) {
    return Status::Unavailable(fmt::format("cannot look up stream '{}' on '{}': {}", name,
                                           options_.servers, NatsError(s, jerr)));
  }
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  const char* subject_list[] = {subjects.c_str()};
  cfg.Name = name.c_str();
  cfg.Subjects = subject_list;
  cfg.SubjectsLen = 1;
  // Cells (the audit log's records among them) are on file whatever the tuples' storage: an
  // append-only record survives a restart of the server, and a memory-stored one would hold
  // every record of a long run in the server's memory (a death and a join for every crash).
  const bool in_memory = options_.memory_storage && kind != StreamKind::kCells;
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
  const std::string republish_from = fenced_.prefix + ">",
                    republish_to = fenced_.watch_prefix + ">";
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
  if (s == NATS_OK) return Status::Ok();
  // Another opener may have created it in between.
  si = nullptr;
  if (js_GetStreamInfo(&si, js_, name.c_str(), nullptr, nullptr) == NATS_OK) {
    NoteDedupeWindow(si);
    jsStreamInfo_Destroy(si);
    return Status::Ok();
  }
  return Status::Unavailable(fmt::format("cannot create stream '{}' ({}, {} replicas) on '{}': {}",
                                         name, in_memory ? "memory" : "file", options_.replicas,
                                         options_.servers, NatsError(s, jerr)));
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
               self->options_.credentials
                   ? fmt::format(" (role '{}')", self->options_.credentials->role)
                   : std::string(),
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

template <typename Request>
Status NatsSpace::Retry(const char* what, Deadline deadline, Request request) const {
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

std::string NatsSpace::TupleFilter(const Store& store, const Pattern& pattern) const {
  return store.prefix + "*." + pattern.str();
}

bool NatsSpace::IsFenced(const Key& key) const {
  for (const Pattern& p : fenced_keys_) {
    if (p.Matches(key)) return true;
  }
  return false;
}

const NatsSpace::Store& NatsSpace::StoreOf(const Key& key) const {
  return IsFenced(key) ? fenced_ : tuples_;
}

std::vector<const NatsSpace::Store*> NatsSpace::StoresFor(const Pattern& pattern) const {
  bool overlaps = false;
  for (const Pattern& p : fenced_keys_) {
    if (p.Covers(pattern)) return {&fenced_};
    overlaps = overlaps || p.Overlaps(pattern);
  }
  if (overlaps) return {&tuples_, &fenced_};
  return {&tuples_};
}

std::string NatsSpace::CellSubject(const Key& key) const {
  return (IsFenced(key) ? fenced_cell_prefix_ : cell_prefix_) + key.str();
}

const std::string& NatsSpace::CellStream(const Key& key) const {
  return IsFenced(key) ? fenced_.stream : cell_stream_;
}

std::string NatsSpace::ChunkSubject(std::string_view id, size_t i) const {
  return fmt::format("{}{}.{}", chunk_prefix_, id, i);
}

Status NatsSpace::DirectGet(const std::string& stream, jsDirectGetMsgOptions* options,
                            Deadline deadline, natsMsg** msg, natsStatus* result) const {
  return Retry("read", deadline, [&] {
    natsMsg_Destroy(*msg);
    *msg = nullptr;
    *result = js_DirectGetMsg(msg, js_, stream.c_str(), nullptr, options);
    return *result;
  });
}

// ---- put ----

Status NatsSpace::Publish(const std::string& subject, const void* data, size_t size,
                          const char* chunks_header, Deadline deadline,
                          const uint64_t* expect_subject_seq, uint64_t* seq,
                          const uint64_t* expect_stream_seq) {
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
  const Deadline within_window =
      Deadline::After(std::max<std::chrono::nanoseconds>(dedupe_window_ - request, request));
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

Status NatsSpace::WaitForRoom(const Key& key, size_t size, Deadline deadline) {
  const size_t max_total = options_.limits.max_total_bytes;
  if (max_total == 0) return Status::Ok();
  if (size > max_total) {
    return Status::ResourceExhausted(
        fmt::format("value for key '{}' is {} bytes, over the space's max_total_bytes of {}",
                    key.str(), size, max_total));
  }
  // The bytes of the whole space (every client's) come from the server, which costs a request:
  // this client asks when its estimate (the last answer plus its own puts since) says the put
  // would pass the limit, or the estimate is a second old. Several clients near the limit at once
  // may pass it by what they put in between: the limit is a bound on memory, not an invariant.
  for (auto pause = 2ms;; pause = std::min<std::chrono::milliseconds>(pause * 2, 50ms)) {
    {
      std::lock_guard lock(mu_);
      if (bytes_estimate_ + size <= max_total && Clock::now() - estimate_at_ < 1s) {
        bytes_estimate_ += size;
        return Status::Ok();
      }
    }
    ACAN_ASSIGN_OR_RETURN(uint64_t stored, StoredBytes(nullptr));
    {
      std::lock_guard lock(mu_);
      bytes_estimate_ = stored;
      estimate_at_ = Clock::now();
      if (stored + size <= max_total) {
        bytes_estimate_ += size;
        return Status::Ok();
      }
    }
    if (closed_.load()) return CancelledStatus();
    if (deadline.expired()) {
      return Status::ResourceExhausted(fmt::format(
          "space '{}' is full ({} of max_total_bytes {} in use); put of {} bytes for key '{}' "
          "waited until its deadline",
          uri_, stored, max_total, size, key.str()));
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline.at() - Clock::now()));
  }
}

Status NatsSpace::Put(Key key, Value value, Deadline deadline) {
  return PutValue(std::move(key), std::move(value), nullptr, deadline);
}

Status NatsSpace::PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) {
  if (!IsFenced(key) || !IsFenced(fence.cell)) {
    const Status s = Status::InvalidArgument(fmt::format(
        "fenced put of '{}' (cell '{}') in space '{}': both keys must match the space's fenced "
        "patterns (SpaceOptions::fenced), or the server cannot check the one against the other",
        key.str(), fence.cell.str(), uri_));
    stats_.Record(SpaceOp::kPut, Clock::now(), s);
    return s;
  }
  return PutValue(std::move(key), std::move(value), &fence, deadline);
}

Status NatsSpace::PutValue(Key key, Value value, const Fence* fence, Deadline deadline) {
  const auto start = Clock::now();
  auto done = [&](Status s) {
    stats_.Record(SpaceOp::kPut, start, s);
    return s;
  };
  if (closed_.load()) return done(CancelledStatus());
  const size_t size = value.size();
  if (size > options_.limits.max_value_bytes) {
    return done(Status::ResourceExhausted(
        fmt::format("value for key '{}' is {} bytes, over the space's max_value_bytes of {}",
                    key.str(), size, options_.limits.max_value_bytes)));
  }
  if (Status room = WaitForRoom(key, size, deadline); !room.ok()) return done(room);
  const std::string subject = fmt::format("{}{}.{}", StoreOf(key).prefix, size, key.str());
  stats_.CountBytes(size, 0);
  if (size <= chunk_bytes_) {
    if (fence != nullptr) {
      return done(PublishFenced(key, subject, value, nullptr, *fence, deadline));
    }
    return done(Publish(subject, value.data(), size, nullptr, deadline));
  }
  // Chunks first, then the tuple that names them: a reader sees the tuple only once every chunk
  // is stored, and a put cut short leaves no tuple behind.
  const std::string id = fmt::format("{}-{}", client_id_, next_id_.fetch_add(1));
  const size_t count = (size + chunk_bytes_ - 1) / chunk_bytes_;
  for (size_t i = 0; i < count; ++i) {
    const size_t offset = i * chunk_bytes_;
    Status chunk = Publish(ChunkSubject(id, i), value.data() + offset,
                           std::min(chunk_bytes_, size - offset), nullptr, deadline);
    if (!chunk.ok()) return done(chunk);
    if (i + 1 < count) KillPoint("chunk");
  }
  const std::string header = fmt::format("{} {} {}", count, wire::Crc32(value.data(), size), id);
  if (fence != nullptr) {
    Status s = PublishFenced(key, subject, Value(), header.c_str(), *fence, deadline);
    if (!s.ok()) PurgeChunks(id);  // refused: its chunks would be garbage
    return done(s);
  }
  return done(Publish(subject, nullptr, 0, header.c_str(), deadline));
}

void NatsSpace::PurgeChunks(const std::string& id) {
  jsOptions jo;
  jsOptions_Init(&jo);
  const std::string chunk_filter = chunk_prefix_ + id + ".>";
  jo.Stream.Purge.Subject = chunk_filter.c_str();
  (void)js_PurgeStream(js_, chunk_stream_.c_str(), &jo, nullptr);
}

Result<uint64_t> NatsSpace::FencedLastSequence(Deadline deadline) const {
  jsStreamInfo* si = nullptr;
  natsStatus result = NATS_OK;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  ACAN_RETURN_IF_ERROR(Retry("fenced put", deadline, [&] {
    jsStreamInfo_Destroy(si);
    si = nullptr;
    jerr = static_cast<jsErrCode>(0);
    result = js_GetStreamInfo(&si, js_, fenced_.stream.c_str(), nullptr, &jerr);
    return result;
  }));
  const uint64_t last = result == NATS_OK ? si->State.LastSeq : 0;
  jsStreamInfo_Destroy(si);
  if (result != NATS_OK) {
    return Status::Unavailable(
        fmt::format("fenced put in space '{}': no stream info: {}", uri_, NatsError(result, jerr)));
  }
  return last;
}

Result<uint64_t> NatsSpace::CellRevisionAtLeader(const Key& key, Deadline deadline) const {
  const std::string subject = CellSubject(key);
  natsMsg* msg = nullptr;
  natsStatus result = NATS_OK;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  ACAN_RETURN_IF_ERROR(Retry("fenced put", deadline, [&] {
    natsMsg_Destroy(msg);
    msg = nullptr;
    jerr = static_cast<jsErrCode>(0);
    result = js_GetLastMsg(&msg, js_, CellStream(key).c_str(), subject.c_str(), nullptr, &jerr);
    return result;
  }));
  MsgGuard got{msg};
  if (result == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr) return uint64_t{0};
  if (result != NATS_OK) {
    return Status::Unavailable(fmt::format("fenced put in space '{}': cannot read cell '{}': {}",
                                           uri_, key.str(), NatsError(result, jerr)));
  }
  return natsMsg_GetSequence(msg);
}

// A publish expecting the stream's last sequence to be one at which the fence's cell was read at
// its revision: stored only if nothing was stored since, so a swap of the cell in between (a
// standby that took the lease) makes the server refuse it whenever it arrives. Another writer's
// put in between refuses it too: then the cell is read again and, if still at the revision, the
// publish goes again from the new last sequence.
Status NatsSpace::PublishFenced(const Key& key, const std::string& subject, const Value& value,
                                const char* chunks_header, const Fence& fence, Deadline deadline) {
  // Where the last fenced put of this client with the same fence was stored: nothing else was
  // stored between the read of the cell at that revision and it, so a publish expecting it as the
  // last sequence is fenced as well. Any other fence starts with a read of its cell.
  std::optional<uint64_t> expect;
  {
    std::lock_guard lock(mu_);
    if (fence_seen_.revision == fence.revision && fence_seen_.cell == fence.cell.str()) {
      expect = fence_seen_.seq;
    }
  }
  for (int round = 0;; ++round) {
    if (!expect.has_value()) {
      // The stream's last sequence, then the cell, in that order: a swap after the first read
      // makes the publish below fail, one before it shows in the second.
      ACAN_ASSIGN_OR_RETURN(uint64_t last, FencedLastSequence(deadline));
      ACAN_ASSIGN_OR_RETURN(uint64_t revision, CellRevisionAtLeader(fence.cell, deadline));
      if (revision != fence.revision) return FenceMoved(key, fence, uri_, RevisionWords(revision));
      expect = last;
    }
    KillPoint("fenced");  // the last moment before the put is on its way
    uint64_t seq = 0;
    Status s = Publish(subject, value.data(), value.size(), chunks_header, deadline, nullptr, &seq,
                       &*expect);
    if (s.ok()) {
      std::lock_guard lock(mu_);
      fence_seen_ = {fence.cell.str(), fence.revision, seq};
      return Status::Ok();
    }
    if (s.code() != StatusCode::kFailedPrecondition) return s;
    // Something was stored since: another writer's put, or a swap of the cell. Look again.
    expect.reset();
    if (deadline.expired() && round > 0) {
      return Status::Unavailable(fmt::format(
          "fenced put of '{}' in space '{}': other writers kept the stream busy until the "
          "deadline",
          key.str(), uri_));
    }
  }
}

// ---- read and take ----

Result<std::optional<NatsSpace::Head>> NatsSpace::FindFrom(const Store& store,
                                                           const std::string& filter, uint64_t from,
                                                           Deadline deadline) {
  MsgGuard got;
  jsDirectGetMsgOptions dg;
  jsDirectGetMsgOptions_Init(&dg);
  dg.Sequence = from;
  dg.NextBySubject = filter.c_str();
  natsStatus result = NATS_OK;
  ACAN_RETURN_IF_ERROR(DirectGet(store.stream, &dg, deadline, &got.msg, &result));
  if (result == NATS_NOT_FOUND) return std::optional<Head>();
  if (result != NATS_OK) {
    if (result == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
    return Status::Unavailable(
        fmt::format("read of '{}' in space '{}' failed: {}", filter, uri_, NatsError(result, 0)));
  }
  const char* seq_text = nullptr;
  const char* subject = nullptr;
  natsMsgHeader_Get(got.msg, "Nats-Sequence", &seq_text);
  natsMsgHeader_Get(got.msg, "Nats-Subject", &subject);
  Head head;
  head.store = &store;
  std::string_view subj = subject ? subject : "";
  std::string_view seq_view = seq_text ? seq_text : "";
  auto bad = [&](std::string_view why) {
    return Status::DataLoss(fmt::format(
        "space '{}': message '{}' (sequence '{}') is not a tuple: {}", uri_, subj, seq_view, why));
  };
  auto seq = wire::ParseSequence(seq_view);
  if (!seq.ok()) return bad(seq.status().message());
  head.seq = *seq;
  if (!subj.starts_with(store.prefix)) return bad("outside the tuple subjects");
  subj.remove_prefix(store.prefix.size());
  auto parsed = wire::ParseTupleSubject(subj, options_.limits.max_value_bytes);
  if (!parsed.ok()) return bad(parsed.status().message());
  head.size = parsed->size;
  head.key = std::move(parsed->key);
  const char* chunks = nullptr;
  if (natsMsgHeader_Get(got.msg, kChunksHeader, &chunks) == NATS_OK && chunks) {
    head.chunks = chunks;
  } else {
    const int len = natsMsg_GetDataLength(got.msg);
    if (static_cast<size_t>(len) != head.size) {
      return bad(fmt::format("{} bytes, its subject says {}", len, head.size));
    }
    head.value = Value::CopyOf(natsMsg_GetData(got.msg), static_cast<size_t>(len));
  }
  return std::optional<Head>(std::move(head));
}

Result<Value> NatsSpace::LoadValue(const Head& head, Deadline deadline) {
  if (head.chunks.empty()) return head.value;
  // Any writer's chunks, whatever its chunk_bytes, are at most a message of the server's.
  auto list = wire::ParseChunkList(head.chunks, head.size, max_payload_);
  if (!list.ok()) {
    return Status::DataLoss(
        fmt::format("space '{}': tuple '{}': {}", uri_, head.key.str(), list.status().message()));
  }
  wire::ChunkAssembler value(*list, head.size);
  for (size_t i = 0; i < list->count; ++i) {
    const std::string subject = ChunkSubject(list->id, i);
    MsgGuard got;
    jsDirectGetMsgOptions dg;
    jsDirectGetMsgOptions_Init(&dg);
    dg.LastBySubject = subject.c_str();
    natsStatus result = NATS_OK;
    ACAN_RETURN_IF_ERROR(DirectGet(chunk_stream_, &dg, deadline, &got.msg, &result));
    if (result != NATS_OK) {
      return Status::DataLoss(fmt::format(
          "space '{}': tuple '{}' is missing chunk {} of {} ({}): the value is torn, not returned",
          uri_, head.key.str(), i, list->count, NatsError(result, 0)));
    }
    Status added =
        value.Add(natsMsg_GetData(got.msg), static_cast<size_t>(natsMsg_GetDataLength(got.msg)));
    if (!added.ok()) {
      return Status::DataLoss(
          fmt::format("space '{}': tuple '{}': {}: the value is torn, not returned", uri_,
                      head.key.str(), added.message()));
    }
  }
  auto out = value.Finish();
  if (!out.ok()) {
    return Status::DataLoss(
        fmt::format("space '{}': tuple '{}' {}: the value is torn, not returned", uri_,
                    head.key.str(), out.status().message()));
  }
  return out;
}

Result<bool> NatsSpace::DeleteHead(const Head& head, Deadline deadline) {
  natsStatus result = NATS_OK;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  ACAN_RETURN_IF_ERROR(Retry("take", deadline, [&] {
    jerr = static_cast<jsErrCode>(0);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = options_.request_ms;
    result = js_DeleteMsg(js_, head.store->stream.c_str(), head.seq, &jo, &jerr);
    return result;
  }));
  if (result == NATS_OK) return true;
  if (jerr != 0) return false;  // the server refused: another taker deleted it first
  if (result == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
  return Status::Unavailable(fmt::format("take of '{}' in space '{}' failed: {}", head.key.str(),
                                         uri_, NatsError(result, jerr)));
}

Result<std::vector<Tuple>> NatsSpace::TryTake(const Pattern& pattern, size_t max_count,
                                              Deadline deadline) {
  std::vector<Tuple> out;
  // An error after some tuples were taken ends the pouch with those: they are gone from the space.
  auto fail = [&](Status s) -> Result<std::vector<Tuple>> {
    if (out.empty()) return s;
    return std::move(out);
  };
  for (const Store* store : StoresFor(pattern)) {
    const std::string filter = TupleFilter(*store, pattern);
    for (uint64_t from = 1; out.size() < max_count;) {
      auto head = FindFrom(*store, filter, from, deadline);
      if (!head.ok()) return fail(head.status());
      if (!*head) break;
      from = (*head)->seq + 1;
      auto won = DeleteHead(**head, deadline);
      if (!won.ok()) return fail(won.status());
      if (!*won) continue;
      {
        std::lock_guard lock(mu_);
        bytes_estimate_ -= std::min<uint64_t>(bytes_estimate_, (*head)->size);
      }
      auto loaded = LoadValue(**head, deadline);
      if (!loaded.ok()) return fail(loaded.status());
      Value value = std::move(loaded).value();
      Head* taken = &**head;
      if (!taken->chunks.empty()) {
        // The chunks are this taker's now; a failed purge only leaves garbage behind.
        PurgeChunks(taken->chunks.substr(taken->chunks.rfind(' ') + 1));
      }
      stats_.CountBytes(0, value.size());
      out.push_back(Tuple{std::move(taken->key), std::move(value)});
    }
  }
  return out;
}

Result<std::vector<Tuple>> NatsSpace::Scan(const Pattern& pattern, size_t limit,
                                           Deadline deadline) {
  std::vector<Tuple> out;
  for (const Store* store : StoresFor(pattern)) {
    const std::string filter = TupleFilter(*store, pattern);
    for (uint64_t from = 1; out.size() < limit;) {
      ACAN_ASSIGN_OR_RETURN(std::optional<Head> head, FindFrom(*store, filter, from, deadline));
      if (!head) break;
      from = head->seq + 1;
      auto value = LoadValue(*head, deadline);
      if (!value.ok()) {
        // A taker may have removed the chunks after this read found the tuple: then the tuple is
        // gone too, and the read goes on. A tuple still there with a chunk missing is data loss.
        MsgGuard still;
        jsDirectGetMsgOptions dg;
        jsDirectGetMsgOptions_Init(&dg);
        dg.Sequence = head->seq;
        if (js_DirectGetMsg(&still.msg, js_, store->stream.c_str(), nullptr, &dg) ==
            NATS_NOT_FOUND) {
          continue;
        }
        return value.status();
      }
      stats_.CountBytes(0, value->size());
      out.push_back(Tuple{std::move(head->key), std::move(value).value()});
    }
  }
  return out;
}

void NatsSpace::OnWatchedPut(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  natsMsg_Destroy(msg);
  auto* watch = static_cast<Watch*>(closure);
  {
    std::lock_guard lock(watch->mu);
    ++watch->puts;
  }
  watch->cv.notify_all();
}

NatsSpace::Watch* NatsSpace::WatchFor(const std::string& filter) {
  std::lock_guard lock(mu_);
  if (auto it = watches_.find(filter); it != watches_.end()) return it->second.get();
  if (watches_.size() >= kMaxWatches || closed_.load()) return nullptr;
  auto watch = std::make_unique<Watch>();
  if (natsConnection_Subscribe(&watch->sub, nc_, filter.c_str(), &NatsSpace::OnWatchedPut,
                               watch.get()) != NATS_OK) {
    return nullptr;  // the getter polls instead
  }
  // Only the notice matters: a slow waiter's backlog is dropped by the client, not the server.
  natsSubscription_SetPendingLimits(watch->sub, 1024, 16 << 20);
  return watches_.emplace(filter, std::move(watch)).first->second.get();
}

void NatsSpace::OnPutWatched(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  MsgGuard guard{msg};
  auto* watch = static_cast<PutWatch*>(closure);
  const char* chunks = nullptr;
  if (natsMsgHeader_Get(msg, kChunksHeader, &chunks) == NATS_OK && chunks) {
    watch->space->watch_chunked_.fetch_add(1);
    return;
  }
  // <stream>.t.<size>.<key>, or <stream>.w.t.<size>.<key> (what the fenced stream stored)
  std::string_view subject = natsMsg_GetSubject(msg);
  if (!subject.starts_with(watch->prefix)) return;
  subject.remove_prefix(watch->prefix.size());
  const size_t dot = subject.find('.');
  if (dot == std::string_view::npos) return;
  auto key = Key::Parse(subject.substr(dot + 1));
  if (!key.ok()) return;
  watch->on_put(
      *key, Value::CopyOf(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg))));
}

Status NatsSpace::WatchPuts(const Pattern& pattern,
                            std::function<void(const Key&, const Value&)> on_put) {
  std::lock_guard lock(mu_);
  if (closed_.load()) return CancelledStatus();
  for (const Store* store : StoresFor(pattern)) {
    auto watch = std::make_unique<PutWatch>();
    watch->space = this;
    watch->on_put = on_put;
    watch->prefix = store->watch_prefix;
    const std::string filter = store->watch_prefix + "*." + pattern.str();
    natsStatus s = natsConnection_Subscribe(&watch->sub, nc_, filter.c_str(),
                                            &NatsSpace::OnPutWatched, watch.get());
    // Every put counts: no limit on what waits for the callback (the default drops past 64 MB).
    if (s == NATS_OK) s = natsSubscription_SetPendingLimits(watch->sub, -1, -1);
    if (s == NATS_OK) s = natsConnection_Flush(nc_);  // subscribed at the server before returning
    if (s != NATS_OK) {
      natsSubscription_Destroy(watch->sub);
      return Status::Unavailable(
          fmt::format("watching '{}' in space '{}' failed: {}", filter, uri_, NatsError(s, 0)));
    }
    put_watches_.push_back(std::move(watch));
  }
  return Status::Ok();
}

uint64_t NatsSpace::watch_dropped() const {
  std::lock_guard lock(mu_);
  uint64_t dropped = 0;
  for (const auto& watch : put_watches_) {
    int64_t n = 0;
    if (natsSubscription_GetDropped(watch->sub, &n) == NATS_OK) dropped += uint64_t(n);
  }
  return dropped;
}

template <typename TryOnce>
Status NatsSpace::WaitFor(const Pattern& pattern, Deadline deadline, SpaceOp op, TryOnce try_once) {
  Watch* watch = nullptr;
  for (bool first = true;; first = false) {
    if (closed_.load()) return CancelledStatus();
    uint64_t seen = 0;
    if (watch) {
      std::lock_guard lock(watch->mu);
      seen = watch->puts;
    }
    // Each look at the space may retry a lost connection until the call's deadline; a call that
    // does not wait still gets `retry_ms` to ride out a server restart.
    Result<bool> got = try_once(deadline.expired() ? NonBlocking() : deadline);
    if (!got.ok() || *got) return got.status();
    if (deadline.expired()) {
      return Status::Timeout(
          fmt::format("{}: no tuple matching '{}' in space '{}' before the deadline",
                      SpaceOpName(op), pattern.str(), uri_));
    }
    if (first) {
      // Watch, then look again: a put between the first look and the watch is found. A pattern
      // over both stores is watched in the first and looked at again every kMaxWaitSlice.
      watch = WatchFor(TupleFilter(*StoresFor(pattern).front(), pattern));
      continue;
    }
    const auto until = std::min(deadline.at(), Clock::now() + kMaxWaitSlice);
    waiting_.fetch_add(1);
    if (watch) {
      std::unique_lock lock(watch->mu);
      if (watch->cv.wait_until(lock, until,
                               [&] { return watch->puts != seen || closed_.load(); })) {
        wakeups_.fetch_add(1);
      }
    } else {
      std::this_thread::sleep_until(until);
    }
    waiting_.fetch_sub(1);
  }
}

Result<std::optional<Tuple>> NatsSpace::Read(const Pattern& pattern) {
  const auto start = Clock::now();
  if (closed_.load()) {
    Status s = CancelledStatus();
    stats_.Record(SpaceOp::kRead, start, s);
    return s;
  }
  auto found = Scan(pattern, 1, NonBlocking());
  stats_.Record(SpaceOp::kRead, start, found.status());
  if (!found.ok()) return found.status();
  if (found->empty()) return std::optional<Tuple>();
  return std::optional<Tuple>(std::move(found->front()));
}

Result<std::vector<Tuple>> NatsSpace::ReadAll(const Pattern& pattern, size_t limit) {
  const auto start = Clock::now();
  Result<std::vector<Tuple>> found = closed_.load() ? Result<std::vector<Tuple>>(CancelledStatus())
                                                    : Scan(pattern, limit, NonBlocking());
  stats_.Record(SpaceOp::kReadAll, start, found.status());
  return found;
}

Result<Tuple> NatsSpace::Get(const Pattern& pattern, Deadline deadline) {
  const auto start = Clock::now();
  std::optional<Tuple> taken;
  Status s = WaitFor(pattern, deadline, SpaceOp::kGet, [&](Deadline d) -> Result<bool> {
    ACAN_ASSIGN_OR_RETURN(std::vector<Tuple> got, TryTake(pattern, 1, d));
    if (got.empty()) return false;
    taken = std::move(got.front());
    return true;
  });
  stats_.Record(SpaceOp::kGet, start, s);
  if (!s.ok()) return s;
  stats_.CountTaken(1);
  return std::move(*taken);
}

Result<std::vector<Tuple>> NatsSpace::Take(const Pattern& pattern, size_t max_count,
                                           Deadline deadline) {
  const auto start = Clock::now();
  if (max_count == 0) {
    Status s = Status::InvalidArgument(
        fmt::format("take of '{}': max_count must be at least 1", pattern.str()));
    stats_.Record(SpaceOp::kTake, start, s);
    return s;
  }
  std::vector<Tuple> taken;
  Status s = WaitFor(pattern, deadline, SpaceOp::kTake, [&](Deadline d) -> Result<bool> {
    ACAN_ASSIGN_OR_RETURN(taken, TryTake(pattern, max_count, d));
    return !taken.empty();
  });
  stats_.Record(SpaceOp::kTake, start, s);
  if (!s.ok()) return s;
  stats_.CountTaken(taken.size());
  return taken;
}

void NatsSpace::Close() {
  if (closed_.exchange(true)) return;
  std::lock_guard lock(mu_);
  // Wakes every blocked getter at once.
  for (auto& [filter, watch] : watches_) {
    { std::lock_guard watch_lock(watch->mu); }
    watch->cv.notify_all();
  }
}

// ---- stats ----

Result<std::vector<std::pair<uint64_t, uint64_t>>> NatsSpace::SubjectCounts(
    const Store& store, const std::string& filter, const char* what) const {
  jsStreamInfo* si = nullptr;
  natsStatus result = NATS_OK;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  ACAN_RETURN_IF_ERROR(Retry(what, NonBlocking(), [&] {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = options_.request_ms;
    jo.Stream.Info.SubjectsFilter = filter.c_str();
    jsStreamInfo_Destroy(si);
    si = nullptr;
    result = js_GetStreamInfo(&si, js_, store.stream.c_str(), &jo, &jerr);
    return result;
  }));
  if (result != NATS_OK) {
    jsStreamInfo_Destroy(si);
    if (result == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
    return Status::Unavailable(
        fmt::format("{} of space '{}' failed: {}", what, uri_, NatsError(result, jerr)));
  }
  std::vector<std::pair<uint64_t, uint64_t>> out;
  if (const jsStreamStateSubjects* subjects = si->State.Subjects) {
    for (int i = 0; i < subjects->Count; ++i) {
      std::string_view subj = subjects->List[i].Subject;
      subj.remove_prefix(std::min(subj.size(), store.prefix.size()));
      uint64_t size = 0;
      std::from_chars(subj.data(), subj.data() + subj.size(), size);
      out.emplace_back(size, subjects->List[i].Msgs);
    }
  }
  jsStreamInfo_Destroy(si);
  return out;
}

Result<uint64_t> NatsSpace::StoredBytes(uint64_t* tuples) const {
  uint64_t bytes = 0, n = 0;
  for (const Store* store : {&tuples_, &fenced_}) {
    ACAN_ASSIGN_OR_RETURN(auto counts, SubjectCounts(*store, store->prefix + ">", "stats"));
    for (const auto& [size, msgs] : counts) {
      bytes += size * msgs;
      n += msgs;
    }
  }
  if (tuples) *tuples = n;
  return bytes;
}

Result<size_t> NatsSpace::Erase(const Pattern& pattern) {
  const auto start = Clock::now();
  auto erase_in = [&](const Store& store) -> Result<size_t> {
    if (closed_.load()) return CancelledStatus();
    const std::string filter = TupleFilter(store, pattern);
    ACAN_ASSIGN_OR_RETURN(auto counts, SubjectCounts(store, filter, "erase"));
    uint64_t n = 0, bytes = 0;
    bool chunked = false;
    for (const auto& [size, msgs] : counts) {
      n += msgs;
      bytes += size * msgs;
      chunked = chunked || size > chunk_bytes_;
    }
    if (n == 0) return size_t{0};
    if (chunked) {
      ACAN_ASSIGN_OR_RETURN(auto taken, TryTake(pattern, SIZE_MAX, NonBlocking()));
      return taken.size();
    }
    natsStatus result = NATS_OK;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    ACAN_RETURN_IF_ERROR(Retry("erase", NonBlocking(), [&] {
      jsOptions jo;
      jsOptions_Init(&jo);
      jo.Wait = options_.request_ms;
      jo.Stream.Purge.Subject = filter.c_str();
      jerr = static_cast<jsErrCode>(0);
      result = js_PurgeStream(js_, store.stream.c_str(), &jo, &jerr);
      return result;
    }));
    if (result != NATS_OK) {
      if (result == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
      return Status::Unavailable(fmt::format("erase of '{}' in space '{}' failed: {}",
                                             pattern.str(), uri_, NatsError(result, jerr)));
    }
    std::lock_guard lock(mu_);
    bytes_estimate_ -= std::min<uint64_t>(bytes_estimate_, bytes);
    return static_cast<size_t>(n);
  };
  auto erase = [&]() -> Result<size_t> {
    size_t n = 0;
    for (const Store* store : StoresFor(pattern)) {
      ACAN_ASSIGN_OR_RETURN(size_t erased, erase_in(*store));
      n += erased;
    }
    return n;
  };
  Result<size_t> r = erase();
  stats_.Record(SpaceOp::kErase, start, r.ok() ? Status::Ok() : r.status());
  if (r.ok()) stats_.CountTaken(*r);
  return r;
}

// ---- cells ----

Result<Cell> NatsSpace::ReadCell(const Key& key) {
  const auto start = Clock::now();
  auto read = [&]() -> Result<Cell> {
    if (closed_.load()) return CancelledStatus();
    const std::string subject = CellSubject(key);
    MsgGuard got;
    jsDirectGetMsgOptions dg;
    jsDirectGetMsgOptions_Init(&dg);
    dg.LastBySubject = subject.c_str();
    natsStatus result = NATS_OK;
    ACAN_RETURN_IF_ERROR(DirectGet(CellStream(key), &dg, NonBlocking(), &got.msg, &result));
    if (result == NATS_NOT_FOUND) return Cell();
    if (result != NATS_OK) {
      if (result == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
      return Status::Unavailable(fmt::format("read of cell '{}' in space '{}' failed: {}",
                                             key.str(), uri_, NatsError(result, 0)));
    }
    const char* seq_text = nullptr;
    natsMsgHeader_Get(got.msg, "Nats-Sequence", &seq_text);
    std::string_view seq_view = seq_text ? seq_text : "";
    Cell cell;
    auto revision = wire::ParseSequence(seq_view);
    if (!revision.ok()) {
      return Status::DataLoss(
          fmt::format("space '{}': cell '{}' has no revision ('{}')", uri_, key.str(), seq_view));
    }
    cell.revision = *revision;
    const int len = natsMsg_GetDataLength(got.msg);
    cell.value = Value::CopyOf(natsMsg_GetData(got.msg), static_cast<size_t>(len));
    stats_.CountBytes(0, cell.value.size());
    return cell;
  };
  auto r = read();
  stats_.Record(SpaceOp::kReadCell, start, r.ok() ? Status::Ok() : r.status());
  return r;
}

Result<uint64_t> NatsSpace::SwapCell(const Key& key, Value value, uint64_t expected,
                                     Deadline deadline) {
  const auto start = Clock::now();
  auto swap = [&]() -> Result<uint64_t> {
    if (closed_.load()) return CancelledStatus();
    ACAN_RETURN_IF_ERROR(CheckCellValue(key, value, uri_));
    stats_.CountBytes(value.size(), 0);
    uint64_t revision = 0;
    const std::string subject = CellSubject(key);
    Status s =
        Publish(subject, value.data(), value.size(), nullptr, deadline, &expected, &revision);
    if (s.code() == StatusCode::kFailedPrecondition) {
      auto now = ReadCell(key);  // the server names no revision: look
      std::string found = "a later revision";
      if (now.ok()) {
        found = now->revision != 0 ? fmt::format("revision {}", now->revision)
                                   : std::string("no revision (there is no cell)");
      }
      return CellMoved(key, expected, uri_, found);
    }
    ACAN_RETURN_IF_ERROR(s);
    if (IsFenced(key)) {
      // The fenced stream keeps every message: its cell's older revisions go (a failed purge
      // leaves them for the next swap).
      jsOptions jo;
      jsOptions_Init(&jo);
      jo.Wait = options_.request_ms;
      jo.Stream.Purge.Subject = subject.c_str();
      jo.Stream.Purge.Keep = 1;
      (void)js_PurgeStream(js_, fenced_.stream.c_str(), &jo, nullptr);
    }
    return revision;
  };
  auto r = swap();
  stats_.Record(SpaceOp::kSwapCell, start, r.ok() ? Status::Ok() : r.status());
  return r;
}

SpaceStats NatsSpace::Stats() const {
  uint64_t tuples = 0;
  auto bytes = closed_.load() ? Result<uint64_t>(uint64_t{0}) : StoredBytes(&tuples);
  SpaceStats s = stats_.Snapshot(tuples, bytes.ok() ? *bytes : 0);
  s.waiting = waiting_.load();
  s.wakeups = wakeups_.load();
  return s;
}

// ---- URIs ----

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

Result<std::unique_ptr<Space>> OpenNats(std::string_view text, const SpaceOptions& defaults) {
  ACAN_ASSIGN_OR_RETURN(SpaceUri uri, SpaceUri::Parse(text));
  NatsSpaceOptions options;
  options.limits = defaults;
  ACAN_ASSIGN_OR_RETURN(options.limits.max_value_bytes,
                        uri.UintParam("max_value_bytes", options.limits.max_value_bytes));
  ACAN_ASSIGN_OR_RETURN(options.limits.max_total_bytes,
                        uri.UintParam("max_total_bytes", options.limits.max_total_bytes));
  if (const std::string* stream = uri.Param("stream")) options.stream = *stream;
  ACAN_RETURN_IF_ERROR(CheckStreamName(uri, options.stream));
  const bool local = uri.authority.empty() && uri.path == "local";
  // nats:local keeps tuples in the server's memory unless told otherwise: its server lives and
  // dies with the run, and file storage made the Fashion-MNIST run 6.5 times slower on this
  // machine (docs/benchmarks.md). storage=file is what survives a restart of the server.
  options.memory_storage = local;
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
  std::string secure_dir, role;
  if (const std::string* dir = uri.Param("secure")) {
    secure_dir = *dir;
  } else if (const char* env = std::getenv("ACAN_NATS_SECURE"); env != nullptr && *env) {
    secure_dir = env;
  }
  if (const std::string* r = uri.Param("role")) {
    role = *r;
  } else if (const char* env = std::getenv("ACAN_NATS_ROLE"); env != nullptr && *env) {
    role = env;
  }
  if (secure_dir.empty() && uri.scheme == "tls") {
    return Status::InvalidArgument(fmt::format(
        "space URI '{}': tls:// needs the deployment's files: secure=DIR (or ACAN_NATS_SECURE), "
        "made by acan secure init DIR",
        uri.text));
  }
  if (secure_dir.empty() && !role.empty()) {
    return Status::InvalidArgument(fmt::format(
        "space URI '{}': role='{}' needs secure=DIR (or ACAN_NATS_SECURE)", uri.text, role));
  }
  if (!secure_dir.empty()) {
    // A process that does not say its role gets the least: an observer's.
    ACAN_ASSIGN_OR_RETURN(options.credentials,
                          LoadRoleCredentials(secure_dir, role.empty() ? "observer" : role));
  }

  std::unique_ptr<LocalNatsServer> server;
  if (local) {
    // nats:local: a private server for this run, its store in `dir` (a new temporary directory
    // when absent, removed with the space).
    LocalServerOptions local;
    if (const std::string* dir = uri.Param("dir")) local.store_dir = *dir;
    local.extra_config = kLocalServerConfig;
    if (!secure_dir.empty()) {
      // The deployment's TLS and users; the server's owner checks it answers as a manager.
      std::ifstream conf(SecureServerConfigPath(secure_dir));
      std::stringstream text;
      text << conf.rdbuf();
      if (!conf || text.str().empty()) {
        return Status::NotFound(
            fmt::format("space URI '{}': cannot read '{}' (made by acan "
                        "secure init)",
                        uri.text, SecureServerConfigPath(secure_dir)));
      }
      local.extra_config += "\n" + text.str();
      ACAN_ASSIGN_OR_RETURN(local.probe_credentials, LoadRoleCredentials(secure_dir, "manager"));
    }
    ACAN_RETURN_IF_ERROR(uri.RejectUnusedParams());
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
  } else {
    if (uri.authority.empty() || !uri.path.empty()) {
      return Status::InvalidArgument(fmt::format(
          "space URI '{}': expected nats://host:port[,host:port...] or nats:local", uri.text));
    }
    ACAN_RETURN_IF_ERROR(uri.RejectUnusedParams());
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
    options.servers = servers;
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
