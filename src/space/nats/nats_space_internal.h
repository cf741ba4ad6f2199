// What the files of NatsSpace (nats_space.cc, nats_connection.cc, nats_streams.cc, nats_put.cc,
// nats_take.cc, nats_watches.cc, nats_chunks.cc, nats_cells.cc) share: message constants and
// small helpers over libnats. Stateless; thread-safe.
#pragma once

#include <nats/nats.h>

#include <cstddef>
#include <string>

namespace acan::nats {

// Room left in a message for headers: they count toward the server's max_payload.
inline constexpr size_t kHeaderAllowance = 4096;
// A chunked value's header: wire::ChunkList ("<count> <sha256> <writer> <id>").
inline constexpr const char* kChunksHeader = "Acan-Chunks";

// A request that failed because the server did not answer (to be tried again).
bool IsConnectionLoss(natsStatus s);
// The status in words, with libnats' last error and the JetStream error code.
std::string NatsError(natsStatus s, int jerr);

struct MsgGuard {
  natsMsg* msg = nullptr;
  ~MsgGuard() { natsMsg_Destroy(msg); }
};

}  // namespace acan::nats
