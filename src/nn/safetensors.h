// safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {}}
// and the tensor bytes. Only F32 is read or written. Every structural fault (short file, bad
// header length or JSON, wrong dtype, offsets out of range, overlapping or mis-sized tensors) is a
// DataLoss or InvalidArgument error naming the file, the tensor and the byte offsets. A file can
// also be written, and a hash taken, a piece at a time (SafetensorsWriter, Sha256), for models
// that do not fit in memory. The functions are stateless and thread-safe; a SafetensorsWriter or
// Sha256 object belongs to one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "acan/status.h"
#include "nn/tensor.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of this header

namespace acan::nn {

// Parses a whole safetensors image; `source` names it in error messages.
Result<TensorMap> ParseSafetensors(std::span<const uint8_t> bytes, std::string_view source);
Result<TensorMap> ReadSafetensors(const std::string& path);

// The file image: tensors in name order, header padded with spaces to a multiple of 8 bytes.
Result<std::string> SerializeSafetensors(const TensorMap& tensors);
// Writes to path + ".tmp" and renames, so a crash never leaves a half-written model.
Status WriteSafetensors(const std::string& path, const TensorMap& tensors);

// The shapes of F32 tensors by name; a file holds their data in this (name) order.
using TensorShapes = std::map<std::string, std::vector<int64_t>>;

// What precedes the data in a file of tensors shaped `shapes`: the 8-byte header length and the
// JSON header, padded with spaces to a multiple of 8 bytes. SerializeSafetensors begins with it.
std::string SafetensorsHeader(const TensorShapes& shapes);

// Writes a safetensors file whose data arrives in pieces, so that no tensor need be whole in
// memory. The bytes are those of WriteSafetensors for the same tensors. They go to path + ".tmp",
// renamed to path by Finish, so a crash or an error leaves no half-written model at path; a writer
// destroyed before Finish has succeeded removes its temporary file.
class SafetensorsWriter {
 public:
  // Creates path + ".tmp" and writes the header of `shapes` to it.
  static Result<std::unique_ptr<SafetensorsWriter>> Create(const std::string& path,
                                                           const TensorShapes& shapes);
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // Appends the next values of the data: every tensor's values in name order, cut anywhere.
  Status Append(std::span<const float> values);
  // Or writes `values` at byte `data_offset` of the data (0: the first tensor's first value), in
  // any order: a file filled a block of rows at a time. A writer takes Append or WriteAt, not
  // both; the caller writes every byte once (Finish checks the count).
  Status WriteAt(uint64_t data_offset, std::span<const float> values);
  // Closes the temporary file and renames it to path.
  // REQUIRES: all the values of every tensor have been appended.
  Status Finish();

 private:
  SafetensorsWriter(std::string path, uint64_t data_bytes);

  std::string path_, tmp_;
  std::ofstream out_;
  uint64_t remaining_;  // data bytes the header announces and not yet written
  uint64_t header_bytes_ = 0;
  uint64_t data_bytes_;  // all that the header announces
  bool appended_ = false, placed_ = false;
  bool created_ = false;  // tmp_ is ours to remove
  bool renamed_ = false;
};

// SHA-256 of bytes fed in order: the incremental form of the hashes below (FloatsSha256 of some
// spans equals the Hex of a Sha256 that was given the same spans, in any cutting).
class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t bytes);
  void Update(std::span<const float> values) { Update(values.data(), values.size_bytes()); }
  // Lowercase hex of the digest. Call it once, last.
  std::string Hex();

 private:
  struct Free {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, Free> ctx_;
};

// SHA-256 (lowercase hex) of the tensors' float32 little-endian bytes, concatenated in name order
// (std::string's < on the names); names and shapes are not hashed.
std::string TensorsSha256(const TensorMap& tensors);
// SHA-256 (hex) of the bytes of `parts`, one after the other.
std::string FloatsSha256(std::initializer_list<std::span<const float>> parts);
// SHA-256 (hex) of `bytes`.
std::string BytesSha256(std::string_view bytes);

}  // namespace acan::nn
