// What the NATS backend decodes from the server's messages (space/nats/wire.h): a tuple's
// subject, the Nats-Sequence and Nats-Time-Stamp headers, the Acan-Chunks header and the reassembly
// of the chunks it names. Property: a value reassembles only when its chunks hold exactly its bytes
// and hash to its SHA-256 digest.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>

#include "space/nats/wire.h"

using namespace acan::nats;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const size_t max_value = size_t{1} << in.ConsumeIntegralInRange<int>(0, 26);
  const size_t chunk_bytes = in.ConsumeIntegralInRange<size_t>(1, 1 << 20);
  const std::string subject = in.ConsumeRandomLengthString(256);
  const std::string sequence = in.ConsumeRandomLengthString(32);
  const std::string header = in.ConsumeRandomLengthString(256);
  (void)wire::ParseSequence(sequence);
  (void)wire::ParseTimeStamp(sequence);
  auto tuple = wire::ParseTupleSubject(subject, max_value);
  if (!tuple.ok()) return 0;
  if (tuple->size > max_value) std::abort();
  auto list = wire::ParseChunkList(header, tuple->size, chunk_bytes);
  if (!list.ok()) return 0;
  if (list->count == 0 || list->count > tuple->size) std::abort();
  wire::ChunkAssembler assembler(*list, tuple->size);
  size_t added = 0;
  for (size_t i = 0; i < list->count && in.remaining_bytes() > 0; ++i) {
    const std::string chunk = in.ConsumeRandomLengthString(chunk_bytes);
    if (!assembler.Add(chunk.data(), chunk.size()).ok()) return 0;
    added += chunk.size();
  }
  auto value = assembler.Finish();
  if (value.ok() && (value->size() != tuple->size || added != tuple->size ||
                     wire::Sha256Hex(value->data(), value->size()) != list->sha256)) {
    std::abort();
  }
  return 0;
}
