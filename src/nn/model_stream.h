// Work on a model too big for the memory at hand: hashing it, saving it and evaluating it while
// holding only a band of a tensor's rows at a time. The weights come from a BandReader (a
// safetensors file read by offset, a tuple space, another process), never as a whole tensor, so
// a 4096 x 4096 layer (64 MiB) passes through a process with a budget of a few MiB. Each result
// equals its in-memory counterpart in model.h and evaluate.h.
// Stateless functions; thread-safe when the reader is.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"
#include "nn/dataset.h"
#include "nn/evaluate.h"

namespace acan::nn {

// Rows [r0, r1) of layer `layer`'s weight (its shape is [widths[layer+1], widths[layer]], so
// (r1 - r0) * widths[layer] floats, row-major) or, with bias, of its bias ((r1 - r0) floats).
// The functions below ask for at most band_rows rows a call, and a bias in the bands of its
// weight. An error is returned to their caller, with what was being read prefixed.
using BandReader =
    std::function<Result<std::vector<float>>(int layer, bool bias, int64_t r0, int64_t r1)>;

// ModelSha256 (model.h) of the model whose layer widths are `widths`, read from `read` in bands
// of at most band_rows rows.
Result<std::string> StreamedModelSha256(const std::vector<int64_t>& widths, const BandReader& read,
                                        int64_t band_rows);

// Writes `path` byte for byte as SaveModel would, band by band, through path + ".tmp" renamed at
// the end: an error or a crash leaves no file at path. Errors name the path.
Status SaveModelStreamed(const std::string& path, const std::vector<int64_t>& widths,
                         const BandReader& read, int64_t band_rows);

// A block of one tensor of the model: rows [r0, r1) and columns [c0, c1) of layer `layer`'s
// weight, or of its bias (columns [0, 1)); a tiles plan's shards are such blocks.
struct ModelBlock {
  int layer = 0;
  bool bias = false;
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
};
// A block's values, row-major: (r1 - r0) x (c1 - c0) floats.
using BlockReader = std::function<Result<std::vector<float>>(const ModelBlock& block)>;

// Writes `path` as SaveModelStreamed does, but reads each of `blocks` once, in their order, and
// writes its rows where they belong in the file: one block held at a time, and each read once,
// where a band crossing a block reads it again for every band (a tile 888 rows tall read in bands
// of 64 rows is read 14 times). The blocks must not overlap (a plan's shards do not) and must cover
// every tensor: a block out of bounds, or a tensor whose blocks do not add up to it, is
// InvalidArgument and leaves nothing at path.
Status SaveModelBlocks(const std::string& path, const std::vector<int64_t>& widths,
                       std::span<const ModelBlock> blocks, const BlockReader& read);

// The rows of the model file at `path` (as SaveModel writes a model whose layer widths are
// `widths`; its header is checked against them), read by offset as a BandReader asks for them:
// only the band asked for is held. The reader belongs to one thread at a time.
Result<BandReader> ModelFileRows(const std::string& path, const std::vector<int64_t>& widths);

// Evaluate (evaluate.h) with the data's rows taken group_rows at a time and each layer's weight
// read band_rows rows (output units) at a time: out[:, band] = act x W_band^T + b_band. Holds
// about group_rows x (widest layer) x 2 floats plus one band, and reads the whole model once per
// group. The report is Evaluate's up to float rounding of the outputs: bitwise the same when a
// band holds a whole layer and group_rows == kEvalChunkRows; otherwise the loss can differ in its
// last bits (OpenBLAS adds an output's products in an order that depends on the shape of the
// product), and an accuracy only where two outputs tie to within that rounding.
Result<EvalReport> EvaluateStreamed(const std::vector<int64_t>& widths, const Dataset& data,
                                    const JobConfig& job, const BandReader& read, int64_t band_rows,
                                    int64_t group_rows);

}  // namespace acan::nn
