#include "space/nats/nats_space.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <random>
#include <thread>

#include "space/nats/nats_space_internal.h"
#include "space/nats/wire.h"

namespace acan::nats {

using namespace std::chrono_literals;

namespace {

// The longest a blocked getter waits before it looks again (a put that raced its subscription).
constexpr auto kMaxWaitSlice = 50ms;
// Patterns with a watch of their own; getters on further patterns look every kMaxWaitSlice.
constexpr size_t kMaxWatches = 1024;

std::string RandomId() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

}  // namespace

NatsSpace::NatsSpace(std::string uri, NatsSpaceOptions options)
    : uri_(std::move(uri)),
      options_(std::move(options)),
      layout_(options_.stream),
      fenced_keys_(options_.limits.fenced),
      dedupe_window_(std::chrono::milliseconds(options_.dedupe_ms)),
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

Result<std::unique_ptr<NatsSpace>> NatsSpace::Open(std::string uri, NatsSpaceOptions options) {
  std::unique_ptr<NatsSpace> space(new NatsSpace(std::move(uri), std::move(options)));
  ACAN_RETURN_IF_ERROR(space->Connect());
  return space;
}

// ---- put ----

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
  const std::string_view ns = NatsLayout::NamespaceOf(key);
  bool exists = false;
  if (Status s = EnsureNamespace(ns, /*create=*/true, &exists); !s.ok()) return done(s);
  if (Status room = WaitForRoom(key, size, deadline); !room.ok()) return done(room);
  const Store store = StoreOf(key);
  const std::string subject = layout_.TupleSubject(store.fenced, size, key);
  stats_.CountBytes(size, 0);
  if (size <= chunk_bytes_) {
    if (fence != nullptr) {
      return done(PublishFenced(key, subject, value, nullptr, *fence, deadline));
    }
    return done(
        Publish(subject, value.data(), size, nullptr, deadline, nullptr, nullptr, nullptr, ns));
  }
  // Chunks first, then the tuple that names them: a reader sees the tuple only once every chunk
  // is stored, and a put cut short leaves no tuple behind.
  auto header = PutChunks(key, value, deadline);
  if (!header.ok()) return done(header.status());
  Status s =
      fence != nullptr
          ? PublishFenced(key, subject, Value(), header->c_str(), *fence, deadline)
          : Publish(subject, nullptr, 0, header->c_str(), deadline, nullptr, nullptr, nullptr, ns);
  if (!s.ok()) {
    // Refused or failed: its chunks would be garbage.
    if (auto list = wire::ParseChunkList(*header, size, max_payload_); list.ok()) {
      RemoveChunks(ns, *list, {});
    }
  }
  return done(s);
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
  head.store = store;
  std::string_view subj = subject ? subject : "";
  std::string_view seq_view = seq_text ? seq_text : "";
  auto bad = [&](std::string_view why) {
    return Status::DataLoss(fmt::format(
        "space '{}': message '{}' (sequence '{}') is not a tuple: {}", uri_, subj, seq_view, why));
  };
  auto seq = wire::ParseSequence(seq_view);
  if (!seq.ok()) return bad(seq.status().message());
  head.seq = *seq;
  const char* stamp = nullptr;
  natsMsgHeader_Get(got.msg, JSTimeStamp, &stamp);
  if (auto at = wire::ParseTimeStamp(stamp ? stamp : ""); at.ok()) head.stored_ns = *at;
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

Result<bool> NatsSpace::DeleteHead(const Head& head, Deadline deadline) {
  natsStatus result = NATS_OK;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  ACAN_RETURN_IF_ERROR(Retry("take", deadline, [&] {
    jerr = static_cast<jsErrCode>(0);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = options_.request_ms;
    result = js_DeleteMsg(js_, head.store.stream.c_str(), head.seq, &jo, &jerr);
    return result;
  }));
  if (result == NATS_OK) return true;
  if (jerr != 0) return false;  // the server refused: another taker deleted it first
  if (result == NATS_CONNECTION_CLOSED && closed_.load()) return CancelledStatus();
  return Status::Unavailable(fmt::format("take of '{}' in space '{}' failed: {}", head.key.str(),
                                         uri_, NatsError(result, jerr)));
}

Result<std::vector<NatsSpace::Cursor>> NatsSpace::CursorsFor(const Pattern& pattern) {
  ACAN_ASSIGN_OR_RETURN(std::vector<std::string> namespaces, NamespacesFor(pattern));
  std::vector<Cursor> out;
  for (const std::string& ns : namespaces) {
    for (Store& store : StoresFor(pattern, ns)) {
      Cursor c;
      c.filter = layout_.TupleFilter(store.fenced, pattern);
      c.store = std::move(store);
      out.push_back(std::move(c));
    }
  }
  return out;
}

Result<std::optional<NatsSpace::Head>> NatsSpace::NextMatch(std::vector<Cursor>& cursors,
                                                            Deadline deadline) {
  Cursor* oldest = nullptr;
  for (Cursor& c : cursors) {
    if (c.done) continue;
    if (!c.head) {
      ACAN_ASSIGN_OR_RETURN(c.head, FindFrom(c.store, c.filter, c.from, deadline));
      if (!c.head) {
        c.done = true;
        continue;
      }
    }
    if (oldest == nullptr || c.head->stored_ns < oldest->head->stored_ns) oldest = &c;
  }
  if (oldest == nullptr) return std::optional<Head>();
  oldest->from = oldest->head->seq + 1;
  std::optional<Head> out = std::move(oldest->head);
  oldest->head.reset();
  return out;
}

Result<std::vector<Tuple>> NatsSpace::TryTake(const Pattern& pattern, size_t max_count,
                                              Deadline deadline, bool load) {
  std::vector<Tuple> out;
  // An error after some tuples were taken ends the pouch with those: they are gone from the space.
  auto fail = [&](Status s) -> Result<std::vector<Tuple>> {
    if (out.empty()) return s;
    return std::move(out);
  };
  auto cursors = CursorsFor(pattern);
  if (!cursors.ok()) return cursors.status();
  while (out.size() < max_count) {
    auto head = NextMatch(*cursors, deadline);
    if (!head.ok()) return fail(head.status());
    if (!*head) break;
    auto won = DeleteHead(**head, deadline);
    if (!won.ok()) return fail(won.status());
    if (!*won) continue;
    {
      std::lock_guard lock(mu_);
      bytes_estimate_ -= std::min<uint64_t>(bytes_estimate_, (*head)->size);
    }
    Head& taken = **head;
    if (!load) {
      RemoveChunks(taken, {});
      out.push_back(Tuple{std::move(taken.key), Value()});
      continue;
    }
    std::vector<uint64_t> chunk_seqs;
    auto loaded = LoadValue(taken, deadline, &chunk_seqs);
    // The chunks are this taker's now, whether they made the value or not.
    RemoveChunks(taken, std::move(chunk_seqs));
    if (!loaded.ok()) return fail(loaded.status());
    Value value = std::move(loaded).value();
    stats_.CountBytes(0, value.size());
    out.push_back(Tuple{std::move(taken.key), std::move(value)});
  }
  return out;
}

Result<std::vector<Tuple>> NatsSpace::Scan(const Pattern& pattern, size_t limit,
                                           Deadline deadline) {
  std::vector<Tuple> out;
  ACAN_ASSIGN_OR_RETURN(std::vector<Cursor> cursors, CursorsFor(pattern));
  while (out.size() < limit) {
    ACAN_ASSIGN_OR_RETURN(std::optional<Head> head, NextMatch(cursors, deadline));
    if (!head) break;
    auto value = LoadValue(*head, deadline);
    if (!value.ok()) {
      // A taker may have removed the chunks after this read found the tuple: then the tuple is
      // gone too, and the read goes on. A tuple still there with a chunk missing is data loss.
      MsgGuard still;
      jsDirectGetMsgOptions dg;
      jsDirectGetMsgOptions_Init(&dg);
      dg.Sequence = head->seq;
      if (!IsTampered(value.status()) &&
          js_DirectGetMsg(&still.msg, js_, head->store.stream.c_str(), nullptr, &dg) ==
              NATS_NOT_FOUND) {
        continue;
      }
      return value.status();
    }
    stats_.CountBytes(0, value->size());
    out.push_back(Tuple{std::move(head->key), std::move(value).value()});
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
  // The subjects do not depend on the namespace: one subscription a store covers them all.
  for (const Store& store : StoresFor(pattern, "")) {
    auto watch = std::make_unique<PutWatch>();
    watch->space = this;
    watch->on_put = on_put;
    watch->prefix = layout_.WatchPrefix(store.fenced);
    const std::string filter = watch->prefix + "*." + pattern.str();
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
      watch = WatchFor(layout_.TupleFilter(StoresFor(pattern, "").front().fenced, pattern));
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
  if (result == NATS_NOT_FOUND) return std::vector<std::pair<uint64_t, uint64_t>>();  // no stream
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
  ACAN_ASSIGN_OR_RETURN(std::vector<std::string> namespaces, AllNamespaces());
  for (const std::string& ns : namespaces) {
    for (bool fenced : {false, true}) {
      const Store store = MakeStore(fenced, ns);
      ACAN_ASSIGN_OR_RETURN(auto counts, SubjectCounts(store, store.prefix + ">", "stats"));
      for (const auto& [size, msgs] : counts) {
        bytes += size * msgs;
        n += msgs;
      }
    }
  }
  if (tuples) *tuples = n;
  return bytes;
}

// One look at the server's per-subject counts and, when something matches, one purge by subject
// in each store: no value crosses the wire. Where this client may not purge (a handler), or a
// match has chunks (a purge would leave them behind), the matches are taken instead.
Result<size_t> NatsSpace::Erase(const Pattern& pattern) {
  const auto start = Clock::now();
  auto erase = [&]() -> Result<size_t> {
    if (closed_.load()) return CancelledStatus();
    struct Found {
      Store store;
      std::string filter;
      uint64_t tuples = 0, bytes = 0;
    };
    std::vector<Found> found;
    bool take = !MayManage();
    ACAN_ASSIGN_OR_RETURN(std::vector<std::string> namespaces, NamespacesFor(pattern));
    for (const std::string& ns : namespaces) {
      for (Store& store : StoresFor(pattern, ns)) {
        Found f{std::move(store), ""};
        f.filter = layout_.TupleFilter(f.store.fenced, pattern);
        ACAN_ASSIGN_OR_RETURN(auto counts, SubjectCounts(f.store, f.filter, "erase"));
        for (const auto& [size, msgs] : counts) {
          f.tuples += msgs;
          f.bytes += size * msgs;
          take = take || size > chunk_bytes_;
        }
        if (f.tuples > 0) found.push_back(std::move(f));
      }
    }
    if (found.empty()) return size_t{0};
    if (take) {
      ACAN_ASSIGN_OR_RETURN(auto taken, TryTake(pattern, SIZE_MAX, NonBlocking(), false));
      return taken.size();
    }
    size_t n = 0;
    for (const Found& f : found) {
      ACAN_RETURN_IF_ERROR(PurgeSubjects(f.store.stream, f.filter, 0, "erase"));
      n += f.tuples;
      std::lock_guard lock(mu_);
      bytes_estimate_ -= std::min<uint64_t>(bytes_estimate_, f.bytes);
    }
    return n;
  };
  Result<size_t> r = erase();
  stats_.Record(SpaceOp::kErase, start, r.ok() ? Status::Ok() : r.status());
  if (r.ok()) stats_.CountTaken(*r);
  return r;
}

SpaceStats NatsSpace::Stats() const {
  uint64_t tuples = 0;
  auto bytes = closed_.load() ? Result<uint64_t>(uint64_t{0}) : StoredBytes(&tuples);
  SpaceStats s = stats_.Snapshot(tuples, bytes.ok() ? *bytes : 0);
  s.waiting = waiting_.load();
  s.wakeups = wakeups_.load();
  s.tampered = tampered_.load();
  return s;
}

}  // namespace acan::nats
