#include "nn/safetensors.h"

#include <openssl/evp.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "nn/read_file.h"

namespace acan::nn {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

constexpr uint64_t kMaxHeader = 100ull << 20;  // as the reference implementation

struct Entry {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

Status Bad(std::string_view source, const std::string& what) {
  return Status::DataLoss(std::string(source) + ": not a valid safetensors file: " + what);
}

Result<Entry> ParseEntry(std::string_view source, const std::string& name,
                         const nlohmann::json& j) {
  const std::string where = "tensor \"" + name + "\"";
  if (!j.is_object()) return Bad(source, where + " is not a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!j.contains(key)) return Bad(source, where + " has no \"" + key + "\"");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets") {
      return Bad(source, where + " has an unknown field \"" + it.key() + "\"");
    }
  }
  const nlohmann::json& dtype = j["dtype"];
  if (!dtype.is_string()) return Bad(source, where + ": dtype is not a string");
  if (dtype.get<std::string>() != "F32") {
    return Status::InvalidArgument(std::string(source) + ": " + where + " has dtype " +
                                   dtype.get<std::string>() +
                                   "; acan reads only F32 (convert the model to float32)");
  }
  Entry e;
  e.name = name;
  const nlohmann::json& shape = j["shape"];
  if (!shape.is_array()) return Bad(source, where + ": shape is not an array");
  uint64_t elements = 1;
  for (const auto& d : shape) {
    if (!d.is_number_unsigned()) return Bad(source, where + ": shape has a non-integer or < 0");
    const uint64_t v = d.get<uint64_t>();
    if (v != 0 && elements > (1ull << 40) / v) return Bad(source, where + ": shape is too large");
    elements *= v;
    e.shape.push_back(static_cast<int64_t>(v));
  }
  const nlohmann::json& off = j["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned()) {
    return Bad(source, where + ": data_offsets must be [begin, end], two integers >= 0");
  }
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  if (e.end < e.begin) {
    return Bad(source, where + ": data_offsets [" + std::to_string(e.begin) + ", " +
                           std::to_string(e.end) + "] end before begin");
  }
  if (e.end - e.begin != elements * 4) {
    return Bad(source, where + ": data_offsets [" + std::to_string(e.begin) + ", " +
                           std::to_string(e.end) + "] hold " + std::to_string(e.end - e.begin) +
                           " bytes but the shape needs " + std::to_string(elements * 4));
  }
  return e;
}

}  // namespace

Result<TensorMap> ParseSafetensors(std::span<const uint8_t> bytes, std::string_view source) {
  if (bytes.size() < 8) {
    return Bad(source, "the file has " + std::to_string(bytes.size()) +
                           " bytes, fewer than the 8-byte header length (truncated?)");
  }
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > kMaxHeader || n > bytes.size() - 8) {
    return Bad(source, "header length " + std::to_string(n) + " at byte 0 exceeds the " +
                           std::to_string(bytes.size() - 8) +
                           " bytes that follow (truncated or not safetensors)");
  }
  const char* header = reinterpret_cast<const char*>(bytes.data() + 8);
  nlohmann::json j = nlohmann::json::parse(header, header + n, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Bad(source, "the JSON header (bytes 8.." + std::to_string(8 + n) + ") does not parse");
  }
  if (!j.is_object()) return Bad(source, "the JSON header is not an object");
  const uint64_t data_size = bytes.size() - 8 - n;
  std::vector<Entry> entries;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    ACAN_ASSIGN_OR_RETURN(Entry e, ParseEntry(source, it.key(), it.value()));
    if (e.end > data_size) {
      return Status::DataLoss(
          std::string(source) + ": tensor \"" + e.name + "\" needs data bytes [" +
          std::to_string(e.begin) + ", " + std::to_string(e.end) + ") but the file has only " +
          std::to_string(data_size) + " data bytes after the header (file truncated?)");
    }
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].begin < entries[i - 1].end) {
      return Bad(source, "tensors \"" + entries[i - 1].name + "\" and \"" + entries[i].name +
                             "\" overlap at data byte " + std::to_string(entries[i].begin));
    }
  }
  TensorMap out;
  const uint8_t* data = bytes.data() + 8 + n;
  for (const Entry& e : entries) {
    Tensor t;
    t.shape = e.shape;
    t.data.resize((e.end - e.begin) / 4);
    if (!t.data.empty()) std::memcpy(t.data.data(), data + e.begin, e.end - e.begin);
    out.emplace(e.name, std::move(t));
  }
  return out;
}

Result<TensorMap> ReadSafetensors(const std::string& path) {
  ACAN_ASSIGN_OR_RETURN(std::string bytes,
                        ReadWholeFile(path, "model file", Limits().model_file_bytes));
  return ParseSafetensors(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                          path);
}

namespace {

// The tensors' shapes, once each is checked to hold as many values as its shape says.
Result<TensorShapes> ShapesOf(const TensorMap& tensors) {
  TensorShapes shapes;
  for (const auto& [name, t] : tensors) {
    if (static_cast<int64_t>(t.data.size()) != t.NumElements()) {
      return Status::InvalidArgument(
          "tensor \"" + name + "\" has " + std::to_string(t.data.size()) +
          " values but its shape holds " + std::to_string(t.NumElements()));
    }
    shapes.emplace(name, t.shape);
  }
  return shapes;
}

uint64_t TensorBytes(const std::vector<int64_t>& shape) {
  uint64_t bytes = 4;
  for (int64_t d : shape) bytes *= static_cast<uint64_t>(d);
  return bytes;
}

uint64_t DataBytes(const TensorShapes& shapes) {
  uint64_t bytes = 0;
  for (const auto& [name, shape] : shapes) bytes += TensorBytes(shape);
  return bytes;
}

}  // namespace

std::string SafetensorsHeader(const TensorShapes& shapes) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, shape] : shapes) {
    const uint64_t bytes = TensorBytes(shape);
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');
  std::string out(8, '\0');
  const uint64_t n = h.size();
  std::memcpy(out.data(), &n, 8);
  return out + h;
}

Result<std::string> SerializeSafetensors(const TensorMap& tensors) {
  ACAN_ASSIGN_OR_RETURN(TensorShapes shapes, ShapesOf(tensors));
  std::string out = SafetensorsHeader(shapes);
  out.reserve(out.size() + DataBytes(shapes));
  for (const auto& [name, t] : tensors) {
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * 4);
  }
  return out;
}

Status WriteSafetensors(const std::string& path, const TensorMap& tensors) {
  ACAN_ASSIGN_OR_RETURN(TensorShapes shapes, ShapesOf(tensors));
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsWriter> writer,
                        SafetensorsWriter::Create(path, shapes));
  for (const auto& [name, t] : tensors) ACAN_RETURN_IF_ERROR(writer->Append(t.data));
  return writer->Finish();
}

SafetensorsWriter::SafetensorsWriter(std::string path, uint64_t data_bytes)
    : path_(std::move(path)),
      tmp_(path_ + ".tmp"),
      remaining_(data_bytes),
      data_bytes_(data_bytes) {}

Result<std::unique_ptr<SafetensorsWriter>> SafetensorsWriter::Create(const std::string& path,
                                                                     const TensorShapes& shapes) {
  std::unique_ptr<SafetensorsWriter> w(new SafetensorsWriter(path, DataBytes(shapes)));
  w->out_.open(w->tmp_, std::ios::binary | std::ios::trunc);
  if (!w->out_) {
    return Status::PermissionDenied("cannot create \"" + w->tmp_ +
                                    "\"; check that the folder exists and is writable");
  }
  w->created_ = true;
  const std::string header = SafetensorsHeader(shapes);
  w->out_.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (!w->out_) return Status::ResourceExhausted("cannot write \"" + w->tmp_ + "\" (disk full?)");
  w->header_bytes_ = header.size();
  return w;
}

SafetensorsWriter::~SafetensorsWriter() {
  if (!created_ || renamed_) return;
  // An unfinished file is no model: leave nothing that a later run could mistake for one.
  if (out_.is_open()) out_.close();
  std::remove(tmp_.c_str());
}

Status SafetensorsWriter::Append(std::span<const float> values) {
  if (placed_) return Status::FailedPrecondition("\"" + tmp_ + "\": Append after WriteAt");
  appended_ = true;
  if (values.size_bytes() > remaining_) {
    return Status::InvalidArgument("\"" + tmp_ + "\": " + std::to_string(values.size_bytes()) +
                                   " more data bytes than the " + std::to_string(remaining_) +
                                   " the header has room for");
  }
  out_.write(reinterpret_cast<const char*>(values.data()),
             static_cast<std::streamsize>(values.size_bytes()));
  if (!out_) return Status::ResourceExhausted("cannot write \"" + tmp_ + "\" (disk full?)");
  remaining_ -= values.size_bytes();
  return Status::Ok();
}

Status SafetensorsWriter::WriteAt(uint64_t data_offset, std::span<const float> values) {
  if (appended_) return Status::FailedPrecondition("\"" + tmp_ + "\": WriteAt after Append");
  placed_ = true;
  if (data_offset > data_bytes_ || values.size_bytes() > data_bytes_ - data_offset ||
      values.size_bytes() > remaining_) {
    return Status::InvalidArgument(
        "\"" + tmp_ + "\": " + std::to_string(values.size_bytes()) + " data bytes at offset " +
        std::to_string(data_offset) + " do not fit the " + std::to_string(data_bytes_) +
        " the header has room for (" + std::to_string(remaining_) + " not yet written)");
  }
  out_.seekp(static_cast<std::streamoff>(header_bytes_ + data_offset));
  out_.write(reinterpret_cast<const char*>(values.data()),
             static_cast<std::streamsize>(values.size_bytes()));
  if (!out_) return Status::ResourceExhausted("cannot write \"" + tmp_ + "\" (disk full?)");
  remaining_ -= values.size_bytes();
  return Status::Ok();
}

Status SafetensorsWriter::Finish() {
  if (remaining_ != 0) {
    return Status::InvalidArgument("\"" + tmp_ + "\": " + std::to_string(remaining_) +
                                   " data bytes the header announces were never written");
  }
  out_.close();
  if (!out_) return Status::ResourceExhausted("cannot write \"" + tmp_ + "\" (disk full?)");
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    return Status::PermissionDenied("cannot rename \"" + tmp_ + "\" to \"" + path_ + "\"");
  }
  renamed_ = true;
  return Status::Ok();
}

void Sha256::Free::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr); }

void Sha256::Update(const void* data, size_t bytes) { EVP_DigestUpdate(ctx_.get(), data, bytes); }

std::string Sha256::Hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_.get(), md, &len);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[md[i] >> 4]);
    hex.push_back(kHex[md[i] & 15]);
  }
  return hex;
}

namespace {
template <typename Parts>
std::string Sha256Hex(const Parts& parts) {
  Sha256 sha;
  for (const auto& p : parts) sha.Update(p.data(), p.size_bytes());
  return sha.Hex();
}
}  // namespace

std::string TensorsSha256(const TensorMap& tensors) {
  std::vector<std::span<const float>> parts;
  for (const auto& [name, t] : tensors) parts.emplace_back(t.data);
  return Sha256Hex(parts);
}

std::string FloatsSha256(std::initializer_list<std::span<const float>> parts) {
  return Sha256Hex(parts);
}

std::string BytesSha256(std::string_view bytes) {
  return Sha256Hex(std::initializer_list<std::span<const char>>{{bytes.data(), bytes.size()}});
}

}  // namespace acan::nn
