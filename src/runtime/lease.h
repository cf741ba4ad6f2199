// The manager's lease: one token tuple (<job>.m.lease) naming the active manager and when its
// lease lapses. A manager takes the token and puts it back to look at or renew it, so two managers
// can never both renew it; a standby takes it only once it has lapsed (DESIGN.md section 4).
//
// A manager killed between taking the token and putting it back loses it: a standby that finds no
// token for two lease periods puts a lapsed one back. Should the killed one have been only paused
// and put its token back later, two tokens exist for a while: whoever takes the token next takes
// every copy and keeps the one that lapses last. Not thread-safe: one manager uses one Lease.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include "acan/space.h"
#include "runtime/env.h"
#include "runtime/messages.h"

namespace acan::runtime {

class Lease {
 public:
  // REQUIRES: `space` (and `env`) outlive the lease. Times come from `env` (null: the default),
  // so a test drives them.
  Lease(Space* space, std::string key, std::string owner, std::chrono::milliseconds duration,
        const Env* env = nullptr);

  // Puts a free (lapsed) token: a new job's.
  static Status PutFree(Space* space, const std::string& key);

  // Waits as a standby until the token is free or ours, then takes it. Cancelled when `stop`
  // is set meanwhile.
  Status Acquire(const std::atomic<bool>& stop);
  // Renews when a third of the lease has passed since the last renewal: called before every write
  // only the active manager may make, and often during long work, so that the lease never lapses
  // under a live manager. Unavailable when another manager holds it now.
  Status Keep();
  Status Renew();

  // True when Acquire took over from another manager (not a lapsed token of its own or a new one).
  bool took_over() const { return took_over_; }
  // When Keep() renews next.
  Clock::time_point renew_at() const { return renew_at_; }

 private:
  // Takes the token with any duplicates; the one that lapses last, or none by the deadline.
  Result<std::optional<LeaseMessage>> Take(Deadline deadline);
  Status PutOurs();
  // Puts a token back (read back until it is there: runtime/confirmed_put.h).
  Status PutToken(const LeaseMessage& m);
  int64_t NowMs() const;  // the wall clock, as the token's expiry

  Space* space_;
  std::string key_;
  std::string owner_;
  std::chrono::milliseconds duration_;
  const Env* env_;
  bool took_over_ = false;
  Clock::time_point renew_at_;
  int64_t expires_ms_ = 0;  // our lease's end, wall clock
};

}  // namespace acan::runtime
