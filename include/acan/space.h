// The tuple space (ACAN): a multiset of (key, value) tuples shared by the manager and handlers.
//
// Contract (DESIGN.md section 3; every backend passes one conformance suite):
//  - Put is Linda's `out`: equal keys coexist, nothing is silently dropped. At the total-bytes
//    limit Put waits (back-pressure) until its deadline, then fails with ResourceExhausted.
//  - Read is non-blocking and returns the oldest match, or nothing. Get takes the oldest match,
//    waiting until the deadline (Timeout). Take takes up to n matches (a pouch), waiting for the
//    first one; ReadAll returns every match, ReadKeys their keys alone. Among matches, insertion
//    order. Erase removes every match without returning it (a put racing with it may or may not
//    be removed).
//  - Beside the tuples a space keeps cells: one value a key, changed only by a compare-and-set on
//    its revision (SwapCell), so that of two writers who saw the same revision exactly one wins,
//    across every client of the space. Cells are for small records that need that (the manager's
//    lease); a cell and tuples under the same key never meet (no tuple call sees a cell).
//  - A fenced put (PutFenced) stores a tuple only while a cell is still at a revision the writer
//    names, checked where the tuple is stored: a writer that lost the cell (a manager paused past
//    its lease, whose successor swapped it) is refused even for a put it sent before the swap.
//  - Close wakes every waiter with Cancelled; afterwards every call fails with Cancelled.
//  - A Space is thread-safe: any number of threads may call any method concurrently.
// Backends are opened by URI ("mem:", "nats://host:port") through a registry keyed by scheme.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acan/clock.h"
#include "acan/export.h"
#include "acan/key.h"
#include "acan/status.h"
#include "acan/value.h"

namespace acan {

struct Tuple {
  Key key;
  Value value;
};

// A cell's value and revision. Revisions of a cell only grow, one step or more with each change;
// revision 0 means there is no cell.
struct Cell {
  Value value;
  uint64_t revision = 0;
};

// A cell at a revision, as the condition of a fenced put.
struct Fence {
  Key cell;
  uint64_t revision = 0;
};

// The largest value a cell holds.
inline constexpr size_t kMaxCellBytes = size_t{64} << 10;

struct SpaceOptions {
  // Largest value Put accepts; larger ones fail at once with ResourceExhausted.
  size_t max_value_bytes = size_t{64} << 20;
  // Total bytes of stored values before Put waits for room; 0 means no limit.
  size_t max_total_bytes = size_t{8} << 30;
  // mem: how many pause instructions a getter that found nothing spends watching for a put
  // before it blocks (0: block at once, the default). Spinning can save a wake-up when puts come
  // within microseconds; on the virtual machines measured (docs/benchmarks.md) it made the
  // blocked path five times slower (a spinning vCPU gets descheduled) and throughput no better.
  size_t spin = 0;
  // Keys of the tuples put fenced and of the cells that fence them (Space::PutFenced): a backend
  // that checks a fence where it stores the tuple may keep these apart from the rest (NATS: one
  // stream of their own, so that the server checks the cell). Every client of a space opens it
  // with the same patterns (the runtime's are Layout::FencedKeys()); empty: nothing is fenced.
  std::vector<Pattern> fenced;
};

// A latency histogram with power-of-two buckets: bucket i counts latencies in [2^i, 2^(i+1)) ns.
struct ACAN_EXPORT LatencyHistogram {
  static constexpr size_t kBuckets = 48;
  std::array<uint64_t, kBuckets> counts{};
  uint64_t total = 0;
  uint64_t sum_ns = 0;  // of every latency recorded
  void Record(uint64_t ns);
  // An upper bound of the q-quantile (0 < q <= 1) in nanoseconds; 0 when empty.
  uint64_t QuantileNs(double q) const;
};

enum class SpaceOp {
  kPut,
  kRead,
  kGet,
  kTake,
  kReadAll,
  kErase,
  kReadCell,
  kSwapCell,
  kReadKeys,
  kCount
};
ACAN_EXPORT std::string_view SpaceOpName(SpaceOp op);

struct SpaceStats {
  uint64_t tuples = 0;  // stored now
  uint64_t bytes = 0;   // value bytes stored now
  std::array<uint64_t, size_t(SpaceOp::kCount)> calls{};
  std::array<LatencyHistogram, size_t(SpaceOp::kCount)> latency{};  // whole call, waits included
  uint64_t tuples_taken = 0;
  uint64_t timeouts = 0;
  uint64_t cancelled = 0;
  uint64_t rejected = 0;  // invalid or oversize input, and ResourceExhausted
  // Blocked Get/Take calls: how many are waiting now, and how often one was woken by a put or a
  // Close (not by its deadline). One put wakes at most one waiter (0 where a backend cannot say).
  uint64_t waiting = 0;
  uint64_t wakeups = 0;
  // Value bytes this client handed to the space and got back from it (reads and takes): over a
  // network backend, what crossed the wire to and from the server, headers aside.
  uint64_t bytes_put = 0;
  uint64_t bytes_returned = 0;
  // Values refused because their bytes were not their writer's (IsTampered): a chunk written or
  // changed by someone else. Always 0 in process.
  uint64_t tampered = 0;
};

// True for a DataLoss that says a value's bytes are not the ones its writer wrote: over NATS, a
// chunked value whose chunks do not hash to the SHA-256 its tuple carries. Such a value is never
// returned; the call fails with this status and the space logs the subject.
ACAN_EXPORT bool IsTampered(const Status& status);

class ACAN_EXPORT Space {
 public:
  virtual ~Space() = default;
  Space() = default;
  Space(const Space&) = delete;
  Space& operator=(const Space&) = delete;

  virtual Status Put(Key key, Value value, Deadline deadline = Deadline::Infinite()) = 0;
  // Put, only while the cell `fence.cell` is still at `fence.revision` when the space stores the
  // tuple; FailedPrecondition naming the revision found when it is not, and nothing stored. Ok
  // means stored (as a put that AcknowledgesPuts). The default checks the cell, then puts: a put
  // on its way while another writer swaps the cell can still land; mem: and NATS check where
  // they store (NATS: both keys must match SpaceOptions::fenced, else InvalidArgument).
  virtual Status PutFenced(Key key, Value value, const Fence& fence,
                           Deadline deadline = Deadline::Infinite());
  virtual Result<std::optional<Tuple>> Read(const Pattern& pattern) = 0;
  virtual Result<Tuple> Get(const Pattern& pattern, Deadline deadline) = 0;
  // Waits until at least one tuple matches (or Timeout), then takes up to `max_count` matches.
  virtual Result<std::vector<Tuple>> Take(const Pattern& pattern, size_t max_count,
                                          Deadline deadline) = 0;
  // Every match (at most `limit`), oldest first; non-blocking.
  virtual Result<std::vector<Tuple>> ReadAll(const Pattern& pattern, size_t limit = SIZE_MAX) = 0;
  // The keys of every match (at most `limit`), oldest first, without their values; non-blocking.
  // What a look for which tuples exist needs: over NATS only the tuples' heads cross the wire,
  // not a chunked value's bytes (nor are those bytes checked, as a read of them is). The default
  // reads the matches (ReadAll) and keeps their keys.
  virtual Result<std::vector<Key>> ReadKeys(const Pattern& pattern, size_t limit = SIZE_MAX);
  // Removes every match present when called, without returning the values; non-blocking; how
  // many it removed. The default takes them; a backend that can drop tuples where they are
  // stored, without moving their values (NATS: a purge), overrides it.
  virtual Result<size_t> Erase(const Pattern& pattern);
  // True when a Put that returns Ok is known to be stored (a JetStream acknowledgement), so
  // reading it back to confirm it landed (what the runtime does for writes it cannot lose) tells
  // nothing more. False by default: a put may land late or be lost after returning Ok.
  virtual bool AcknowledgesPuts() const { return false; }
  // The cell under `key` (revision 0 and no value when there is none); non-blocking.
  virtual Result<Cell> ReadCell(const Key& key) = 0;
  // Sets the cell under `key` to `value` if its revision is still `expected` (0: there is no cell
  // yet) and returns the new revision. FailedPrecondition, naming the revision found, when it is
  // not (another writer changed it first); ResourceExhausted for a value over kMaxCellBytes. A
  // swap whose outcome the client could not learn before `deadline` (a lost server) is
  // Unavailable: it may or may not have happened, and ReadCell tells which.
  virtual Result<uint64_t> SwapCell(const Key& key, Value value, uint64_t expected,
                                    Deadline deadline) = 0;
  virtual void Close() = 0;
  virtual SpaceStats Stats() const = 0;
  virtual const std::string& uri() const = 0;

  // Conveniences that parse the key or pattern first (InvalidArgument on bad syntax).
  Status Put(std::string_view key, Value value, Deadline deadline = Deadline::Infinite());
  Result<std::optional<Tuple>> Read(std::string_view pattern);
  Result<Tuple> Get(std::string_view pattern, Deadline deadline);
  Result<std::vector<Tuple>> Take(std::string_view pattern, size_t max_count, Deadline deadline);
  Result<std::vector<Tuple>> ReadAll(std::string_view pattern, size_t limit = SIZE_MAX);
  // Conveniences for exactly one key (Pattern::Exactly): its tuples, oldest first.
  Result<std::optional<Tuple>> Read(const Key& key) { return Read(Pattern::Exactly(key)); }
  Result<std::vector<Tuple>> Take(const Key& key, size_t max_count, Deadline deadline) {
    return Take(Pattern::Exactly(key), max_count, deadline);
  }
  Result<std::vector<Tuple>> ReadAll(const Key& key, size_t limit = SIZE_MAX) {
    return ReadAll(Pattern::Exactly(key), limit);
  }
  Result<size_t> Erase(const Key& key) { return Erase(Pattern::Exactly(key)); }
  // Whether a tuple under `key` is in the space, without reading its value (ReadKeys).
  Result<bool> Contains(const Key& key) {
    ACAN_ASSIGN_OR_RETURN(std::vector<Key> keys, ReadKeys(Pattern::Exactly(key), 1));
    return !keys.empty();
  }
};

using SpaceFactory =
    std::function<Result<std::unique_ptr<Space>>(std::string_view uri, const SpaceOptions&)>;

// Opens a space by URI, e.g. "mem:" or "mem:?max_total_bytes=1048576". Unknown schemes and bad
// parameters are InvalidArgument naming them. URI parameters override `options`.
ACAN_EXPORT Result<std::unique_ptr<Space>> OpenSpace(std::string_view uri,
                                                     const SpaceOptions& options = {});

// Adds a backend; AlreadyExists when the scheme is taken. Thread-safe.
ACAN_EXPORT Status RegisterSpaceScheme(std::string scheme, SpaceFactory factory);

}  // namespace acan
