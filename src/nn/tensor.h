// Tensors as plain values: a shape and float32 data, row-major. A Buffer is the immutable, shared
// form in which a tensor travels between tasks (the tuple space and the reference trainer keep
// Buffers; a task's output std::vector<float> moves into one without a copy).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace acan::nn {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;

  int64_t NumElements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// Named tensors, ordered by name (the order of safetensors files and of weight hashes).
using TensorMap = std::map<std::string, Tensor>;

using Buffer = std::shared_ptr<const std::vector<float>>;

inline Buffer MakeBuffer(std::vector<float> v) {
  return std::make_shared<const std::vector<float>>(std::move(v));
}

}  // namespace acan::nn
