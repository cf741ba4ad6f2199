// NatsSpace: its lifecycle (open, close, destroy) and the space-wide accounts made from the
// server's per-subject counts (Stats, Erase). The other operations live by concern in
// nats_connection.cc, nats_streams.cc, nats_put.cc, nats_take.cc, nats_watches.cc, nats_chunks.cc
// and nats_cells.cc; the URIs in nats_uri.cc. See nats_space.h.
#include "space/nats/nats_space.h"

#include <fmt/format.h>

#include <charconv>
#include <random>

#include "space/nats/nats_space_internal.h"

namespace acan::nats {

namespace {

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

void NatsSpace::Close() {
  if (closed_.exchange(true)) return;
  MutexLock lock(mu_);
  // Wakes every blocked getter at once.
  for (auto& [filter, watch] : watches_) {
    { MutexLock watch_lock(watch->mu); }
    watch->cv.SignalAll();
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
      MutexLock lock(mu_);
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
