// safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {}}
// and the tensor bytes. Only F32 is read or written. Every structural fault (short file, bad
// header length or JSON, wrong dtype, offsets out of range, overlapping or mis-sized tensors) is a
// DataLoss or InvalidArgument error naming the file, the tensor and the byte offsets.
// Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "acan/status.h"
#include "nn/tensor.h"

namespace acan::nn {

// Parses a whole safetensors image; `source` names it in error messages.
Result<TensorMap> ParseSafetensors(std::span<const uint8_t> bytes, std::string_view source);
Result<TensorMap> ReadSafetensors(const std::string& path);

// The file image: tensors in name order, header padded with spaces to a multiple of 8 bytes.
Result<std::string> SerializeSafetensors(const TensorMap& tensors);
// Writes to path + ".tmp" and renames, so a crash never leaves a half-written model.
Status WriteSafetensors(const std::string& path, const TensorMap& tensors);

// SHA-256 (lowercase hex) of the tensors' float32 little-endian bytes, concatenated in name order
// (std::string's < on the names); names and shapes are not hashed.
std::string TensorsSha256(const TensorMap& tensors);
// SHA-256 (hex) of the bytes of `parts`, one after the other.
std::string FloatsSha256(std::initializer_list<std::span<const float>> parts);
// SHA-256 (hex) of `bytes`.
std::string BytesSha256(std::string_view bytes);

}  // namespace acan::nn
