// NatsSpace: watches, core NATS subscriptions beside the streams: the ones blocked getters wait
// on (a notice per put on their pattern) and WatchPuts' (every put, with its value). See
// nats_space.h.
#include <fmt/format.h>

#include "space/nats/nats_space.h"
#include "space/nats/nats_space_internal.h"

namespace acan::nats {

namespace {

// Patterns with a watch of their own; getters on further patterns look every kMaxWaitSlice.
constexpr size_t kMaxWatches = 1024;

}  // namespace

void NatsSpace::OnWatchedPut(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  natsMsg_Destroy(msg);
  auto* watch = static_cast<Watch*>(closure);
  {
    MutexLock lock(watch->mu);
    ++watch->puts;
  }
  watch->cv.SignalAll();
}

NatsSpace::Watch* NatsSpace::WatchFor(const std::string& filter) {
  MutexLock lock(mu_);
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
  MutexLock lock(mu_);
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
  MutexLock lock(mu_);
  uint64_t dropped = 0;
  for (const auto& watch : put_watches_) {
    int64_t n = 0;
    if (natsSubscription_GetDropped(watch->sub, &n) == NATS_OK) dropped += uint64_t(n);
  }
  return dropped;
}

}  // namespace acan::nats
