// Where the NATS backend keeps each part of the space: the one place that builds (and parses
// back) every stream name, subject and inbox prefix it uses; the secure deployment's
// permissions (secure.cc) are made from the same builders, so the two cannot drift apart.
//
// A key's first token is its namespace: a job's id (runtime/core/layout.h). Each namespace J has
// streams of its own, so that one job's permissions (a delete names a stream, not a subject)
// reach that job only. With the stream prefix S (the URI's stream=, "acan" by default):
//
// clang-format off
//   S_t_J   tuples                       S.t.<size>.<key>
//   S_f_J   fenced tuples and cells      S.f.t.<size>.<key>, S.f.r.<key>; what it stores is
//           (SpaceOptions::fenced)       republished on S.w.t.<size>.<key> (WatchPuts)
//   S_r_J   cells                        S.r.<key>: one message a subject, no deletes or purges
//   S_c_J   chunks of plain values       S.c.J.m.<id>.<i> (written by a manager, or a client
//                                        with no role), S.c.J.h.<id>.<i> (written by a handler)
//   S_cf_J  chunks of fenced values      S.c.J.f.<id>.<i> (only a manager writes fenced values)
// clang-format on
//
// A secure client's replies come to _ACAN.S.J.<role>.<unique>, an inbox prefix that only its
// role may subscribe to. Immutable; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acan/key.h"

namespace acan::nats {

enum class StreamKind { kTuples, kFenced, kCells, kChunks, kFencedChunks };
inline constexpr StreamKind kStreamKinds[] = {StreamKind::kTuples, StreamKind::kFenced,
                                              StreamKind::kCells, StreamKind::kChunks,
                                              StreamKind::kFencedChunks};

// Who wrote a chunked value, as its chunks' subjects say: the token after the namespace.
enum class ChunkWriter { kManager, kHandler, kFenced };
char ChunkWriterToken(ChunkWriter w);
std::optional<ChunkWriter> ParseChunkWriter(std::string_view token);

class NatsLayout {
 public:
  // REQUIRES: `stream` is 1-64 of [A-Za-z0-9_-] (checked where the URI is read).
  explicit NatsLayout(std::string stream);
  const std::string& stream() const { return stream_; }

  // The namespace of a key: its first token.
  static std::string_view NamespaceOf(const Key& key) { return key.token(0); }
  // The namespace a pattern stays in: its first token when it is no wildcard, else none.
  static std::optional<std::string> NamespaceOf(const Pattern& pattern);

  std::string StreamName(StreamKind kind, std::string_view ns) const;
  // The subjects stream `kind` of namespace `ns` holds.
  std::vector<std::string> StreamSubjects(StreamKind kind, std::string_view ns) const;
  // The namespace whose stream of `kind` is `name`, or none (another prefix's, or another kind).
  std::optional<std::string> NamespaceOfStream(StreamKind kind, std::string_view name) const;

  // Tuples: <prefix><size>.<key>, prefix S.t. or (fenced) S.f.t.
  std::string TuplePrefix(bool fenced) const { return fenced ? fenced_prefix_ : tuple_prefix_; }
  // Where WatchPuts sees what was stored: S.t. or (fenced) S.w.t.
  std::string WatchPrefix(bool fenced) const { return fenced ? watch_prefix_ : tuple_prefix_; }
  std::string TupleSubject(bool fenced, size_t size, const Key& key) const;
  std::string TupleFilter(bool fenced, const Pattern& pattern) const;
  std::string CellSubject(bool fenced, const Key& key) const;
  // The subjects the fenced stream republishes (source) and where (destination).
  std::string RepublishSource() const { return fenced_prefix_ + ">"; }
  std::string RepublishDestination() const { return watch_prefix_ + ">"; }

  // Chunk i of value `id` in namespace `ns`: S.c.<ns>.<writer>.<id>.<i>.
  std::string ChunkSubject(std::string_view ns, ChunkWriter writer, std::string_view id,
                           size_t i) const;
  // Every chunk of value `id`.
  std::string ChunkFilter(std::string_view ns, ChunkWriter writer, std::string_view id) const;
  // Every chunk a writer of `writer`'s kind may write in namespace `ns`.
  std::string ChunkWriterFilter(std::string_view ns, ChunkWriter writer) const;
  static StreamKind ChunkStream(ChunkWriter writer) {
    return writer == ChunkWriter::kFenced ? StreamKind::kFencedChunks : StreamKind::kChunks;
  }

  // The inbox prefix of a secure client of `role` in namespace `ns`.
  std::string InboxPrefix(std::string_view ns, std::string_view role) const;

 private:
  std::string stream_;
  std::string tuple_prefix_;   // S.t.
  std::string fenced_prefix_;  // S.f.t.
  std::string watch_prefix_;   // S.w.t.
};

}  // namespace acan::nats
