// Writes the generated part of the seed corpora (fuzz/corpus/<target>/): valid files and messages
// made by acan's own writers, and damaged copies of them. Run from the repository root after a
// build with ACAN_FUZZ=ON: build-fuzz/fuzz/fuzz_make_seeds fuzz/corpus. The hand-written seeds
// (keys, URIs, job files, CSV, audit logs) are files in the corpus directories themselves.
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "nn/plan.h"
#include "nn/row_cache.h"
#include "nn/safetensors.h"
#include "runtime/core/messages.h"
#include "runtime/core/progress.h"
#include "runtime/state/local_inputs.h"

using namespace acan;
namespace fs = std::filesystem;

namespace {

fs::path root;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(root / target);
  std::ofstream(root / target / name, std::ios::binary) << bytes;
}

// The bytes with the last `cut` removed, and with one byte flipped in the middle.
void WriteDamaged(const std::string& target, const std::string& name, const std::string& bytes) {
  Write(target, name + "-truncated", bytes.substr(0, bytes.size() * 2 / 3));
  std::string flipped = bytes;
  if (!flipped.empty()) flipped[flipped.size() / 2] ^= 0x5a;
  Write(target, name + "-flipped", flipped);
}

std::string Gzip(const std::string& bytes) {
  std::string out(compressBound(bytes.size()) + 64, '\0');
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string BigEndian(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds CORPUS_ROOT (fuzz/corpus)\n");
    return 2;
  }
  root = argv[1];

  // safetensors: a model's two tensors.
  nn::TensorMap model;
  model["w"] = {{2, 3}, {1, 2, 3, 4, 5, 6}};
  model["b"] = {{3}, {0.5f, -0.5f, 0}};
  const std::string st = nn::SerializeSafetensors(model).value();
  Write("safetensors", "model", st);
  WriteDamaged("safetensors", "model", st);

  // IDX: two 2x3 images and their labels, plain and gzip.
  const std::string images = BigEndian(0x803) + BigEndian(2) + BigEndian(2) + BigEndian(3) +
                             std::string("\x00\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0", 12);
  const std::string labels = BigEndian(0x801) + BigEndian(2) + std::string("\x03\x07", 2);
  Write("idx", "images", images);
  Write("idx", "labels", labels);
  Write("idx", "images.gz", Gzip(images));
  Write("idx", "labels.gz", Gzip(labels));
  WriteDamaged("idx", "images", images);
  WriteDamaged("idx", "images.gz", Gzip(images));

  // Row cache: three rows of two features, classification, standardised.
  nn::CachedRows rows;
  rows.data.rows = 3;
  rows.data.features = 2;
  rows.data.target_width = 1;
  rows.data.classification = true;
  rows.data.classes = 2;
  rows.data.x = {0, 1, 2, 3, 4, 5};
  rows.data.y = {0, 1, 1};
  rows.data.feature_mean = {2, 3};
  rows.data.feature_std = {1, 1};
  rows.sha256 = nn::DataSha256(rows.data);
  const fs::path dir = root / "row_cache";
  fs::create_directories(dir);
  if (!nn::WriteRowCache(dir.string(), "seed", rows).ok()) return 1;
  std::ifstream in(dir / "seed.rows", std::ios::binary);
  const std::string cache((std::istreambuf_iterator<char>(in)), {});
  fs::rename(dir / "seed.rows", dir / "valid");
  WriteDamaged("row_cache", "valid", cache);

  // Messages: the first byte picks the decoder (fuzz/messages.cc).
  const JobConfig job;
  const nn::Plan plan = nn::Plan::Create(job, -1, 100).value();
  int n = 0;
  for (const nn::TaskSpec& t : plan.StepTasks(3, job.train.batch)) {
    std::vector<std::string> keys;
    for (size_t i = 0; i < t.inputs.size(); ++i) keys.push_back("job.in." + std::to_string(i));
    const Value v = runtime::EncodeTaskMessage(2, keys, nn::EncodeTask(t), 1000000);
    const std::string bytes = std::string(1, '\0') + std::string(v.AsString());
    Write("messages", "task" + std::to_string(n), bytes);
    if (n == 0) WriteDamaged("messages", "task0", bytes);
    Write("messages", "spec" + std::to_string(n), "\x05" + nn::EncodeTask(t));
    ++n;
  }
  // A list of layers' tasks (a convolution, pooling, dropout: TaskSpec::net), data and chain.
  for (const char* strategy : {"data", "chain"}) {
    const JobConfig cnn = ParseJobString(std::string(R"([model]
input_shape = [1, 6, 6]
loss = "softmax_cross_entropy"
[[model.layer]]
type = "conv2d"
in_channels = 1
out_channels = 2
kernel_size = 3
padding = 1
[[model.layer]]
type = "max_pool2d"
kernel_size = 2
[[model.layer]]
type = "flatten"
[[model.layer]]
type = "dropout"
[[model.layer]]
type = "linear"
in_features = 18
out_features = 3
[data]
source = "synthetic"
samples = 32
[train]
batch = 8
momentum = 0.9
[partition]
task_size = 4
strategy = ")") + strategy + "\"\n")
                              .value();
    const nn::Plan net_plan = nn::Plan::Create(cnn, -1, 32).value();
    for (const nn::TaskSpec& t : net_plan.StepTasks(1, cnn.train.batch)) {
      Write("messages", "spec" + std::to_string(n++), "\x05" + nn::EncodeTask(t));
    }
  }
  runtime::DoneMessage done;
  done.attempt = 1;
  done.handler = 4;
  done.missing = {"job.in.0"};
  Write("messages", "done", "\x01" + std::string(runtime::EncodeDoneMessage(done).AsString()));
  runtime::LeaseMessage lease{"manager-1", 1700000000000};
  Write("messages", "lease", "\x02" + std::string(runtime::EncodeLeaseMessage(lease).AsString()));
  runtime::JobDescriptor d;
  d.job_toml = ToToml(job);
  Write("messages", "descriptor", "\x03" + std::string(runtime::EncodeJobDescriptor(d).AsString()));
  runtime::Progress p;
  p.total_steps = 10;
  Write("messages", "progress", "\x04" + p.ToJson());
  Write("messages", "key", "\x06job.task.3.update.0");
  std::printf("seeds written under %s\n", root.c_str());
  return 0;
}
