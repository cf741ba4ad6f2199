// The audit log: an append-only, hash-chained record of a job's critical operations, kept in the
// space as cells <job>.audit.a<seq> (Layout::AuditRecord; over NATS the cells stream, which no
// role may delete from or purge, and only a manager may write) and copied to RUN_DIR/audit.jsonl
// by whoever finishes the job.
//
// A record is one JSON object: seq (1, 2, ...), time (UTC, RFC 3339), kind, by (the writer: a
// manager's name), the kind's fields, prev (the previous record's hash; 64 zeros for the first)
// and hash: the SHA-256 of the record's canonical encoding without "hash" and "sig" (JSON with
// keys sorted and no whitespace, as nlohmann::json::dump() writes it). A log with a signer (a
// secure deployment's manager key, audit_signature.h) adds "signer" (its certificate, under the
// hash) and "sig" (its signature of the hash) to every record. Kinds:
//   job_start       config_sha256 (of the job file as made), initial_model_sha256
//   lease           the writer took the job's lease (takeover: a predecessor held it), and the
//                   versions it found, each with its content's SHA-256
//   versions        steps [first, last]: the versions written in those steps (64 of them,
//                   Manager::kAuditStepsPerRecord, or fewer at the end), each shard's as
//                   {shard, from, version, sha256}: versions from..version, the last one's
//                   content SHA-256 (from is left out when it is the version); in numbered
//                   parts ("part": "i/n") when they do not fit one cell. Versions a manager
//                   wrote after its last record are in its successor's lease record.
//   handler_joined, handler_left   handler (id), incarnation (joined)
//   permission_refused             what the server refused, to whom (from the server's log)
//   tampering       key, what: a handler's output refused because its bytes were not its
//                   writer's (IsTampered), and made again
//   job_end         final_model_sha256 (nn::ModelSha256: the safetensors file's tensors), steps,
//                   versions_applied, and versions: every shard's final version with its SHA-256,
//                   and tensors: the model tensor each parameter shard is ({shard: name})
// Appending is a compare-and-set of the next sequence number's cell, so several writers (a
// manager and its successor, a supervisor) extend one chain and none overwrites another; nothing
// is appended after a job_end. Records are hashed and written by a thread of the log, off the
// caller's path; WaitWritten bounds how far behind it may be. Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "acan/space.h"
#include "common/thread_annotations.h"
#include "runtime/audit/audit_signature.h"
#include "runtime/core/layout.h"
#include "runtime/state/version_store.h"

namespace acan::runtime {

// SHA-256 (hex) of a value's bytes.
std::string ValueSha256(const Value& value);

class AuditLog {
 public:
  // REQUIRES: `space` and `layout` outlive the log. With `signer`, every record is signed.
  AuditLog(Space* space, const Layout* layout, std::string writer,
           std::shared_ptr<const AuditSigner> signer = nullptr);
  ~AuditLog();  // writes what is queued
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Queues a record; returns its ticket (for WaitWritten).
  int64_t Append(std::string kind, nlohmann::json fields);
  // Queues a record whose field `versions` lists each version as {shard, version, sha256}, its
  // content hashed on the log's thread (unless it is hashed already); without `hash`, as {shard,
  // version}.
  // `from`: a shard's first version of a range the record covers, its entry's "from" (when it
  // is not the version itself).
  int64_t AppendVersions(std::string kind, nlohmann::json fields,
                         std::vector<WrittenVersion> versions, bool hash = true,
                         std::map<std::string, int64_t> from = {});
  // Waits until every record up to `ticket` is in the space (or dropped: after a job_end, or on
  // an error, which it returns). 0: nothing to wait for.
  Status WaitWritten(int64_t ticket);
  Status Flush() { return WaitWritten(last_ticket()); }

 private:
  struct Pending {
    int64_t ticket;
    std::string kind;
    nlohmann::json fields;
    std::vector<WrittenVersion> versions;
    std::string time;
    bool hash = true;
    std::map<std::string, int64_t> from;
  };
  int64_t last_ticket() const EXCLUDES(mu_);
  void Loop() EXCLUDES(mu_);
  Status Write(Pending p);
  Status WriteRecord(const std::string& kind, nlohmann::json fields, const std::string& time);
  // Finds the chain's last record in the space: head_seq_, head_hash_, ended_.
  Status FindHead();

  Space* space_;
  const Layout* layout_;
  const std::string writer_;
  const std::shared_ptr<const AuditSigner> signer_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<Pending> queue_ GUARDED_BY(mu_);
  int64_t next_ticket_ GUARDED_BY(mu_) = 1;
  int64_t written_ GUARDED_BY(mu_) = 0;  // every ticket up to it is done
  Status error_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  // The log thread's own.
  bool head_known_ = false;
  int64_t head_seq_ = 0;
  std::string head_hash_;
  bool ended_ = false;
  std::thread thread_;
};

// Whether the chain in the space ends with a job_end (nothing may follow it): a probe of the
// record count and a read of the last record, not a walk of the chain.
Result<bool> AuditChainEnded(Space* space, const Layout& layout);
// The chain's records in the space, in order, one JSON line each.
Result<std::vector<std::string>> ReadAuditChain(Space* space, const Layout& layout);
// Writes them to `path` (through a temporary file).
Status WriteAuditFile(Space* space, const Layout& layout, const std::string& path);

// An audit.jsonl's lines (a final newline ends the last line; none is needed). A file over
// Limits().audit_file_bytes is ResourceExhausted, before it is read.
Result<std::vector<std::string>> ReadAuditFile(const std::string& path);

struct AuditVerifyOptions {
  std::string model_sha256;  // the model's (nn::TensorsSha256): must be the job_end's
  // The model's tensors by name, each one's SHA-256: a tensor that is not its shard's final
  // version (the job_end's) is named.
  std::map<std::string, std::string> tensor_sha256;
  // The deployment's CA: every record must be signed by a manager certificate it issued.
  std::string ca_file;
};

struct AuditVerdict {
  bool ok = false;
  int64_t records = 0;
  int64_t line = 0;                      // the first bad line (1-based), 0 when ok
  std::string problem;                   // what is wrong with it
  std::string final_model_sha256;        // the job_end record's
  std::map<std::string, int64_t> kinds;  // records by kind
};
// Checks a chain: every line a record whose hash is its content's, seq 1, 2, ... in order, each
// prev the hash of the line before, the last one a job_end; with the options' model, that it is
// the job_end's final model (naming each tensor that is not its shard's final version); with a
// CA, that every record is signed by one of its manager certificates.
AuditVerdict VerifyAuditLines(const std::vector<std::string>& lines,
                              const AuditVerifyOptions& options = {});

}  // namespace acan::runtime
