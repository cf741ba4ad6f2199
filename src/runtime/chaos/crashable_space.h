// CrashableSpace: one process's view of the space, which dies with it. Once the crash flag is
// set, or the kill time has passed, every call fails with Cancelled, and what a call in progress
// took is lost with it, as when the process is killed by a signal at that instruction. It can
// also be killed at its n-th write, a crash point that a seed replays whatever the timing. The
// in-process runtime gives each manager incarnation one, so an injected crash stops its writes
// at once instead of at its next look at the flag. It also counts the calls made through it.
// Thread-safe.
#pragma once

#include <atomic>
#include <climits>
#include <functional>

#include "acan/space.h"
#include "space/space_wrapper.h"

namespace acan::runtime {

class CrashableSpace final : public SpaceWrapper {
 public:
  // REQUIRES: `inner` and `crashed` outlive this space.
  CrashableSpace(Space* inner, const std::atomic<bool>* crashed);

  // From `at` on, this view is dead as if `crashed` were set.
  void KillAt(Clock::time_point at) { kill_at_ns_.store(at.time_since_epoch().count()); }
  // The view dies at its `n`-th write from now (a put or a cell swap, before it lands, or a take or
  // get that removed tuples, after they were removed: lost with the process), calling `on_kill`
  // once: a crash point given by a count, which a seed can replay, rather than by the clock.
  void KillAtWrite(int64_t n, std::function<void()> on_kill = nullptr);
  // Writes made through this view so far.
  int64_t writes() const { return writes_.load(std::memory_order_relaxed); }
  // True once calls fail: the crash flag is set or the kill time has passed.
  bool dead() const { return !Alive().ok(); }
  // Calls made through this view so far.
  int64_t calls() const { return calls_.load(std::memory_order_relaxed); }

  using Space::Erase;
  using Space::Get;
  using Space::Put;
  using Space::Read;
  using Space::ReadAll;
  using Space::ReadKeys;
  using Space::Take;
  Status Put(Key key, Value value, Deadline deadline) override;
  Status PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) override;
  Result<std::optional<Tuple>> Read(const Pattern& p) override;
  Result<Tuple> Get(const Pattern& p, Deadline d) override;
  Result<std::vector<Tuple>> Take(const Pattern& p, size_t n, Deadline d) override;
  Result<std::vector<Tuple>> ReadAll(const Pattern& p, size_t limit) override;
  Result<std::vector<Key>> ReadKeys(const Pattern& p, size_t limit) override;
  Result<Cell> ReadCell(const Key& key) override;
  // A write (see KillAtWrite), which dies before it lands.
  Result<uint64_t> SwapCell(const Key& key, Value value, uint64_t expected,
                            Deadline deadline) override;
  // Through Take, which this view watches (the inner space's own Erase would bypass it).
  Result<size_t> Erase(const Pattern& p) override { return Space::Erase(p); }
  void Close() override {}  // the space outlives a process's view of it

 private:
  // Counts a call; Cancelled once this view is dead.
  Status Enter();
  Status Alive() const;
  // Counts a write; Cancelled (and the view dead) when it is the one to die at.
  Status Write();

  const std::atomic<bool>* crashed_;
  std::atomic<Clock::rep> kill_at_ns_{Clock::time_point::max().time_since_epoch().count()};
  std::atomic<int64_t> calls_{0};
  std::atomic<int64_t> writes_{0};
  std::atomic<int64_t> kill_at_write_{INT64_MAX};
  std::atomic<bool> killed_{false};
  std::function<void()> on_kill_;  // set before the calls it may fire on
};

}  // namespace acan::runtime
