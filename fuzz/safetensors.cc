// Model files (.safetensors): ParseSafetensors on any bytes, header and data. Property: what
// parses serializes to a file that parses to the same tensors.
#include "nn/safetensors.h"

#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tensors =
      acan::nn::ParseSafetensors(std::span<const uint8_t>(data, size), "fuzz.safetensors");
  if (!tensors.ok()) return 0;
  auto bytes = acan::nn::SerializeSafetensors(*tensors);
  if (!bytes.ok()) return 0;  // e.g. a tensor name the writer refuses
  auto again = acan::nn::ParseSafetensors(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()),
      "again.safetensors");
  if (!again.ok() || acan::nn::TensorsSha256(*again) != acan::nn::TensorsSha256(*tensors)) {
    std::abort();
  }
  return 0;
}
