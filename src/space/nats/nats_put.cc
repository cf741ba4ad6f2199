// NatsSpace: put and fenced put (a value larger than a message goes as chunks first,
// nats_chunks.cc), and the wait for room under max_total_bytes. See nats_space.h.
#include <fmt/format.h>

#include <thread>

#include "space/nats/nats_space.h"
#include "space/nats/wire.h"

namespace acan::nats {

using namespace std::chrono_literals;

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
      MutexLock lock(mu_);
      if (bytes_estimate_ + size <= max_total && Clock::now() - estimate_at_ < 1s) {
        bytes_estimate_ += size;
        return Status::Ok();
      }
    }
    ACAN_ASSIGN_OR_RETURN(uint64_t stored, StoredBytes(nullptr));
    {
      MutexLock lock(mu_);
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

}  // namespace acan::nats
