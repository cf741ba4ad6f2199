// The manager's lease: a cell of the space (<job>.m.lease) naming the active manager and when its
// lease lapses, changed only by a compare-and-set on the cell's revision (Space::SwapCell; over
// NATS the server checks the revision). A standby swaps it only once it has lapsed; the holder
// renews it by a swap from the revision of its own last write, which fails once anyone else has
// written it: of two managers, exactly one is active, even when one of them was paused past its
// lease and comes back (DESIGN.md section 4). Not thread-safe: one manager uses one Lease.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include "acan/space.h"
#include "runtime/core/messages.h"
#include "runtime/state/env.h"

namespace acan::runtime {

class Lease {
 public:
  // REQUIRES: `space` (and `env`) outlive the lease. Times come from `env` (null: the default),
  // so a test drives them.
  Lease(Space* space, Key key, std::string owner, std::chrono::milliseconds duration,
        const Env* env = nullptr);

  // Makes the lease free (no owner) for a new job, unless a manager holds it now: one that set up
  // the same new job at the same time and took it first. A lapsed lease an earlier job of the
  // same id left behind is freed.
  static Status PutFree(Space* space, const Key& key, const Env* env = nullptr);
  // Makes the lease lapse now if `owner` holds it: for a supervisor that saw that manager's
  // process die (waitpid), so that a standby takes over at its next look instead of when the
  // lease would have lapsed.
  // Nothing happens if another manager wrote the cell since.
  static Status FreeIfHeldBy(Space* space, const Key& key, const std::string& owner);

  // Waits as a standby until the lease is free or ours, then takes it. Cancelled when `stop`
  // is set meanwhile.
  Status Acquire(const std::atomic<bool>& stop);
  // Renews when a third of the lease has passed since the last renewal: called before every write
  // only the active manager may make, and often during long work, so that the lease never lapses
  // under a live manager. Unavailable when another manager holds it now.
  Status Keep();
  Status Renew();

  // True when Acquire took over from another manager (not a lapsed lease of its own or a new one).
  bool took_over() const { return took_over_; }
  // When Keep() renews next.
  Clock::time_point renew_at() const { return renew_at_; }
  // The cell's revision at this manager's last write of it (0 before Acquire): its fencing token.
  uint64_t revision() const { return revision_; }
  const Key& key() const { return key_; }
  // What a write the space refused for this lease's revision (a fenced put) means: Unavailable,
  // this manager lost the lease (to whom, when the cell says).
  Status Refused(const Status& refused) const;

 private:
  // Swaps our lease (expiring a lease from now) in place of revision `from`.
  Result<uint64_t> SwapOurs(uint64_t from, Deadline deadline);
  std::string Holder() const;  // who holds the lease now, in words
  int64_t NowMs() const;       // the wall clock, as the lease's expiry

  Space* space_;
  Key key_;
  std::string owner_;
  std::chrono::milliseconds duration_;
  const Env* env_;
  bool took_over_ = false;
  Clock::time_point renew_at_;
  int64_t expires_ms_ = 0;  // our lease's end, wall clock
  uint64_t revision_ = 0;
};

}  // namespace acan::runtime
