// NatsSpace: read and take (a direct get of the next match, then a delete by its sequence that
// exactly one taker wins), and the wait of a blocked Get or Take. See nats_space.h.
#include <fmt/format.h>

#include <thread>

#include "space/nats/nats_space.h"
#include "space/nats/nats_space_internal.h"
#include "space/nats/wire.h"

namespace acan::nats {

using namespace std::chrono_literals;

namespace {

// The longest a blocked getter waits before it looks again (a put that raced its subscription).
constexpr auto kMaxWaitSlice = 50ms;

}  // namespace

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
      MutexLock lock(mu_);
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

template <typename TryOnce>
Status NatsSpace::WaitFor(const Pattern& pattern, Deadline deadline, SpaceOp op, TryOnce try_once) {
  Watch* watch = nullptr;
  for (bool first = true;; first = false) {
    if (closed_.load()) return CancelledStatus();
    uint64_t seen = 0;
    if (watch) {
      MutexLock lock(watch->mu);
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
      MutexLock lock(watch->mu);
      std::cv_status waited = std::cv_status::no_timeout;
      while (watch->puts == seen && !closed_.load() && waited == std::cv_status::no_timeout) {
        waited = watch->cv.WaitUntil(watch->mu, until);
      }
      if (watch->puts != seen || closed_.load()) wakeups_.fetch_add(1);
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

// The heads alone: a chunked value's chunks are neither fetched nor checked.
Result<std::vector<Key>> NatsSpace::ReadKeys(const Pattern& pattern, size_t limit) {
  const auto start = Clock::now();
  auto scan = [&]() -> Result<std::vector<Key>> {
    if (closed_.load()) return CancelledStatus();
    std::vector<Key> out;
    ACAN_ASSIGN_OR_RETURN(std::vector<Cursor> cursors, CursorsFor(pattern));
    const Deadline deadline = NonBlocking();
    while (out.size() < limit) {
      ACAN_ASSIGN_OR_RETURN(std::optional<Head> head, NextMatch(cursors, deadline));
      if (!head) break;
      out.push_back(std::move(head->key));
    }
    return out;
  };
  auto found = scan();
  stats_.Record(SpaceOp::kReadKeys, start, found.status());
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

}  // namespace acan::nats
