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
#include <memory>
#include <string>
#include <unordered_map>

#include "acan/space.h"
#include "common/thread_annotations.h"
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
  using Space::ReadKeys;
  using Space::Take;
  Status Put(Key key, Value value, Deadline deadline) override;
  Status PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) override;
  Result<std::optional<Tuple>> Read(const Pattern& pattern) override;
  Result<Tuple> Get(const Pattern& pattern, Deadline deadline) override;
  Result<std::vector<Tuple>> Take(const Pattern& pattern, size_t max_count,
                                  Deadline deadline) override;
  Result<std::vector<Tuple>> ReadAll(const Pattern& pattern, size_t limit) override;
  Result<std::vector<Key>> ReadKeys(const Pattern& pattern, size_t limit) override;
  Result<Cell> ReadCell(const Key& key) override;
  Result<uint64_t> SwapCell(const Key& key, Value value, uint64_t expected,
                            Deadline deadline) override;
  void Close() override;
  SpaceStats Stats() const override;
  const std::string& uri() const override { return uri_; }

 private:
  // Put, and when `fence` is set only while its cell is at its revision.
  Status PutChecked(Key key, Value value, const Fence* fence, Deadline deadline) EXCLUDES(mu_);
  // A waiter's fields but `cv` are guarded by the space's mu_, which an attribute cannot name
  // here (a Waiter is not the space): they are touched in functions that REQUIRE it, and by
  // ThreadWaiter in a waiter no other thread holds.
  struct Waiter : std::enable_shared_from_this<Waiter> {
    const Pattern* pattern = nullptr;
    CondVar cv;
    bool signaled = false;
    Waiter* prev = nullptr;  // the waiter list
    Waiter* next = nullptr;
  };
  // A waiter for the calling thread, reused when no putter still holds it.
  static std::shared_ptr<Waiter> ThreadWaiter();
  // Calls `try_take` (which returns the number of tuples it took) until it takes something,
  // waiting for matching puts until the deadline (mu_ is let go while it waits or spins).
  // `try_take` is called with mu_ held: a lambda that says REQUIRES(mu_).
  template <typename TryTake>
  Status WaitAndTake(const Pattern& pattern, Deadline deadline, SpaceOp op, TryTake try_take)
      REQUIRES(mu_);
  // The first unsignaled waiter matching `key`, marked signaled; notify it after unlocking.
  std::shared_ptr<Waiter> SignalWaiterLocked(const Key& key) REQUIRES(mu_);
  void LinkWaiterLocked(Waiter* w) REQUIRES(mu_);
  void UnlinkWaiterLocked(Waiter* w) REQUIRES(mu_);
  Status CancelledStatus() const;

  const std::string uri_;
  const SpaceOptions options_;
  alignas(64) mutable Mutex mu_;
  TupleIndex index_ GUARDED_BY(mu_);
  std::unordered_map<std::string, Cell> cells_ GUARDED_BY(mu_);
  uint64_t cell_revision_ GUARDED_BY(mu_) = 0;  // the last revision given to any cell
  uint64_t bytes_ GUARDED_BY(mu_) = 0;
  bool closed_ GUARDED_BY(mu_) = false;
  Waiter* waiters_head_ GUARDED_BY(mu_) = nullptr;  // oldest first
  Waiter* waiters_tail_ GUARDED_BY(mu_) = nullptr;
  CondVar room_;  // signalled when bytes are freed or on close
  int room_waiters_ GUARDED_BY(mu_) = 0;
  uint64_t waiting_ GUARDED_BY(mu_) = 0;  // blocked getters now
  uint64_t wakeups_ GUARDED_BY(mu_) = 0;  // returns from a getter's wait but its deadline
  // Written under mu_, read by spinning getters without it: on a cache line of its own, so the
  // spinners do not pull the mutex's line away from the thread holding it.
  alignas(64) std::atomic<uint64_t> puts_{0};
  StatsRecorder stats_;  // lock-free
};

// Registers the "mem" scheme; called once by the registry.
Status RegisterMemSpace();

}  // namespace acan::mem
