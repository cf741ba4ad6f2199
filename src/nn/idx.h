// IDX files (the MNIST format), gzip-compressed or plain: a big-endian magic 0x0000TTNN (type TT,
// NN dimensions), NN big-endian uint32 sizes, then the data. Only unsigned bytes (type 0x08) are
// read: images have magic 0x00000803, labels 0x00000801. Wrong magic, truncated files and
// mismatched counts are errors naming the file and the byte offset. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "acan/status.h"
#include "nn/dataset.h"

namespace acan::nn {

inline constexpr std::string_view kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// Fashion-MNIST's class names, by label.
inline constexpr std::string_view kFashionMnistClasses[10] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // prod(dims) bytes
};

// The whole file, decompressed when it is gzip (detected by its magic, not its name).
Result<std::vector<uint8_t>> ReadMaybeGzip(const std::string& path);
// Parses an IDX image; `expected_dims` is 3 for images and 1 for labels.
Result<IdxArray> ParseIdx(std::span<const uint8_t> bytes, std::string_view source,
                          int expected_dims);

// Images as stored (pixel bytes 0..255 as floats; LoadDataset applies data.scale), one row per
// image; labels as class numbers.
Result<Dataset> ReadIdxDataset(const std::string& images_path, const std::string& labels_path);
// The Debian dataset-fashion-mnist package: train-*.gz (train) or t10k-*.gz files under `dir`.
Result<Dataset> LoadFashionMnist(std::string_view dir, bool train);

}  // namespace acan::nn
