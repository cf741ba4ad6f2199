#include "nn/row_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "nn/idx.h"
#include "nn/safetensors.h"

namespace acan::nn {
namespace {

constexpr char kMagic[8] = {'A', 'C', 'A', 'N', 'R', 'O', 'W', '1'};
constexpr size_t kHeaderBytes = 4096;  // the rows start page-aligned

struct Header {
  char magic[8];
  int64_t rows, features, target_width, classes;
  int64_t classification;  // 0 or 1
  int64_t stats;           // standardisation figures: 0 or features (a mean and a std each)
  char rows_sha256[64];
  char stats_sha256[64];
};
static_assert(sizeof(Header) <= kHeaderBytes);

// "path size mtime" of a data file, or "path missing": a changed file makes another key.
std::string FileStamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return path + " missing";
  return fmt::format("{} {} {}.{:09d}", path, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

std::string PathOf(const std::string& dir, const std::string& key) {
  return (std::filesystem::path(dir) / (key + ".rows")).string();
}

std::string StatsSha256(const std::vector<float>& mean, const std::vector<float>& std) {
  return FloatsSha256({mean, std});
}

Status WriteAll(int fd, const void* bytes, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(bytes);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      return Status::Unavailable(
          fmt::format("cannot write the row cache file \"{}\" ({})", path, std::strerror(errno)));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

struct Mapping {
  void* base = nullptr;
  size_t bytes = 0;
  ~Mapping() {
    if (base != nullptr) ::munmap(base, bytes);
  }
};

}  // namespace

std::string RowCacheKey(const JobConfig& job) {
  const DataConfig& d = job.data;
  std::string recipe = fmt::format(
      "acan rows 1\nsource {}\nsamples {}\nlimit {}\nscale {}\nstandardize {}\ninputs {}\n"
      "outputs {}\nloss {}\nseed {}\n",
      static_cast<int>(d.source), d.samples, d.limit, static_cast<int>(d.EffectiveScale()),
      d.standardize, job.model.layers.front(), job.model.layers.back(),
      static_cast<int>(job.model.loss), job.train.seed);
  switch (d.source) {
    case DataSource::kSynthetic:
      break;
    case DataSource::kCsv:
      recipe += FileStamp(job.Resolve(d.path)) + "\n";
      break;
    case DataSource::kIdx:
      recipe += FileStamp(job.Resolve(d.images)) + "\n" + FileStamp(job.Resolve(d.labels)) + "\n";
      break;
    case DataSource::kFashionMnist: {
      const std::string prefix = std::string(kFashionMnistDir) + "/train";
      recipe += FileStamp(prefix + "-images-idx3-ubyte.gz") + "\n" +
                FileStamp(prefix + "-labels-idx1-ubyte.gz") + "\n";
      break;
    }
  }
  return BytesSha256(recipe);
}

Status WriteRowCache(const std::string& dir, const std::string& key, const CachedRows& rows) {
  const Dataset& d = rows.data;
  if (d.mapped) return Status::InvalidArgument("WriteRowCache takes rows held in memory");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::Unavailable(
        fmt::format("cannot create the row cache directory \"{}\" ({})", dir, ec.message()));
  }
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.rows = d.rows;
  h.features = d.features;
  h.target_width = d.target_width;
  h.classes = d.classes;
  h.classification = d.classification ? 1 : 0;
  h.stats = static_cast<int64_t>(d.feature_mean.size());
  if (rows.sha256.size() != sizeof h.rows_sha256) {
    return Status::InvalidArgument("WriteRowCache needs the rows' SHA-256 in hex");
  }
  std::memcpy(h.rows_sha256, rows.sha256.data(), sizeof h.rows_sha256);
  const std::string stats = StatsSha256(d.feature_mean, d.feature_std);
  std::memcpy(h.stats_sha256, stats.data(), sizeof h.stats_sha256);
  std::vector<char> header(kHeaderBytes, 0);
  std::memcpy(header.data(), &h, sizeof h);

  const std::string path = PathOf(dir, key);
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::Unavailable(
        fmt::format("cannot create the row cache file \"{}\" ({})", tmp, std::strerror(errno)));
  }
  Status s = WriteAll(fd, header.data(), header.size(), tmp);
  if (s.ok()) s = WriteAll(fd, d.x.data(), d.x.size() * sizeof(float), tmp);
  if (s.ok()) s = WriteAll(fd, d.y.data(), d.y.size() * sizeof(float), tmp);
  if (s.ok()) s = WriteAll(fd, d.feature_mean.data(), d.feature_mean.size() * sizeof(float), tmp);
  if (s.ok()) s = WriteAll(fd, d.feature_std.data(), d.feature_std.size() * sizeof(float), tmp);
  if (::close(fd) != 0 && s.ok()) {
    s = Status::Unavailable(
        fmt::format("cannot write the row cache file \"{}\" ({})", tmp, std::strerror(errno)));
  }
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::Unavailable(
        fmt::format("cannot rename \"{}\" to \"{}\" ({})", tmp, path, std::strerror(errno)));
  }
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

Result<std::optional<CachedRows>> MapRowCache(const std::string& dir, const std::string& key) {
  const std::string path = PathOf(dir, key);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<CachedRows>();
    return Status::Unavailable(
        fmt::format("cannot open the row cache file \"{}\" ({})", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return Status::Unavailable(
        fmt::format("cannot stat the row cache file \"{}\" ({})", path, std::strerror(e)));
  }
  const auto bytes = static_cast<uint64_t>(st.st_size);
  auto bad = [&](const std::string& why) {
    return Status::DataLoss(fmt::format("row cache file \"{}\" ({} bytes): {}", path, bytes, why));
  };
  if (bytes < kHeaderBytes) {
    ::close(fd);
    return bad("shorter than its 4096-byte header");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->base = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (mapping->base == MAP_FAILED) {
    mapping->base = nullptr;
    return Status::Unavailable(
        fmt::format("cannot map the row cache file \"{}\" ({})", path, std::strerror(map_errno)));
  }
  mapping->bytes = bytes;
  Header h;
  std::memcpy(&h, mapping->base, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return bad("not a row cache file");
  // Every size against what the file holds before any is multiplied.
  const uint64_t floats = (bytes - kHeaderBytes) / sizeof(float);
  if (h.rows < 1 || h.features < 1 || h.target_width < 1 || h.classes < 0 ||
      (h.classification != 0 && h.classification != 1) || (h.stats != 0 && h.stats != h.features) ||
      static_cast<uint64_t>(h.features) > floats / static_cast<uint64_t>(h.rows) ||
      static_cast<uint64_t>(h.target_width) > floats / static_cast<uint64_t>(h.rows)) {
    return bad(fmt::format("its header is malformed (rows {}, features {}, target width {})",
                           h.rows, h.features, h.target_width));
  }
  const uint64_t nx = static_cast<uint64_t>(h.rows) * static_cast<uint64_t>(h.features);
  const uint64_t ny = static_cast<uint64_t>(h.rows) * static_cast<uint64_t>(h.target_width);
  const uint64_t ns = 2 * static_cast<uint64_t>(h.stats);
  if (nx + ny + ns != floats || (bytes - kHeaderBytes) % sizeof(float) != 0) {
    return bad(fmt::format("its header promises {} floats, the file holds {}", nx + ny + ns,
                           (bytes - kHeaderBytes) / 4.0));
  }
  const float* base =
      reinterpret_cast<const float*>(static_cast<const char*>(mapping->base) + kHeaderBytes);
  CachedRows out;
  Dataset& d = out.data;
  d.rows = h.rows;
  d.features = h.features;
  d.target_width = h.target_width;
  d.classes = h.classes;
  d.classification = h.classification == 1;
  d.feature_mean.assign(base + nx + ny, base + nx + ny + h.stats);
  d.feature_std.assign(base + nx + ny + h.stats, base + nx + ny + ns);
  d.mapped = Dataset::Mapped{{base, nx}, {base + nx, ny}, mapping};
  out.sha256 = DataSha256(d);
  if (out.sha256 != std::string_view(h.rows_sha256, sizeof h.rows_sha256)) {
    return bad(fmt::format("its rows' SHA-256 is {}, its header says {}", out.sha256.substr(0, 16),
                           std::string_view(h.rows_sha256, 16)));
  }
  if (StatsSha256(d.feature_mean, d.feature_std) !=
      std::string_view(h.stats_sha256, sizeof h.stats_sha256)) {
    return bad("its standardisation figures do not match their SHA-256");
  }
  return std::optional<CachedRows>(std::move(out));
}

Result<CachedRows> LoadDatasetShared(const JobConfig& job, const std::string& dir,
                                     std::string* note) {
  std::string key;
  if (!dir.empty()) {
    key = RowCacheKey(job);
    Result<std::optional<CachedRows>> cached = MapRowCache(dir, key);
    if (cached.ok() && cached->has_value()) return std::move(**cached);
    if (!cached.ok() && note != nullptr) *note = cached.status().message() + "; loaded again";
  }
  CachedRows rows;
  ACAN_ASSIGN_OR_RETURN(rows.data, LoadDataset(job));
  rows.sha256 = DataSha256(rows.data);
  if (dir.empty()) return rows;
  if (Status s = WriteRowCache(dir, key, rows); !s.ok()) {
    if (note != nullptr) *note = s.message() + "; the rows stay in this process's memory";
    return rows;
  }
  // Mapped from the file, the rows are the page cache's: one copy for every process of the host.
  Result<std::optional<CachedRows>> mapped = MapRowCache(dir, key);
  if (mapped.ok() && mapped->has_value() && (*mapped)->sha256 == rows.sha256) {
    return std::move(**mapped);
  }
  return rows;
}

}  // namespace acan::nn
