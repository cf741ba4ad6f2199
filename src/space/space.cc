#include "acan/space.h"

#include <fmt/format.h>

#include <bit>
#include <charconv>
#include <map>
#include <mutex>

#include "common/thread_annotations.h"
#include "space/cell_internal.h"
#include "space/mem/mem_space.h"
#include "space/nats/nats_space.h"
#include "space/uri_internal.h"

namespace acan {

// ---- histogram and names ----

void LatencyHistogram::Record(uint64_t ns) {
  size_t bucket = ns == 0 ? 0 : static_cast<size_t>(std::bit_width(ns) - 1);
  ++counts[std::min(bucket, kBuckets - 1)];
  ++total;
  sum_ns += ns;
}

uint64_t LatencyHistogram::QuantileNs(double q) const {
  if (total == 0) return 0;
  auto rank = static_cast<uint64_t>(q * static_cast<double>(total));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += counts[i];
    if (seen >= rank) return (uint64_t{2} << i) - 1;
  }
  return UINT64_MAX;
}

std::string_view SpaceOpName(SpaceOp op) {
  switch (op) {
    case SpaceOp::kPut:
      return "put";
    case SpaceOp::kRead:
      return "read";
    case SpaceOp::kGet:
      return "get";
    case SpaceOp::kTake:
      return "take";
    case SpaceOp::kReadAll:
      return "read_all";
    case SpaceOp::kErase:
      return "erase";
    case SpaceOp::kReadCell:
      return "read_cell";
    case SpaceOp::kSwapCell:
      return "swap_cell";
    case SpaceOp::kReadKeys:
      return "read_keys";
    case SpaceOp::kCount:
      break;
  }
  return "unknown";
}

// ---- conveniences ----

bool IsTampered(const Status& status) {
  return status.code() == StatusCode::kDataLoss &&
         status.message().find("tampered:") != std::string::npos;
}

Status Space::PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) {
  ACAN_ASSIGN_OR_RETURN(Cell cell, ReadCell(fence.cell));
  if (cell.revision != fence.revision) {
    return FenceMoved(key, fence, uri(), RevisionWords(cell.revision));
  }
  return Put(std::move(key), std::move(value), deadline);
}

Status Space::Put(std::string_view key, Value value, Deadline deadline) {
  ACAN_ASSIGN_OR_RETURN(Key k, Key::Parse(key));
  return Put(std::move(k), std::move(value), deadline);
}
Result<std::optional<Tuple>> Space::Read(std::string_view pattern) {
  ACAN_ASSIGN_OR_RETURN(Pattern p, Pattern::Parse(pattern));
  return Read(p);
}
Result<Tuple> Space::Get(std::string_view pattern, Deadline deadline) {
  ACAN_ASSIGN_OR_RETURN(Pattern p, Pattern::Parse(pattern));
  return Get(p, deadline);
}
Result<std::vector<Tuple>> Space::Take(std::string_view pattern, size_t max_count,
                                       Deadline deadline) {
  ACAN_ASSIGN_OR_RETURN(Pattern p, Pattern::Parse(pattern));
  return Take(p, max_count, deadline);
}
Result<std::vector<Tuple>> Space::ReadAll(std::string_view pattern, size_t limit) {
  ACAN_ASSIGN_OR_RETURN(Pattern p, Pattern::Parse(pattern));
  return ReadAll(p, limit);
}
Result<std::vector<Key>> Space::ReadKeys(const Pattern& pattern, size_t limit) {
  ACAN_ASSIGN_OR_RETURN(std::vector<Tuple> all, ReadAll(pattern, limit));
  std::vector<Key> keys;
  keys.reserve(all.size());
  for (Tuple& t : all) keys.push_back(std::move(t.key));
  return keys;
}
Result<size_t> Space::Erase(const Pattern& pattern) {
  auto taken = Take(pattern, SIZE_MAX, Deadline::Now());
  if (!taken.ok()) {
    if (taken.status().IsTimeout()) return size_t{0};
    return taken.status();
  }
  return taken->size();
}

// ---- URIs ----

Result<SpaceUri> SpaceUri::Parse(std::string_view uri) {
  SpaceUri out;
  out.text = std::string(uri);
  size_t colon = uri.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::InvalidArgument(fmt::format(
        "space URI '{}' has no scheme; expected e.g. 'mem:' or 'nats://127.0.0.1:4222'", uri));
  }
  out.scheme = std::string(uri.substr(0, colon));
  std::string_view rest = uri.substr(colon + 1);
  size_t q = rest.find('?');
  std::string_view query = q == std::string_view::npos ? "" : rest.substr(q + 1);
  rest = rest.substr(0, q);
  if (rest.starts_with("//")) {
    rest.remove_prefix(2);
    size_t slash = rest.find('/');
    out.authority = std::string(rest.substr(0, slash));
    if (slash != std::string_view::npos) out.path = std::string(rest.substr(slash));
  } else {
    out.path = std::string(rest);
  }
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return Status::InvalidArgument(
          fmt::format("space URI '{}': parameter '{}' is not of the form key=value", uri, kv));
    }
    out.params[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

const std::string* SpaceUri::Param(const std::string& key) {
  auto it = params.find(key);
  if (it == params.end()) return nullptr;
  used_.insert(key);
  return &it->second;
}

Result<uint64_t> SpaceUri::UintParam(const std::string& key, uint64_t fallback) {
  const std::string* v = Param(key);
  if (!v) return fallback;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || end != v->data() + v->size()) {
    return Status::InvalidArgument(fmt::format(
        "space URI '{}': parameter {}='{}' is not a non-negative integer", text, key, *v));
  }
  return n;
}

Status SpaceUri::ApplyOptions(SpaceOptions* options) {
  ACAN_ASSIGN_OR_RETURN(options->max_value_bytes,
                        UintParam("max_value_bytes", options->max_value_bytes));
  ACAN_ASSIGN_OR_RETURN(options->max_total_bytes,
                        UintParam("max_total_bytes", options->max_total_bytes));
  ACAN_ASSIGN_OR_RETURN(options->spin, UintParam("spin", options->spin));
  return Status::Ok();
}

Status SpaceUri::RejectUnusedParams() const {
  for (const auto& [k, v] : params) {
    if (!used_.count(k)) {
      return Status::InvalidArgument(
          fmt::format("space URI '{}': unknown parameter '{}' for scheme '{}'", text, k, scheme));
    }
  }
  return Status::Ok();
}

// ---- registry ----

namespace {
struct Registry {
  Mutex mu;
  std::map<std::string, SpaceFactory, std::less<>> factories GUARDED_BY(mu);
};
Registry& GetRegistry() {
  static Registry* r = new Registry;  // never destroyed: usable during static destruction
  return *r;
}
void RegisterBuiltins() {
  static std::once_flag once;
  std::call_once(once, [] {
    (void)mem::RegisterMemSpace();
    (void)nats::RegisterNatsSpace();
  });
}
}  // namespace

Status RegisterSpaceScheme(std::string scheme, SpaceFactory factory) {
  Registry& r = GetRegistry();
  MutexLock lock(r.mu);
  if (r.factories.count(scheme)) {
    return Status::AlreadyExists(fmt::format("space scheme '{}' is already registered", scheme));
  }
  r.factories.emplace(std::move(scheme), std::move(factory));
  return Status::Ok();
}

Result<std::unique_ptr<Space>> OpenSpace(std::string_view uri, const SpaceOptions& options) {
  RegisterBuiltins();
  ACAN_ASSIGN_OR_RETURN(SpaceUri parsed, SpaceUri::Parse(uri));
  SpaceFactory factory;
  std::string known;
  {
    Registry& r = GetRegistry();
    MutexLock lock(r.mu);
    auto it = r.factories.find(parsed.scheme);
    if (it != r.factories.end()) factory = it->second;
    for (const auto& [name, f] : r.factories) known += (known.empty() ? "" : ", ") + name + ":";
  }
  if (!factory) {
    return Status::InvalidArgument(fmt::format(
        "unknown space scheme '{}' in URI '{}'; known schemes: {}", parsed.scheme, uri, known));
  }
  return factory(uri, options);
}

}  // namespace acan
