#include "space/nats/wire.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace acan::nats::wire {

uint32_t Crc32(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const Bytef*>(data);
  while (size > 0) {
    auto n = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    crc = static_cast<uint32_t>(crc32(crc, p, n));
    p += n;
    size -= n;
  }
  return crc;
}

namespace {

// A whole decimal token, nothing before or after it.
template <typename T>
bool ParseDecimal(std::string_view text, T* out) {
  if (text.empty() || text.size() > 20) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

Result<TupleSubject> ParseTupleSubject(std::string_view rest, size_t max_value_bytes) {
  const size_t dot = rest.find('.');
  TupleSubject out;
  if (dot == std::string_view::npos || !ParseDecimal(rest.substr(0, dot), &out.size)) {
    return Status::DataLoss(fmt::format("subject '{}' has no size token", rest));
  }
  if (out.size > max_value_bytes) {
    return Status::DataLoss(fmt::format("subject '{}' claims {} bytes, over max_value_bytes {}",
                                        rest, out.size, max_value_bytes));
  }
  auto key = Key::Parse(rest.substr(dot + 1));
  if (!key.ok()) return Status::DataLoss(std::string(key.status().message()));
  out.key = std::move(key).value();
  return out;
}

Result<uint64_t> ParseSequence(std::string_view text) {
  uint64_t seq = 0;
  if (!ParseDecimal(text, &seq) || seq == 0) {
    return Status::DataLoss(fmt::format("no sequence ('{}')", text));
  }
  return seq;
}

Result<ChunkList> ParseChunkList(std::string_view header, size_t size, size_t max_chunk_bytes) {
  auto bad = [&](std::string_view why) {
    return Status::DataLoss(fmt::format("bad chunk list '{}': {}", header, why));
  };
  ChunkList out;
  const size_t a = header.find(' ');
  const size_t b = a == std::string_view::npos ? a : header.find(' ', a + 1);
  if (b == std::string_view::npos) return bad("not '<count> <crc32> <id>'");
  if (!ParseDecimal(header.substr(0, a), &out.count) ||
      !ParseDecimal(header.substr(a + 1, b - a - 1), &out.crc)) {
    return bad("count or checksum is not a number");
  }
  out.id = std::string(header.substr(b + 1));
  if (out.id.empty() || out.id.size() > 127 ||
      out.id.find_first_of(" .*>\t\r\n") != std::string::npos) {
    return bad("the id is not one subject token");
  }
  if (out.count == 0 || out.count > size || max_chunk_bytes == 0 ||
      out.count < (size + max_chunk_bytes - 1) / max_chunk_bytes) {
    return bad(fmt::format("{} chunks cannot hold {} bytes", out.count, size));
  }
  return out;
}

ChunkAssembler::ChunkAssembler(const ChunkList& list, size_t size)
    : crc_(list.crc), size_(size), buffer_(std::make_shared<std::vector<std::byte>>()) {
  buffer_->reserve(size);
}

Status ChunkAssembler::Add(const void* data, size_t bytes) {
  if (bytes > size_ - added_) {
    return Status::DataLoss(fmt::format("chunks overrun the value's {} bytes", size_));
  }
  const auto* p = static_cast<const std::byte*>(data);
  buffer_->insert(buffer_->end(), p, p + bytes);
  added_ += bytes;
  return Status::Ok();
}

Result<Value> ChunkAssembler::Finish() {
  if (added_ != size_ || Crc32(buffer_->data(), buffer_->size()) != crc_) {
    return Status::DataLoss(fmt::format(
        "reassembled to {} bytes with a bad checksum (expected {} bytes)", added_, size_));
  }
  return Value::Adopt(std::move(buffer_));
}

}  // namespace acan::nats::wire
