// NatsSpace: values larger than a message, as chunks bound to their tuple by a SHA-256 digest
// (nats_space.h, wire.h).
#include <fmt/format.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <random>

#include "common/kill_point.h"
#include "space/nats/nats_space.h"
#include "space/nats/nats_space_internal.h"

namespace acan::nats {

namespace {

// A chunked value's id: 128 random bits, so that nobody can write a chunk of a value before its
// writer does (an id guessed from an earlier one would let a chunk be there first).
std::string NewChunkId() {
  unsigned char raw[16];
  if (RAND_bytes(raw, sizeof raw) != 1) {
    std::random_device rd;
    for (unsigned char& c : raw) c = static_cast<unsigned char>(rd());
  }
  std::string hex;
  for (unsigned char c : raw) hex += fmt::format("{:02x}", c);
  return hex;
}

// A message's sequence (its Nats-Sequence header), or none.
std::optional<uint64_t> SequenceOf(natsMsg* msg) {
  const char* text = nullptr;
  natsMsgHeader_Get(msg, "Nats-Sequence", &text);
  auto seq = wire::ParseSequence(text ? text : "");
  return seq.ok() ? std::optional<uint64_t>(*seq) : std::nullopt;
}

}  // namespace

Status NatsSpace::FirstOn(const std::string& stream, const std::string& subject, Deadline deadline,
                          natsMsg** msg, natsStatus* result) const {
  jsDirectGetMsgOptions dg;
  jsDirectGetMsgOptions_Init(&dg);
  dg.Sequence = 1;
  dg.NextBySubject = subject.c_str();
  return DirectGet(stream, &dg, deadline, msg, result);
}

Result<std::string> NatsSpace::PutChunks(const Key& key, const Value& value, Deadline deadline) {
  const std::string_view ns = NatsLayout::NamespaceOf(key);
  wire::ChunkList list;
  list.writer = WriterOf(key);
  list.id = NewChunkId();
  list.count = (value.size() + chunk_bytes_ - 1) / chunk_bytes_;
#ifdef ACAN_BENCH_SKIP_DIGEST
  list.sha256 = std::string(64, '0');  // a benchmark's build only (bench/digest_overhead.sh)
#else
  list.sha256 = wire::Sha256Hex(value.data(), value.size());
#endif
  for (size_t i = 0; i < list.count; ++i) {
    const size_t offset = i * chunk_bytes_;
    ACAN_RETURN_IF_ERROR(Publish(layout_.ChunkSubject(ns, list.writer, list.id, i),
                                 value.data() + offset,
                                 std::min(chunk_bytes_, value.size() - offset), nullptr, deadline,
                                 nullptr, nullptr, nullptr, ns));
    if (i + 1 < list.count) KillPoint("chunk");
  }
  return wire::FormatChunkList(list);
}

Result<Value> NatsSpace::LoadValue(const Head& head, Deadline deadline,
                                   std::vector<uint64_t>* chunk_seqs) {
  if (head.chunks.empty()) return head.value;
  // Any writer's chunks, whatever its chunk_bytes, are at most a message of the server's.
  auto list = wire::ParseChunkList(head.chunks, head.size, max_payload_);
  if (list.ok() && head.store.fenced != (list->writer == ChunkWriter::kFenced)) {
    list = Status::DataLoss(fmt::format("chunks of writer '{}' for a {} tuple",
                                        ChunkWriterToken(list->writer),
                                        head.store.fenced ? "fenced" : "plain"));
  }
  if (!list.ok()) {
    return Status::DataLoss(
        fmt::format("space '{}': tuple '{}': {}", uri_, head.key.str(), list.status().message()));
  }
  const std::string stream =
      layout_.StreamName(NatsLayout::ChunkStream(list->writer), head.store.ns);
  wire::ChunkAssembler value(*list, head.size);
  for (size_t i = 0; i < list->count; ++i) {
    // The first message on the chunk's subject: its writer's. One written there later (by
    // someone who may write chunks of that writer's kind) is not read.
    const std::string subject = layout_.ChunkSubject(head.store.ns, list->writer, list->id, i);
    MsgGuard got;
    natsStatus result = NATS_OK;
    ACAN_RETURN_IF_ERROR(FirstOn(stream, subject, deadline, &got.msg, &result));
    if (result != NATS_OK) {
      return Status::DataLoss(fmt::format(
          "space '{}': tuple '{}' is missing chunk {} of {} ({}): the value is torn, not returned",
          uri_, head.key.str(), i, list->count, NatsError(result, 0)));
    }
    if (chunk_seqs != nullptr) {
      if (auto seq = SequenceOf(got.msg)) chunk_seqs->push_back(*seq);
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
    const std::string what = fmt::format(
        "space '{}': tuple '{}' (chunks {}): {}", uri_, head.key.str(),
        layout_.ChunkFilter(head.store.ns, list->writer, list->id), out.status().message());
    if (out.status().message().starts_with(wire::kDigestMismatch)) {
      tampered_.fetch_add(1);
      spdlog::error("{}; the value is refused", what);
    }
    return Status::DataLoss(what + "; the value is not returned");
  }
  return out;
}

void NatsSpace::RemoveChunks(std::string_view ns, const wire::ChunkList& list,
                             std::vector<uint64_t> seqs) {
  const std::string stream = layout_.StreamName(NatsLayout::ChunkStream(list.writer), ns);
  if (MayManage()) {
    (void)PurgeSubjects(stream, layout_.ChunkFilter(ns, list.writer, list.id), 0,
                        "removing chunks");
    return;
  }
  // A handler may delete in its job's chunks stream, never purge; fenced values' chunks are a
  // manager's to remove.
  if (options_.role != "handler" || list.writer == ChunkWriter::kFenced) return;
  if (seqs.empty()) {
    for (size_t i = 0; i < list.count; ++i) {
      MsgGuard got;
      natsStatus result = NATS_OK;
      if (!FirstOn(stream, layout_.ChunkSubject(ns, list.writer, list.id, i), NonBlocking(),
                   &got.msg, &result)
               .ok() ||
          result != NATS_OK) {
        continue;
      }
      if (auto seq = SequenceOf(got.msg)) seqs.push_back(*seq);
    }
  }
  for (uint64_t seq : seqs) {
    (void)Retry("removing chunks", NonBlocking(), [&] {
      jsOptions jo;
      jsOptions_Init(&jo);
      jo.Wait = options_.request_ms;
      jsErrCode jerr = static_cast<jsErrCode>(0);
      return js_DeleteMsg(js_, stream.c_str(), seq, &jo, &jerr);
    });
  }
}

void NatsSpace::RemoveChunks(const Head& head, std::vector<uint64_t> seqs) {
  if (head.chunks.empty()) return;
  auto list = wire::ParseChunkList(head.chunks, head.size, max_payload_);
  if (list.ok()) RemoveChunks(head.store.ns, *list, std::move(seqs));
}

}  // namespace acan::nats
