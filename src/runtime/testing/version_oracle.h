// VersionOracle: an account of the exactly-once claim kept apart from the code that makes it.
// A space wrapper records every parameter or velocity version that lands in the space
// (<job>.p.<shard>.v<n>) and every proposal (<job>.u.<shard>.s<step>), with a hash of its bytes
// and the order in which they landed; Check then holds the run to DESIGN.md section 5 without
// asking the manager: each shard's versions 0..final were each written, in order, with one
// content each (a copy of the same bytes, a write made again, is not a second update: counted
// apart), and version n is bitwise a proposal of step n - 1 that had landed before it. It also
// reads every task that lands and checks the versions it is told to read against the window W: an
// update of step s reads exactly version s, any other task of step s a version in [s - W + 1, s].
// The manager's own counters (gaps, repeats) are not consulted. A long run's account stays
// bounded: once a shard has 2 * kKeep versions on record, the oldest are checked as above (the
// first failure kept for Check) and forgotten but for their count; a version landing again after
// it was forgotten cannot be compared with its first bytes and fails the check. Thread-safe: the
// wrapper may be called from any number of threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "acan/job.h"
#include "acan/space.h"
#include "common/thread_annotations.h"
#include "runtime/core/layout.h"

namespace acan::runtime {

class VersionOracle {
 public:
  VersionOracle(const std::string& job, int64_t window) : layout_(job), window_(window) {}

  // A space that forwards to `inner` and tells this oracle what lands there. Wrap the space the
  // faults act on top of, so a dropped put never counts. REQUIRES: the oracle outlives it.
  std::unique_ptr<Space> Wrap(std::unique_ptr<Space> inner);

  // Records a put that landed (tests may feed it directly).
  void OnPut(const Key& key, const Value& value) { (void)Record(key, value); }
  // What the wrapper calls: records a put about to be made, so that it counts as landed before
  // anyone can read it (its order: -1 when the key is not one the oracle follows), and takes the
  // record back if the put then fails.
  int64_t Record(const Key& key, const Value& value);
  void Unrecord(const Key& key, int64_t order);

  // OK when every shard in `shards` went through versions 0..final_version exactly as above;
  // otherwise DataLoss naming the first shard, version and what was wrong.
  Status Check(const std::vector<std::string>& shards, int64_t final_version) const;
  // The same for every shard of `job`'s plan (partition of `task_size` over `rows` rows, momentum
  // shards included) after `total_steps` steps.
  Status CheckJob(const JobConfig& job, int64_t task_size, int64_t rows, int64_t total_steps) const;

  int64_t versions_written() const;
  // Landings of a version beyond its first (the same bytes again: see Check).
  int64_t version_copies() const;
  int64_t proposals_seen() const;
  int64_t tasks_seen() const;

 private:
  static constexpr int64_t kKeep = 1024;
  struct Landed {
    int64_t number = 0;  // the version, or the step of a proposal
    uint64_t hash = 0;
    int64_t order = 0;  // when it landed, among everything recorded
  };
  // One shard's record: its recent versions and proposals, and a summary of those forgotten.
  struct ShardLog {
    std::vector<Landed> versions, proposals;
    int64_t verified = 0;     // versions [0, verified) were checked and forgotten
    int64_t last_order = -1;  // when version verified - 1 first landed
    int64_t forgotten = 0;    // landings of forgotten versions (copies included)
    int64_t forgotten_copies = 0;
    int64_t forgotten_proposals = 0;
  };
  void CheckTask(const ParsedKey& task, const Value& value);
  // Checks `log`'s versions from `verified` up to (not including) `upto`; the next version to
  // check and when the last checked first landed in *next, *next_order.
  static Status Verify(const std::string& shard, const ShardLog& log, int64_t upto, int64_t* next,
                       int64_t* next_order);
  // Checks and forgets `log`'s oldest versions once it holds 2 * kKeep.
  void CompactLocked(const std::string& shard, ShardLog& log) REQUIRES(mu_);

  Layout layout_;
  int64_t window_;
  mutable Mutex mu_;
  int64_t tasks_ GUARDED_BY(mu_) = 0;
  std::string window_violation_ GUARDED_BY(mu_);  // the first
  int64_t next_order_ GUARDED_BY(mu_) = 0;
  std::map<std::string, ShardLog> shards_ GUARDED_BY(mu_);
  std::string forgotten_failure_ GUARDED_BY(mu_);  // the first, in versions forgotten
};

}  // namespace acan::runtime
