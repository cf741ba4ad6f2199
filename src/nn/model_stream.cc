#include "nn/model_stream.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <span>

#include "nn/kernels.h"
#include "nn/model.h"
#include "nn/safetensors.h"

namespace acan::nn {
namespace {

// One tensor of the model, as a BandReader addresses it.
struct Part {
  int layer = 0;
  bool bias = false;
  int64_t rows = 0;
  int64_t cols = 0;  // 1 for a bias
};

Part WeightPart(const std::vector<int64_t>& widths, int layer) {
  return {layer, false, widths[layer + 1], widths[layer]};
}
Part BiasPart(const std::vector<int64_t>& widths, int layer) {
  return {layer, true, widths[layer + 1], 1};
}

// The model's tensors by name: the order in which ModelSha256 hashes them and SaveModel writes
// them ("layers.10.bias" comes before "layers.2.bias").
std::map<std::string, Part> PartsByName(const std::vector<int64_t>& widths) {
  std::map<std::string, Part> parts;
  for (int l = 0; l + 1 < static_cast<int>(widths.size()); ++l) {
    parts.emplace(WeightName(l), WeightPart(widths, l));
    parts.emplace(BiasName(l), BiasPart(widths, l));
  }
  return parts;
}

Status CheckArguments(const std::vector<int64_t>& widths, int64_t band_rows) {
  if (widths.size() < 2) {
    return Status::InvalidArgument("a model needs at least two widths (input, output), got " +
                                   std::to_string(widths.size()));
  }
  for (size_t i = 0; i < widths.size(); ++i) {
    if (widths[i] < 0) {
      return Status::InvalidArgument("width " + std::to_string(i) + " of the model is " +
                                     std::to_string(widths[i]) + "; widths must be >= 0");
    }
  }
  if (band_rows < 1) {
    return Status::InvalidArgument("band_rows is " + std::to_string(band_rows) +
                                   "; a band needs at least one row");
  }
  return Status::Ok();
}

TensorShapes ShapesOf(const std::map<std::string, Part>& parts) {
  TensorShapes shapes;
  for (const auto& [name, part] : parts) {
    shapes[name] =
        part.bias ? std::vector<int64_t>{part.rows} : std::vector<int64_t>{part.rows, part.cols};
  }
  return shapes;
}

// Where each tensor's values begin in the data of a file (name order), in values.
std::map<std::string, int64_t> DataOffsets(const std::map<std::string, Part>& parts) {
  std::map<std::string, int64_t> offsets;
  int64_t at = 0;
  for (const auto& [name, part] : parts) {
    offsets[name] = at;
    at += part.rows * part.cols;
  }
  return offsets;
}

// Rows [r0, r1) of the tensor `name`, checked to hold as many values as were asked for: a reader
// that returns a short band would otherwise shift every value after it.
Result<std::vector<float>> ReadBand(const BandReader& read, const std::string& name,
                                    const Part& part, int64_t r0, int64_t r1) {
  const std::string what =
      "reading " + name + " rows [" + std::to_string(r0) + ", " + std::to_string(r1) + ")";
  Result<std::vector<float>> band = read(part.layer, part.bias, r0, r1);
  if (!band.ok()) return band.status().WithContext(what);
  const int64_t want = (r1 - r0) * part.cols;
  if (static_cast<int64_t>(band->size()) != want) {
    return Status::DataLoss(what + ": the reader returned " + std::to_string(band->size()) +
                            " values, not " + std::to_string(want));
  }
  return band;
}

// Hands `use` every band of every tensor, tensors in name order and bands in row order.
Status ForEachBand(const std::vector<int64_t>& widths, const BandReader& read, int64_t band_rows,
                   const std::function<Status(std::span<const float>)>& use) {
  for (const auto& [name, part] : PartsByName(widths)) {
    for (int64_t r0 = 0; r0 < part.rows; r0 += band_rows) {
      const int64_t r1 = std::min(part.rows, r0 + band_rows);
      ACAN_ASSIGN_OR_RETURN(std::vector<float> band, ReadBand(read, name, part, r0, r1));
      ACAN_RETURN_IF_ERROR(use(band));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> StreamedModelSha256(const std::vector<int64_t>& widths, const BandReader& read,
                                        int64_t band_rows) {
  ACAN_RETURN_IF_ERROR(CheckArguments(widths, band_rows));
  Sha256 sha;
  ACAN_RETURN_IF_ERROR(ForEachBand(widths, read, band_rows, [&](std::span<const float> band) {
    sha.Update(band);
    return Status::Ok();
  }));
  return sha.Hex();
}

Status SaveModelStreamed(const std::string& path, const std::vector<int64_t>& widths,
                         const BandReader& read, int64_t band_rows) {
  const std::string context = "saving model \"" + path + "\"";
  ACAN_RETURN_IF_ERROR(CheckArguments(widths, band_rows).WithContext(context));
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsWriter> writer,
                        SafetensorsWriter::Create(path, ShapesOf(PartsByName(widths))));
  // On an error the writer, going out of scope unfinished, removes its temporary file.
  ACAN_RETURN_IF_ERROR(ForEachBand(widths, read, band_rows, [&](std::span<const float> band) {
                         return writer->Append(band);
                       }).WithContext(context));
  return writer->Finish();
}

Status SaveModelBlocks(const std::string& path, const std::vector<int64_t>& widths,
                       std::span<const ModelBlock> blocks, const BlockReader& read) {
  const std::string context = "saving model \"" + path + "\"";
  ACAN_RETURN_IF_ERROR(CheckArguments(widths, 1).WithContext(context));
  const std::map<std::string, Part> parts = PartsByName(widths);
  const std::map<std::string, int64_t> offsets = DataOffsets(parts);
  // Checked before anything is read or written: each block inside its tensor, and each tensor's
  // blocks adding up to it.
  std::map<std::string, int64_t> covered;
  for (const ModelBlock& b : blocks) {
    const std::string name = b.bias ? BiasName(b.layer) : WeightName(b.layer);
    auto part = parts.find(name);
    if (part == parts.end() || b.r0 < 0 || b.r0 >= b.r1 || b.r1 > part->second.rows || b.c0 < 0 ||
        b.c0 >= b.c1 || b.c1 > part->second.cols) {
      return Status::InvalidArgument(fmt::format(
          "{}: the block rows [{}, {}) columns [{}, {}) of layer {}'s {} is not inside it", context,
          b.r0, b.r1, b.c0, b.c1, b.layer, b.bias ? "bias" : "weight"));
    }
    covered[name] += (b.r1 - b.r0) * (b.c1 - b.c0);
  }
  for (const auto& [name, part] : parts) {
    if (covered[name] != part.rows * part.cols) {
      return Status::InvalidArgument(fmt::format("{}: the blocks of {} hold {} values, not its {}",
                                                 context, name, covered[name],
                                                 part.rows * part.cols));
    }
  }
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsWriter> writer,
                        SafetensorsWriter::Create(path, ShapesOf(parts)));
  for (const ModelBlock& b : blocks) {
    const std::string name = b.bias ? BiasName(b.layer) : WeightName(b.layer);
    const int64_t cols = parts.at(name).cols, width = b.c1 - b.c0;
    const std::string what = fmt::format("{}: reading rows [{}, {}) columns [{}, {}) of {}",
                                         context, b.r0, b.r1, b.c0, b.c1, name);
    Result<std::vector<float>> values = read(b);
    if (!values.ok()) return values.status().WithContext(what);
    if (static_cast<int64_t>(values->size()) != (b.r1 - b.r0) * width) {
      return Status::DataLoss(fmt::format("{}: the reader returned {} values, not {}", what,
                                          values->size(), (b.r1 - b.r0) * width));
    }
    for (int64_t r = b.r0; r < b.r1; ++r) {
      const int64_t at = offsets.at(name) + r * cols + b.c0;
      ACAN_RETURN_IF_ERROR(writer->WriteAt(
          uint64_t(at) * sizeof(float),
          std::span<const float>(values->data() + (r - b.r0) * width, size_t(width))));
    }
  }
  return writer->Finish();
}

Result<BandReader> ModelFileRows(const std::string& path, const std::vector<int64_t>& widths) {
  ACAN_RETURN_IF_ERROR(CheckArguments(widths, 1));
  const std::map<std::string, Part> parts = PartsByName(widths);
  const std::string header = SafetensorsHeader(ShapesOf(parts));
  auto file = std::make_shared<std::ifstream>(path, std::ios::binary);
  if (!*file) return Status::NotFound("cannot open model file \"" + path + "\"");
  std::string head(header.size(), '\0');
  file->read(head.data(), static_cast<std::streamsize>(head.size()));
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  int64_t values = 0;
  for (const auto& [name, part] : parts) values += part.rows * part.cols;
  if (!*file || head != header || ec || size != header.size() + uint64_t(values) * sizeof(float)) {
    return Status::DataLoss("model file \"" + path + "\" is not the model of widths " +
                            fmt::format("[{}]", fmt::join(widths, ", ")) +
                            " that SaveModel writes");
  }
  auto offsets = std::make_shared<std::map<std::string, int64_t>>(DataOffsets(parts));
  return BandReader(
      [file, offsets, path, widths, base = int64_t(header.size())](
          int layer, bool bias, int64_t r0, int64_t r1) -> Result<std::vector<float>> {
        if (layer < 0 || layer + 1 >= static_cast<int>(widths.size()) || r0 < 0 || r0 > r1 ||
            r1 > widths[layer + 1]) {
          return Status::InvalidArgument(
              fmt::format("model file \"{}\": no rows [{}, {}) in layer {}", path, r0, r1, layer));
        }
        const int64_t cols = bias ? 1 : widths[layer];
        std::vector<float> rows((r1 - r0) * cols);
        const int64_t at =
            base + (offsets->at(bias ? BiasName(layer) : WeightName(layer)) + r0 * cols) *
                       int64_t(sizeof(float));
        file->seekg(at);
        file->read(reinterpret_cast<char*>(rows.data()),
                   static_cast<std::streamsize>(rows.size() * sizeof(float)));
        if (!*file) {
          file->clear();
          return Status::DataLoss(fmt::format("model file \"{}\": cannot read {} bytes at {}", path,
                                              rows.size() * sizeof(float), at));
        }
        return rows;
      });
}

Result<EvalReport> EvaluateStreamed(const std::vector<int64_t>& widths, const Dataset& data,
                                    const JobConfig& job, const BandReader& read, int64_t band_rows,
                                    int64_t group_rows) {
  ACAN_RETURN_IF_ERROR(CheckArguments(widths, band_rows));
  if (group_rows < 1) {
    return Status::InvalidArgument("group_rows is " + std::to_string(group_rows) +
                                   "; a group needs at least one row");
  }
  InitBlas();
  const int L = static_cast<int>(widths.size()) - 1;
  std::vector<float> a, h;  // a layer's input and output for the group's rows
  auto forward = [&](const float* x, int64_t rows) -> Result<std::span<const float>> {
    a.assign(x, x + rows * widths.front());
    for (int l = 0; l < L; ++l) {
      const int64_t in = widths[l], out = widths[l + 1];
      h.resize(rows * out);
      for (int64_t r0 = 0; r0 < out; r0 += band_rows) {
        const int64_t r1 = std::min(out, r0 + band_rows);
        ACAN_ASSIGN_OR_RETURN(std::vector<float> w,
                              ReadBand(read, WeightName(l), WeightPart(widths, l), r0, r1));
        ACAN_ASSIGN_OR_RETURN(std::vector<float> b,
                              ReadBand(read, BiasName(l), BiasPart(widths, l), r0, r1));
        // DenseForward's arithmetic on columns [r0, r1) of the output: the bias first, then the
        // product added to it, so that each output is computed as Evaluate computes it.
        for (int64_t i = 0; i < rows; ++i) std::copy(b.begin(), b.end(), &h[i * out + r0]);
        Gemm(false, true, rows, r1 - r0, in, 1.0f, a.data(), in, w.data(), in, 1.0f, &h[r0], out);
      }
      if (l + 1 < L) ApplyActivation(job.model.activation, h.data(), rows * out);
      std::swap(a, h);
    }
    return std::span<const float>(a);
  };
  return EvaluateInChunks(widths, data, job.model.loss, group_rows, forward);
}

}  // namespace acan::nn
