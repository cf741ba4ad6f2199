// FaultSpace: a space wrapper that drops, duplicates, delays, reorders and tampers with the puts
// of chosen keys at seeded rates, as an unreliable network, a crashing peer or a forger would.
// Used by the tests and the chaos experiments (LevelDB's fault-injection Env, for a tuple space).
// Reads and takes pass through, except that a tampered tuple is never returned: as the NATS
// space does with a chunked value whose chunks are not its writer's, a read of it fails with a
// DataLoss that IsTampered() recognises, and a take removes it and fails the same way (a pouch
// keeps the others). A cell swap, which the caller waits for, is hit as such a call would be: a
// drop loses the request (not applied, Unavailable), a duplicate loses the answer (applied,
// Unavailable), a delay or a reorder holds it back `delay_by` before it is applied (nothing
// overtakes a call its caller waits for).
//
// Replayable: whether the n-th put of a key is hit, and how, is a function of (seed, key, n)
// alone, not of the order in which threads reach the wrapper, so a seed gives the same faults on
// the same tuples however the run's threads interleave (as long as they put the same keys the
// same number of times). It keeps a count for every key put through it, so it is for runs of
// bounded length (tests, experiments), not for a long-lived space. Thread-safe; the counters may
// be read while it runs.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "acan/space.h"
#include "common/thread_annotations.h"
#include "space/space_wrapper.h"

namespace acan {

enum class Fault { kNone, kDrop, kDuplicate, kDelay, kReorder, kTamper };

struct FaultOptions {
  std::vector<std::string> patterns;  // keys whose puts may be hit; empty: every key
  double drop = 0;                    // probability a put is lost (it still reports OK)
  double duplicate = 0;               // probability a put is stored twice
  double delay = 0;                   // probability a put is stored only after `delay_by`
  // Probability a put is held back until the next hit put has landed (or `delay_by` has passed,
  // whichever comes first): two puts land in the opposite order from the one they were made in.
  double reorder = 0;
  // Probability a put is stored with bytes that are not its writer's (a forged chunk).
  double tamper = 0;
  std::chrono::milliseconds delay_by{5};
  uint64_t seed = 1;

  // What happens to the `attempt`-th put (from 0) of `key`: the same for the same arguments.
  Fault Decide(const std::string& key, int64_t attempt) const;
};

struct FaultCounts {
  std::atomic<int64_t> dropped{0};
  std::atomic<int64_t> duplicated{0};
  std::atomic<int64_t> delayed{0};
  std::atomic<int64_t> reordered{0};
  std::atomic<int64_t> tampered{0};
  int64_t total() const { return dropped + duplicated + delayed + reordered + tampered; }

  // The keys whose puts were tampered with (what a reader's refusal may name).
  void AddTampered(const std::string& key) {
    MutexLock lock(mu);
    tampered_keys.insert(key);
  }
  bool WasTampered(const std::string& key) {
    MutexLock lock(mu);
    return tampered_keys.contains(key);
  }

 private:
  Mutex mu;
  std::set<std::string> tampered_keys GUARDED_BY(mu);
};

class FaultSpace final : public SpaceWrapper {
 public:
  // REQUIRES: options' patterns are valid patterns.
  FaultSpace(std::unique_ptr<Space> inner, FaultOptions options,
             std::shared_ptr<FaultCounts> counts = std::make_shared<FaultCounts>());
  ~FaultSpace() override;

  using Space::Get;
  using Space::Put;
  using Space::Read;
  using Space::ReadAll;
  using Space::Take;
  Status Put(Key key, Value value, Deadline deadline) override;
  Result<std::optional<Tuple>> Read(const Pattern& p) override;
  Result<Tuple> Get(const Pattern& p, Deadline d) override;
  Result<std::vector<Tuple>> Take(const Pattern& p, size_t n, Deadline d) override;
  Result<std::vector<Tuple>> ReadAll(const Pattern& p, size_t limit) override;
  // The same faults as a put's; a delayed or reordered one is checked against its fence when it
  // lands (a put in flight while another writer swaps the cell).
  Status PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) override;
  bool AcknowledgesPuts() const override { return false; }  // it drops and delays them
  Result<uint64_t> SwapCell(const Key& key, Value value, uint64_t expected,
                            Deadline deadline) override;
  void Close() override;

  const FaultCounts& counts() const { return *counts_; }

 private:
  struct Delayed {
    Clock::time_point at;
    Key key;
    Value value;
    std::optional<Fence> fence;
    bool operator>(const Delayed& o) const { return at > o.at; }
  };
  Status PutWithFaults(Key key, Value value, const Fence* fence, Deadline deadline);
  // The put itself, to the inner space.
  Status Land(Key key, Value value, const Fence* fence, Deadline deadline);
  void DeliverDelayed();
  // Lands the put held back for reordering, if any.
  void ReleaseHeld();
  bool IsTamperedValue(const Value& v);
  Status TamperedStatus(const Key& key) const;

  std::unique_ptr<Space> owned_;
  FaultOptions options_;
  std::vector<Pattern> patterns_;
  std::shared_ptr<FaultCounts> counts_;
  Mutex mu_;
  std::unordered_map<std::string, int64_t> attempts_ GUARDED_BY(mu_);
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<>> delayed_ GUARDED_BY(mu_);
  std::optional<Delayed> held_ GUARDED_BY(mu_);  // a put held back for reordering
  CondVar delayed_cv_;
  bool closing_ GUARDED_BY(mu_) = false;
  // The values stored tampered, kept alive so that their buffers are not reused by later puts.
  std::vector<Value> tampered_ GUARDED_BY(mu_);
  std::unordered_set<const std::byte*> tampered_at_ GUARDED_BY(mu_);
  std::thread delivery_;
};

}  // namespace acan
