#include "nn/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/limits.h"

namespace acan::nn {
namespace {

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

}  // namespace

Result<std::vector<uint8_t>> ReadMaybeGzip(const std::string& path) {
  // A folder opens like a file, and gzread would call it corrupt gzip: the first read tells.
  std::FILE* probe = std::fopen(path.c_str(), "rb");
  if (probe == nullptr) {
    return Status::NotFound("cannot open \"" + path + "\" (" + std::strerror(errno) +
                            "); check the path");
  }
  const bool unreadable = std::fgetc(probe) == EOF && std::ferror(probe);
  const int error = errno;
  std::fclose(probe);
  if (unreadable && error == EISDIR) {
    return Status::InvalidArgument("\"" + path +
                                   "\" is a directory, not an IDX file; check the path");
  }
  if (unreadable) {
    return Status::DataLoss("cannot read \"" + path + "\" (" + std::strerror(error) + ")");
  }
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return Status::NotFound("cannot open \"" + path + "\"; check the path");
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  while (true) {
    const int n = gzread(f, buf, sizeof(buf));
    if (n < 0) {
      int errnum = 0;
      std::string msg = gzerror(f, &errnum);
      gzclose(f);
      return Status::DataLoss(path + ": gzip data is corrupt or truncated after " +
                              std::to_string(out.size()) + " decompressed bytes (" + msg + ")");
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > Limits().data_file_bytes) {
      gzclose(f);
      return Status::ResourceExhausted(
          path + " holds more than " + std::to_string(Limits().data_file_bytes) +
          " bytes (decompressed), over the limit for a data file (docs/operations.md, Limits)");
    }
    out.insert(out.end(), buf, buf + n);
  }
  int errnum = 0;
  const char* msg = gzerror(f, &errnum);
  if (errnum != Z_OK && errnum != Z_STREAM_END) {
    std::string m = msg;
    gzclose(f);
    return Status::DataLoss(path + ": gzip data is truncated after " + std::to_string(out.size()) +
                            " decompressed bytes (" + m + ")");
  }
  gzclose(f);
  return out;
}

Result<IdxArray> ParseIdx(std::span<const uint8_t> bytes, std::string_view source,
                          int expected_dims) {
  const std::string src(source);
  if (bytes.size() < 4) {
    return Status::DataLoss(src + ": " + std::to_string(bytes.size()) +
                            " bytes, too short for the 4-byte IDX magic (truncated?)");
  }
  const uint32_t magic = BigEndian32(bytes.data());
  const uint32_t want = 0x00000800u | static_cast<uint32_t>(expected_dims);
  if (magic != want) {
    return Status::InvalidArgument(
        src + ": byte 0: IDX magic is " + Hex32(magic) + ", expected " + Hex32(want) + " (" +
        (expected_dims == 3 ? "unsigned-byte images" : "unsigned-byte labels") +
        "); is this the right file, and is it IDX?");
  }
  const size_t header = 4 + 4 * static_cast<size_t>(expected_dims);
  if (bytes.size() < header) {
    return Status::DataLoss(src + ": truncated in the header: " + std::to_string(bytes.size()) +
                            " bytes, the dimensions need " + std::to_string(header));
  }
  IdxArray a;
  uint64_t total = 1;
  bool overflow = false;  // the product needs more than 64 bits: no file holds that much
  for (int i = 0; i < expected_dims; ++i) {
    const uint32_t d = BigEndian32(bytes.data() + 4 + 4 * i);
    a.dims.push_back(d);
    overflow = overflow || __builtin_mul_overflow(total, uint64_t{d}, &total);
  }
  if (overflow) {
    std::string dims;
    for (int64_t d : a.dims) dims += (dims.empty() ? "" : " x ") + std::to_string(d);
    return Status::DataLoss(src + ": bytes 4.." + std::to_string(header) + ": the dimensions " +
                            dims + " need more than 2^64 data bytes; the header is corrupt");
  }
  if (bytes.size() - header < total) {
    return Status::DataLoss(src + ": truncated: the dimensions need " + std::to_string(total) +
                            " data bytes from byte " + std::to_string(header) + " but only " +
                            std::to_string(bytes.size() - header) + " are there");
  }
  if (bytes.size() - header > total) {
    return Status::DataLoss(src + ": " + std::to_string(bytes.size() - header - total) +
                            " unexpected bytes after the data at byte " +
                            std::to_string(header + total));
  }
  a.data.assign(bytes.begin() + header, bytes.end());
  return a;
}

Result<Dataset> ReadIdxDataset(const std::string& images_path, const std::string& labels_path) {
  ACAN_ASSIGN_OR_RETURN(std::vector<uint8_t> ib, ReadMaybeGzip(images_path));
  ACAN_ASSIGN_OR_RETURN(IdxArray images, ParseIdx(ib, images_path, 3));
  ib.clear();
  ib.shrink_to_fit();
  ACAN_ASSIGN_OR_RETURN(std::vector<uint8_t> lb, ReadMaybeGzip(labels_path));
  ACAN_ASSIGN_OR_RETURN(IdxArray labels, ParseIdx(lb, labels_path, 1));
  if (images.dims[0] != labels.dims[0]) {
    return Status::InvalidArgument(
        images_path + " has " + std::to_string(images.dims[0]) + " images but " + labels_path +
        " has " + std::to_string(labels.dims[0]) + " labels; use files of the same set");
  }
  Dataset d;
  d.rows = images.dims[0];
  d.features = images.dims[1] * images.dims[2];
  d.classification = true;
  d.target_width = 1;
  d.x.resize(images.data.size());
  for (size_t i = 0; i < images.data.size(); ++i) d.x[i] = images.data[i];
  d.y.assign(labels.data.begin(), labels.data.end());
  const uint8_t max_label =
      labels.data.empty() ? 0 : *std::max_element(labels.data.begin(), labels.data.end());
  d.classes = max_label + 1;
  return d;
}

Result<Dataset> LoadFashionMnist(std::string_view dir, bool train) {
  const std::string prefix = std::string(dir) + (train ? "/train" : "/t10k");
  Result<Dataset> d =
      ReadIdxDataset(prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz");
  if (!d.ok() && d.status().IsNotFound()) {
    return Status::NotFound(d.status().message() +
                            " (install the Debian package dataset-fashion-mnist)");
  }
  return d;
}

}  // namespace acan::nn
