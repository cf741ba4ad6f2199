#include "runtime/audit/audit.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "nn/read_file.h"
#include "nn/safetensors.h"

namespace acan::runtime {
namespace {

using json = nlohmann::json;

const std::string kNoHash(64, '0');

// The record's hash: SHA-256 of its canonical encoding without the "hash" and "sig" fields.
std::string RecordHash(const json& record) {
  json body = record;
  body.erase("hash");
  body.erase("sig");
  return nn::BytesSha256(body.dump());
}

std::string NowRfc3339() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

// A job_end, or its last part: nothing follows it.
bool IsLastRecord(const json& r) {
  if (r.value("kind", "") != "job_end") return false;
  if (!r.contains("part") || !r["part"].is_string()) return true;
  const std::string part = r["part"].get<std::string>();
  const size_t slash = part.find('/');
  return slash != std::string::npos && part.substr(0, slash) == part.substr(slash + 1);
}

// Whether record `seq` is in the space.
Result<bool> Present(Space* space, const Layout& layout, int64_t seq) {
  ACAN_ASSIGN_OR_RETURN(Cell c, space->ReadCell(layout.AuditRecord(seq)));
  return c.revision != 0;
}

Result<json> ReadRecord(Space* space, const Layout& layout, int64_t seq) {
  ACAN_ASSIGN_OR_RETURN(Cell c, space->ReadCell(layout.AuditRecord(seq)));
  json j = json::parse(c.value.AsString(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("hash") || !j["hash"].is_string()) {
    return Status::DataLoss(
        fmt::format("audit record {} of job '{}' in the space is malformed", seq, layout.job()));
  }
  return j;
}

// The number of records in the space: a probe at 1, 2, 4, ... and a bisection.
Result<int64_t> CountRecords(Space* space, const Layout& layout) {
  ACAN_ASSIGN_OR_RETURN(bool first, Present(space, layout, 1));
  if (!first) return int64_t{0};
  int64_t present = 1, absent = 2;
  for (;;) {
    ACAN_ASSIGN_OR_RETURN(bool there, Present(space, layout, absent));
    if (!there) break;
    present = absent;
    absent *= 2;
  }
  while (absent - present > 1) {
    const int64_t mid = present + (absent - present) / 2;
    ACAN_ASSIGN_OR_RETURN(bool there, Present(space, layout, mid));
    (there ? present : absent) = mid;
  }
  return present;
}

}  // namespace

std::string ValueSha256(const Value& value) {
  return nn::BytesSha256({reinterpret_cast<const char*>(value.data()), value.size()});
}

AuditLog::AuditLog(Space* space, const Layout* layout, std::string writer,
                   std::shared_ptr<const AuditSigner> signer)
    : space_(space),
      layout_(layout),
      writer_(std::move(writer)),
      signer_(std::move(signer)),
      thread_([this] { Loop(); }) {}

AuditLog::~AuditLog() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  thread_.join();
}

int64_t AuditLog::Append(std::string kind, json fields) {
  return AppendVersions(std::move(kind), std::move(fields), {});
}

int64_t AuditLog::AppendVersions(std::string kind, json fields,
                                 std::vector<WrittenVersion> versions, bool hash,
                                 std::map<std::string, int64_t> from) {
  MutexLock lock(mu_);
  const int64_t ticket = next_ticket_++;
  queue_.push_back({ticket, std::move(kind), std::move(fields), std::move(versions), NowRfc3339(),
                    hash, std::move(from)});
  cv_.SignalAll();
  return ticket;
}

int64_t AuditLog::last_ticket() const {
  MutexLock lock(mu_);
  return next_ticket_ - 1;
}

Status AuditLog::WaitWritten(int64_t ticket) {
  MutexLock lock(mu_);
  while (written_ < ticket && error_.ok()) cv_.Wait(mu_);
  return error_;
}

void AuditLog::Loop() {
  MutexLock lock(mu_);
  for (;;) {
    while (!stop_ && queue_.empty()) cv_.Wait(mu_);
    if (queue_.empty()) return;  // stopping with nothing left
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    mu_.Unlock();
    const int64_t ticket = p.ticket;
    Status s = Write(std::move(p));
    mu_.Lock();
    if (!s.ok() && error_.ok()) {
      error_ = s;
      // A writer whose process stopped (or crashed, in process) loses what it had queued, as a
      // killed one would: its successor's lease record covers the versions.
      if (s.IsCancelled()) {
        spdlog::debug("audit log of job '{}': {}", layout_->job(), s.ToString());
      } else {
        spdlog::warn("audit log of job '{}': {}", layout_->job(), s.ToString());
      }
    }
    written_ = ticket;
    cv_.SignalAll();
  }
}

Status AuditLog::FindHead() {
  ACAN_ASSIGN_OR_RETURN(head_seq_, CountRecords(space_, *layout_));
  head_hash_ = kNoHash;
  ended_ = false;
  if (head_seq_ > 0) {
    ACAN_ASSIGN_OR_RETURN(json head, ReadRecord(space_, *layout_, head_seq_));
    head_hash_ = head["hash"].get<std::string>();
    ended_ = IsLastRecord(head);
  }
  head_known_ = true;
  return Status::Ok();
}

Status AuditLog::Write(Pending p) {
  if (!head_known_) ACAN_RETURN_IF_ERROR(FindHead());
  if (p.versions.empty()) return WriteRecord(p.kind, std::move(p.fields), p.time);
  // A record holds what fits a cell: many shards take several parts, numbered.
  constexpr size_t kPartBytes = kMaxCellBytes / 2;
  std::vector<json> parts(1, json::array());
  size_t bytes = 0;
  for (const WrittenVersion& v : p.versions) {
    json entry = {{"shard", v.shard}, {"version", v.version}};
    if (auto f = p.from.find(v.shard); f != p.from.end() && f->second != v.version) {
      entry["from"] = f->second;
    }
    if (p.hash) entry["sha256"] = v.sha256.empty() ? ValueSha256(v.value) : v.sha256;
    const size_t size = entry.dump().size();
    if (bytes + size > kPartBytes && !parts.back().empty()) {
      parts.emplace_back(json::array());
      bytes = 0;
    }
    parts.back().push_back(std::move(entry));
    bytes += size;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    json fields = p.fields;
    fields["versions"] = std::move(parts[i]);
    if (parts.size() > 1) fields["part"] = fmt::format("{}/{}", i + 1, parts.size());
    ACAN_RETURN_IF_ERROR(WriteRecord(p.kind, std::move(fields), p.time));
  }
  return Status::Ok();
}

Status AuditLog::WriteRecord(const std::string& kind, json fields, const std::string& time) {
  Pending p{0, kind, {}, {}, time, true, {}};
  int lost_swaps = 0;
  for (;;) {
    if (ended_) {
      spdlog::debug("audit log of job '{}': '{}' after the job's end, not recorded", layout_->job(),
                    p.kind);
      return Status::Ok();
    }
    json record = fields;
    record["seq"] = head_seq_ + 1;
    record["time"] = p.time;
    record["kind"] = p.kind;
    record["by"] = writer_;
    record["prev"] = head_hash_;
    if (signer_) record["signer"] = signer_->certificate();
    record["hash"] = RecordHash(record);
    if (signer_) record["sig"] = signer_->Sign(record["hash"].get<std::string>());
    const std::string line = record.dump();
    if (line.size() > kMaxCellBytes) {
      return Status::ResourceExhausted(fmt::format(
          "audit record '{}' is {} bytes, over a cell's {}", p.kind, line.size(), kMaxCellBytes));
    }
    auto swapped = space_->SwapCell(layout_->AuditRecord(head_seq_ + 1), Value::FromString(line), 0,
                                    Deadline::After(std::chrono::seconds(30)));
    bool ours = swapped.ok();
    if (!swapped.ok() && swapped.status().IsUnavailable()) {
      // The swap's outcome was not learnt: the cell says whether it happened.
      ACAN_ASSIGN_OR_RETURN(Cell c, space_->ReadCell(layout_->AuditRecord(head_seq_ + 1)));
      if (c.revision == 0) {
        if (++lost_swaps > 100) return swapped.status();
        continue;  // not applied: again
      }
      ours = c.value.AsString() == line;
    } else if (!swapped.ok() && swapped.status().code() != StatusCode::kFailedPrecondition) {
      return swapped.status();
    }
    if (ours) {
      head_seq_ += 1;
      head_hash_ = record["hash"].get<std::string>();
      ended_ = IsLastRecord(record);
      return Status::Ok();
    }
    // Another writer took this number: its record is the head now.
    ACAN_ASSIGN_OR_RETURN(json theirs, ReadRecord(space_, *layout_, head_seq_ + 1));
    head_seq_ += 1;
    head_hash_ = theirs["hash"].get<std::string>();
    ended_ = IsLastRecord(theirs);
  }
}

Result<bool> AuditChainEnded(Space* space, const Layout& layout) {
  ACAN_ASSIGN_OR_RETURN(int64_t records, CountRecords(space, layout));
  if (records == 0) return false;
  ACAN_ASSIGN_OR_RETURN(json head, ReadRecord(space, layout, records));
  return IsLastRecord(head);
}

Result<std::vector<std::string>> ReadAuditChain(Space* space, const Layout& layout) {
  std::vector<std::string> lines;
  for (int64_t seq = 1;; ++seq) {
    ACAN_ASSIGN_OR_RETURN(Cell c, space->ReadCell(layout.AuditRecord(seq)));
    if (c.revision == 0) break;
    lines.emplace_back(c.value.AsString());
  }
  return lines;
}

Status WriteAuditFile(Space* space, const Layout& layout, const std::string& path) {
  ACAN_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadAuditChain(space, layout));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    for (const std::string& l : lines) out << l << '\n';
    if (!out.flush()) return Status::Unavailable(fmt::format("cannot write '{}'", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return Status::Unavailable(
        fmt::format("cannot rename '{}' to '{}': {}", tmp, path, ec.message()));
  }
  return Status::Ok();
}

Result<std::vector<std::string>> ReadAuditFile(const std::string& path) {
  ACAN_ASSIGN_OR_RETURN(std::string text,
                        nn::ReadWholeFile(path, "audit log", Limits().audit_file_bytes));
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    lines.emplace_back(text, at, end - at);
    at = end + 1;
  }
  return lines;
}

AuditVerdict VerifyAuditLines(const std::vector<std::string>& lines,
                              const AuditVerifyOptions& options) {
  AuditVerdict v;
  auto bad = [&](int64_t line, std::string problem) {
    v.ok = false;
    v.line = line;
    v.problem = std::move(problem);
    return v;
  };
  std::string prev = kNoHash;
  json last;
  // The job_end's final versions (its parts' together) and the tensor of each parameter shard.
  std::map<std::string, std::string> final_sha256, tensor_of;
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto line = static_cast<int64_t>(i + 1);
    json r = json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    if (!r.is_object()) return bad(line, "not a JSON object");
    for (const char* field : {"seq", "kind", "prev", "hash", "time", "by"}) {
      if (!r.contains(field)) return bad(line, fmt::format("no '{}' field", field));
    }
    if (!r["seq"].is_number_integer() || !r["kind"].is_string() || !r["prev"].is_string() ||
        !r["hash"].is_string()) {
      return bad(line, "seq, kind, prev or hash of the wrong type");
    }
    if (RecordHash(r) != r["hash"].get<std::string>()) {
      return bad(line, "altered: its hash is not the SHA-256 of its content");
    }
    const int64_t seq = r["seq"].get<int64_t>();
    if (seq > line) {
      return bad(line, fmt::format("seq {} where {} was due: records before it are missing or "
                                   "out of order",
                                   seq, line));
    }
    if (seq < line) {
      return bad(line, fmt::format("seq {} where {} was due: a record repeated, inserted or moved",
                                   seq, line));
    }
    if (r["prev"].get<std::string>() != prev) {
      return bad(line, line == 1 ? "the first record's prev is not 64 zeros: the chain's start is "
                                   "missing"
                                 : fmt::format("its prev is not the hash of line {}: a record "
                                               "before it was inserted, removed or changed",
                                               line - 1));
    }
    if (!options.ca_file.empty()) {
      if (!r.contains("sig") || !r["sig"].is_string() || !r.contains("signer") ||
          !r["signer"].is_string()) {
        return bad(line, "unsigned: a secure deployment's manager signs every record");
      }
      Status signed_by =
          VerifyAuditSignature(options.ca_file, r["hash"].get<std::string>(),
                               r["signer"].get<std::string>(), r["sig"].get<std::string>());
      if (signed_by.code() == StatusCode::kInvalidArgument) return bad(0, signed_by.message());
      if (!signed_by.ok()) return bad(line, "not signed by the deployment: " + signed_by.message());
    }
    prev = r["hash"].get<std::string>();
    v.kinds[r["kind"].get<std::string>()]++;
    if (r["kind"] == "job_end") {
      v.final_model_sha256 = r.value("final_model_sha256", "");
      if (r.contains("versions") && r["versions"].is_array()) {
        for (const json& e : r["versions"]) {
          if (e.is_object() && e.contains("shard") && e["shard"].is_string() &&
              e.contains("sha256") && e["sha256"].is_string()) {
            final_sha256[e["shard"].get<std::string>()] = e["sha256"].get<std::string>();
          }
        }
      }
      if (r.contains("tensors") && r["tensors"].is_object()) {
        for (const auto& [shard, name] : r["tensors"].items()) {
          if (name.is_string()) tensor_of[shard] = name.get<std::string>();
        }
      }
    }
    last = std::move(r);
  }
  v.records = static_cast<int64_t>(lines.size());
  if (lines.empty()) return bad(0, "no records");
  if (!IsLastRecord(last)) {
    return bad(v.records,
               "the chain ends without a job_end record: records are missing at the "
               "end, or the job did not finish");
  }
  if (!options.model_sha256.empty() && options.model_sha256 != v.final_model_sha256) {
    std::string named;
    for (const auto& [shard, name] : tensor_of) {
      auto in_model = options.tensor_sha256.find(name);
      auto final_version = final_sha256.find(shard);
      if (final_version == final_sha256.end()) continue;
      if (in_model == options.tensor_sha256.end()) {
        named += fmt::format("; tensor '{}' (shard '{}') is missing", name, shard);
      } else if (in_model->second != final_version->second) {
        named += fmt::format(
            "; tensor '{}' is not shard '{}''s final version (SHA-256 {}, the "
            "job_end's {})",
            name, shard, in_model->second.substr(0, 16), final_version->second.substr(0, 16));
      }
    }
    return bad(v.records, fmt::format("the model's SHA-256 is {}, the job_end record's final "
                                      "model is {}{}",
                                      options.model_sha256.substr(0, 16),
                                      v.final_model_sha256.substr(0, 16), named));
  }
  v.ok = true;
  return v;
}

}  // namespace acan::runtime
