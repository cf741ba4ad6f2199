// MemSpace: the in-process tuple space behind "mem:" (the default backend).
//
// One mutex guards a TupleIndex. A blocked Get/Take registers a waiter with its pattern; a Put
// signals the first unsignaled waiter whose pattern matches the new key, so wake-ups need no
// polling and one tuple wakes one waiter. The notification happens after the mutex is released
// (the putter holds a reference to the waiter, so it cannot vanish), and statistics are
// lock-free, which keeps the critical section to the index work alone. Values are shared, never
// copied. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "acan/space.h"
#include "space/mem/tuple_index.h"
#include "space/space_stats_internal.h"

namespace acan::mem {

class MemSpace final : public Space {
 public:
  MemSpace(std::string uri, SpaceOptions options);
  ~MemSpace() override;

  using Space::Get;
  using Space::Put;
  using Space::Read;
  using Space::ReadAll;
  using Space::Take;
  Status Put(Key key, Value value, Deadline deadline) override;
  Status PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) override;
  Result<std::optional<Tuple>> Read(const Pattern& pattern) override;
  Result<Tuple> Get(const Pattern& pattern, Deadline deadline) override;
  Result<std::vector<Tuple>> Take(const Pattern& pattern, size_t max_count,
                                  Deadline deadline) override;
  Result<std::vector<Tuple>> ReadAll(const Pattern& pattern, size_t limit) override;
  Result<Cell> ReadCell(const Key& key) override;
  Result<uint64_t> SwapCell(const Key& key, Value value, uint64_t expected,
                            Deadline deadline) override;
  void Close() override;
  SpaceStats Stats() const override;
  const std::string& uri() const override { return uri_; }

 private:
  // Put, and when `fence` is set only while its cell is at its revision.
  Status PutChecked(Key key, Value value, const Fence* fence, Deadline deadline);
  struct Waiter : std::enable_shared_from_this<Waiter> {
    const Pattern* pattern = nullptr;
    std::condition_variable cv;
    bool signaled = false;   // GUARDED_BY(mu_)
    Waiter* prev = nullptr;  // GUARDED_BY(mu_): the waiter list
    Waiter* next = nullptr;
  };
  // A waiter for the calling thread, reused when no putter still holds it.
  static std::shared_ptr<Waiter> ThreadWaiter();
  // Calls `try_take` (which returns the number of tuples it took) until it takes something,
  // waiting for matching puts until the deadline. REQUIRES: `lock` holds mu_.
  template <typename TryTake>
  Status WaitAndTake(std::unique_lock<std::mutex>& lock, const Pattern& pattern, Deadline deadline,
                     SpaceOp op, TryTake try_take);
  // The first unsignaled waiter matching `key`, marked signaled; notify it after unlocking.
  std::shared_ptr<Waiter> SignalWaiterLocked(const Key& key);
  void LinkWaiterLocked(Waiter* w);
  void UnlinkWaiterLocked(Waiter* w);
  Status CancelledStatus() const;

  const std::string uri_;
  const SpaceOptions options_;
  alignas(64) mutable std::mutex mu_;
  TupleIndex index_;                             // GUARDED_BY(mu_)
  std::unordered_map<std::string, Cell> cells_;  // GUARDED_BY(mu_)
  uint64_t cell_revision_ = 0;      // the last revision given to any cell; GUARDED_BY(mu_)
  uint64_t bytes_ = 0;              // GUARDED_BY(mu_)
  bool closed_ = false;             // GUARDED_BY(mu_)
  Waiter* waiters_head_ = nullptr;  // GUARDED_BY(mu_); oldest first
  Waiter* waiters_tail_ = nullptr;  // GUARDED_BY(mu_)
  std::condition_variable room_;    // signalled when bytes are freed or on close
  int room_waiters_ = 0;            // GUARDED_BY(mu_)
  uint64_t waiting_ = 0;            // blocked getters now; GUARDED_BY(mu_)
  uint64_t wakeups_ = 0;  // returns from a getter's wait but its deadline; GUARDED_BY(mu_)
  // Written under mu_, read by spinning getters without it: on a cache line of its own, so the
  // spinners do not pull the mutex's line away from the thread holding it.
  alignas(64) std::atomic<uint64_t> puts_{0};
  StatsRecorder stats_;  // lock-free
};

// Registers the "mem" scheme; called once by the registry.
Status RegisterMemSpace();

}  // namespace acan::mem
