#include "space/nats/nats_layout.h"

#include <fmt/format.h>

namespace acan::nats {

namespace {

std::string_view KindTag(StreamKind kind) {
  switch (kind) {
    case StreamKind::kTuples:
      return "t";
    case StreamKind::kFenced:
      return "f";
    case StreamKind::kCells:
      return "r";
    case StreamKind::kChunks:
      return "c";
    case StreamKind::kFencedChunks:
      return "cf";
  }
  return "?";
}

}  // namespace

char ChunkWriterToken(ChunkWriter w) {
  switch (w) {
    case ChunkWriter::kManager:
      return 'm';
    case ChunkWriter::kHandler:
      return 'h';
    case ChunkWriter::kFenced:
      return 'f';
  }
  return '?';
}

std::optional<ChunkWriter> ParseChunkWriter(std::string_view token) {
  if (token == "m") return ChunkWriter::kManager;
  if (token == "h") return ChunkWriter::kHandler;
  if (token == "f") return ChunkWriter::kFenced;
  return std::nullopt;
}

NatsLayout::NatsLayout(std::string stream)
    : stream_(std::move(stream)),
      tuple_prefix_(stream_ + ".t."),
      fenced_prefix_(stream_ + ".f.t."),
      watch_prefix_(stream_ + ".w.t.") {}

std::optional<std::string> NatsLayout::NamespaceOf(const Pattern& pattern) {
  const std::string_view first = pattern.token(0);
  if (first == "*" || first == ">") return std::nullopt;
  return std::string(first);
}

std::string NatsLayout::StreamName(StreamKind kind, std::string_view ns) const {
  return fmt::format("{}_{}_{}", stream_, KindTag(kind), ns);
}

std::optional<std::string> NatsLayout::NamespaceOfStream(StreamKind kind,
                                                         std::string_view name) const {
  const std::string prefix = fmt::format("{}_{}_", stream_, KindTag(kind));
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return std::nullopt;
  return std::string(name.substr(prefix.size()));
}

std::vector<std::string> NatsLayout::StreamSubjects(StreamKind kind, std::string_view ns) const {
  // A key of one token is its namespace alone: "J" as well as "J.>".
  auto both = [&](const std::string& before) {
    return std::vector<std::string>{fmt::format("{}{}", before, ns),
                                    fmt::format("{}{}.>", before, ns)};
  };
  switch (kind) {
    case StreamKind::kTuples:
      return both(tuple_prefix_ + "*.");
    case StreamKind::kFenced: {
      std::vector<std::string> out = both(fenced_prefix_ + "*.");
      for (std::string& s : both(stream_ + ".f.r.")) out.push_back(std::move(s));
      return out;
    }
    case StreamKind::kCells:
      return both(stream_ + ".r.");
    case StreamKind::kChunks:
      return {ChunkWriterFilter(ns, ChunkWriter::kManager),
              ChunkWriterFilter(ns, ChunkWriter::kHandler)};
    case StreamKind::kFencedChunks:
      return {ChunkWriterFilter(ns, ChunkWriter::kFenced)};
  }
  return {};
}

std::string NatsLayout::TupleSubject(bool fenced, size_t size, const Key& key) const {
  return fmt::format("{}{}.{}", TuplePrefix(fenced), size, key.str());
}

std::string NatsLayout::TupleFilter(bool fenced, const Pattern& pattern) const {
  return fmt::format("{}*.{}", TuplePrefix(fenced), pattern.str());
}

std::string NatsLayout::CellSubject(bool fenced, const Key& key) const {
  return fmt::format("{}.{}.{}", stream_, fenced ? "f.r" : "r", key.str());
}

std::string NatsLayout::ChunkSubject(std::string_view ns, ChunkWriter writer, std::string_view id,
                                     size_t i) const {
  return fmt::format("{}.c.{}.{}.{}.{}", stream_, ns, ChunkWriterToken(writer), id, i);
}

std::string NatsLayout::ChunkFilter(std::string_view ns, ChunkWriter writer,
                                    std::string_view id) const {
  return fmt::format("{}.c.{}.{}.{}.>", stream_, ns, ChunkWriterToken(writer), id);
}

std::string NatsLayout::ChunkWriterFilter(std::string_view ns, ChunkWriter writer) const {
  return fmt::format("{}.c.{}.{}.>", stream_, ns, ChunkWriterToken(writer));
}

std::string NatsLayout::InboxPrefix(std::string_view ns, std::string_view role) const {
  return fmt::format("_ACAN.{}.{}.{}", stream_, ns, role);
}

}  // namespace acan::nats
