// What the NATS backend reads back from the server, decoded without the network: a tuple's
// subject (<size>.<key> after the stream's tuple prefix), the Acan-Chunks header of a chunked
// value ("<count> <sha256> <writer> <id>") and the reassembly of its chunks, checked against
// that digest, and a message's sequence header. Every figure in a message is checked against the space's limits and against what the
// message itself holds before anything is allocated: a message from a hostile or broken writer is
// a DataLoss naming what is wrong, never a crash or an allocation the size of its claim.
// Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "acan/key.h"
#include "acan/status.h"
#include "acan/value.h"
#include "space/nats/nats_layout.h"

namespace acan::nats::wire {

// A tuple's subject after the tuple prefix: the value's size and its key.
struct TupleSubject {
  size_t size = 0;
  Key key;
};
// `max_value_bytes`: the largest value the space accepts; a subject claiming more is refused.
Result<TupleSubject> ParseTupleSubject(std::string_view rest, size_t max_value_bytes);

// A message's "Nats-Sequence" header: a positive decimal.
Result<uint64_t> ParseSequence(std::string_view text);

// A message's "Nats-Time-Stamp" header (RFC 3339, UTC, up to nanoseconds: when the server stored
// it), as nanoseconds since the epoch.
Result<int64_t> ParseTimeStamp(std::string_view text);

// SHA-256 of `size` bytes, as 64 lowercase hex digits.
std::string Sha256Hex(const void* data, size_t size);

// The Acan-Chunks header of a value of `size` bytes: the value's SHA-256, which binds its chunks
// to the tuple that names them (only the tuple's writer could write its header: a chunk written
// by anyone else, or changed, does not hash to it), who wrote the chunks and under which id
// (their subjects are NatsLayout::ChunkSubject(namespace, writer, id, i)).
struct ChunkList {
  size_t count = 0;
  std::string sha256;  // 64 lowercase hex digits
  ChunkWriter writer = ChunkWriter::kManager;
  std::string id;
};
std::string FormatChunkList(const ChunkList& list);
// A header whose count cannot hold `size` bytes in chunks of at most `max_chunk_bytes` (the
// server's max_payload), or needs more chunks than bytes, whose digest is not 64 hex digits,
// whose writer is not m, h or f, or whose id is not one subject token, is refused.
Result<ChunkList> ParseChunkList(std::string_view header, size_t size, size_t max_chunk_bytes);

// What a reassembled value's failed digest check starts with (IsTampered in acan/space.h).
inline constexpr std::string_view kDigestMismatch = "tampered:";

// Reassembles a chunked value: Add each chunk in order, then Finish. Memory is reserved for the
// size the subject names only after ParseTupleSubject bounded it; a chunk that would overrun it
// is refused at once.
class ChunkAssembler {
 public:
  ChunkAssembler(const ChunkList& list, size_t size);
  Status Add(const void* data, size_t bytes);
  // The value, once every chunk came and its SHA-256 is the list's. A digest that differs is a
  // DataLoss whose message starts with kDigestMismatch.
  Result<Value> Finish();

 private:
  std::string sha256_;  // the list's digest of the whole value
  size_t size_;
  size_t added_ = 0;
  std::shared_ptr<std::vector<std::byte>> buffer_;
};

}  // namespace acan::nats::wire
