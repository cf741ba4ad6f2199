#include "space/nats/wire.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace acan::nats::wire {

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

Result<int64_t> ParseTimeStamp(std::string_view text) {
  auto bad = [&] { return Status::DataLoss(fmt::format("no time stamp ('{}')", text)); };
  // YYYY-MM-DDTHH:MM:SS[.fraction]Z
  if (text.size() < 20 || text.back() != 'Z' || text[4] != '-' || text[7] != '-' ||
      text[10] != 'T' || text[13] != ':' || text[16] != ':') {
    return bad();
  }
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!ParseDecimal(text.substr(0, 4), &year) || !ParseDecimal(text.substr(5, 2), &month) ||
      !ParseDecimal(text.substr(8, 2), &day) || !ParseDecimal(text.substr(11, 2), &hour) ||
      !ParseDecimal(text.substr(14, 2), &minute) || !ParseDecimal(text.substr(17, 2), &second) ||
      month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return bad();
  }
  int64_t nanos = 0;
  std::string_view fraction = text.substr(19, text.size() - 20);
  if (!fraction.empty()) {
    if (fraction[0] != '.' || fraction.size() < 2 || fraction.size() > 10) return bad();
    fraction.remove_prefix(1);
    if (!ParseDecimal(fraction, &nanos)) return bad();
    for (size_t i = fraction.size(); i < 9; ++i) nanos *= 10;
  }
  // Days since the epoch of a civil date (Howard Hinnant's days_from_civil).
  const int y = year - (month <= 2);
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = int64_t{era} * 146097 + int64_t(doe) - 719468;
  return ((days * 24 + hour) * 60 + minute) * 60 * int64_t{1000000000} +
         int64_t{second} * 1000000000 + nanos;
}

Result<uint64_t> ParseSequence(std::string_view text) {
  uint64_t seq = 0;
  if (!ParseDecimal(text, &seq) || seq == 0) {
    return Status::DataLoss(fmt::format("no sequence ('{}')", text));
  }
  return seq;
}

std::string Sha256Hex(const void* data, size_t size) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data, size, md, &n, EVP_sha256(), nullptr);
  std::string hex;
  hex.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

std::string FormatChunkList(const ChunkList& list) {
  return fmt::format("{} {} {} {}", list.count, list.sha256, ChunkWriterToken(list.writer),
                     list.id);
}

Result<ChunkList> ParseChunkList(std::string_view header, size_t size, size_t max_chunk_bytes) {
  auto bad = [&](std::string_view why) {
    return Status::DataLoss(fmt::format("bad chunk list '{}': {}", header, why));
  };
  ChunkList out;
  std::string_view field[4];
  std::string_view rest = header;
  for (int i = 0; i < 4; ++i) {
    const size_t space = i < 3 ? rest.find(' ') : std::string_view::npos;
    if (i < 3 && space == std::string_view::npos) {
      return bad("not '<count> <sha256> <writer> <id>'");
    }
    field[i] = rest.substr(0, space);
    if (i < 3) rest.remove_prefix(space + 1);
  }
  if (!ParseDecimal(field[0], &out.count)) return bad("the count is not a number");
  if (field[1].size() != 64 ||
      field[1].find_first_not_of("0123456789abcdef") != std::string_view::npos) {
    return bad("the digest is not 64 hex digits");
  }
  out.sha256 = std::string(field[1]);
  const std::optional<ChunkWriter> writer = ParseChunkWriter(field[2]);
  if (!writer) return bad("the writer is not m, h or f");
  out.writer = *writer;
  out.id = std::string(field[3]);
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
    : sha256_(list.sha256), size_(size), buffer_(std::make_shared<std::vector<std::byte>>()) {
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
  if (added_ != size_) {
    return Status::DataLoss(
        fmt::format("reassembled to {} bytes (expected {} bytes)", added_, size_));
  }
#ifdef ACAN_BENCH_SKIP_DIGEST
  // A benchmark's build only (bench/digest_overhead.sh): the check's cost measured by its absence.
  const std::string digest = sha256_;
#else
  const std::string digest = Sha256Hex(buffer_->data(), buffer_->size());
#endif
  if (digest != sha256_) {
    return Status::DataLoss(fmt::format(
        "{} its chunks hash to SHA-256 {}, not to the {} its tuple names: a chunk was written or "
        "changed by someone other than the tuple's writer",
        kDigestMismatch, digest.substr(0, 16), sha256_.substr(0, 16)));
  }
  return Value::Adopt(std::move(buffer_));
}

}  // namespace acan::nats::wire
