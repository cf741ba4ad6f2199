// Liveness: who is running a task, as the space tells it. A handler holds a claim tuple while it
// runs a task (<job>.claim.<task>.h<id>: its incarnation and when the claim lapses) and announces
// each incarnation (<job>.alive.h<id>); a supervisor that sees a handler die withdraws its alive
// tuple and leaves a restart notice where the manager waits for done reports. From these the
// manager tells a slow task (a live claim: wait) from a lost one (send again) long before a
// generous timeout would. Liveness is not thread-safe (one manager uses one); AnnounceDeath and
// PutRestartNotice may be called from any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acan/space.h"
#include "runtime/core/layout.h"
#include "runtime/core/records.h"
#include "runtime/state/env.h"

namespace acan::runtime {

class Liveness {
 public:
  // REQUIRES: `space`, `layout` and `env` outlive it.
  Liveness(Space* space, const Layout* layout, const Env* env)
      : space_(space), layout_(layout), env_(env) {}

  // The best claim on `task_key`: kAlive if any is; else kLapsed, kStale, kDead in that order.
  Result<ClaimState> ClaimOf(std::string_view task_key);
  // ClaimOf every task with a claim in the space, from one scan of the job's claims and one read
  // of each claimant's alive tuple (what a restart notice needs: the tasks a death lost, at once).
  Result<std::map<std::string, ClaimState>> AllClaims();
  // The handlers holding a live claim on `task_key` (running it now), in handler order.
  Result<std::vector<int>> LiveClaimants(std::string_view task_key);
  // Removes every claim on a task about to be sent again (none is live then, or it is hung).
  void DropClaims(std::string_view task_key);

 private:
  // Folds `claim` (a tuple under a claim pattern) into `state`, reading its handler's
  // alive tuple once per call of ClaimOf or AllClaims (`alive`, by handler).
  Status Fold(const Tuple& claim, std::map<int, std::optional<int64_t>>& alive, ClaimState& state);

  Space* space_;
  const Layout* layout_;
  const Env* env_;
};

// One notice per handler is enough (the manager looks at every claim on it): a new one replaces
// any the manager has not read yet, so notices do not pile up while no manager runs.
Status PutRestartNotice(Space* space, const Layout& layout, int handler);

// What a supervisor does when it sees its handler die (in process, the slot that runs it; across
// processes the parent that waits for it): withdraws the alive tuple of `incarnation` (a newer
// one stays) and tells the manager, which then sends that incarnation's claimed tasks again at once
// instead of at their deadlines. A handler lost with nobody to see it is found by its lapsed
// claims instead.
Status AnnounceDeath(Space* space, const Layout& layout, int handler, int64_t incarnation);

}  // namespace acan::runtime
