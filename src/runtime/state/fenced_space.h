// FencedSpace: the active manager's view of the space, in which every write waits for a check
// that the manager still holds its lease (Lease::Keep: a renewal by compare-and-set on the lease
// cell's revision when one is due, at once after any pause longer than a third of the lease).
// A manager paused past its lease and resumed after a standby took over is refused at its first
// write, by the server's check of the revision, and stops; a read renews a lease that is due
// (and fails once it is lost) but needs no check of its own. The writes that carry the
// model (the parameter versions, the manager's state: Layout::FencedKeys) are fenced puts
// besides, conditional on the lease's revision where the space stores them: one already on its
// way when the pause began is refused too (docs/architecture.md, "Fencing"). Thread-safe when
// the lease is used by one thread.
#pragma once

#include <utility>
#include <vector>

#include "runtime/state/lease.h"
#include "space/space_wrapper.h"

namespace acan::runtime {

class FencedSpace final : public SpaceWrapper {
 public:
  // REQUIRES: `inner` and `lease` outlive this space. Puts of keys matching `fenced` are fenced
  // by the lease's cell at its revision.
  FencedSpace(Space* inner, Lease* lease, std::vector<Pattern> fenced)
      : SpaceWrapper(inner), lease_(lease), fenced_(std::move(fenced)) {}

  using Space::Erase;
  using Space::Get;
  using Space::Put;
  using Space::Read;
  using Space::ReadAll;
  using Space::ReadKeys;
  using Space::Take;
  Status Put(Key key, Value value, Deadline deadline) override {
    ACAN_RETURN_IF_ERROR(lease_->Keep());
    for (const Pattern& p : fenced_) {
      if (!p.Matches(key)) continue;
      Status s = inner()->PutFenced(std::move(key), std::move(value),
                                    Fence{lease_->key(), lease_->revision()}, deadline);
      if (s.code() == StatusCode::kFailedPrecondition) return lease_->Refused(s);
      return s;
    }
    return inner()->Put(std::move(key), std::move(value), deadline);
  }
  // Reads renew the lease when a renewal is due, as writes do: a manager looking through many
  // tiles' outputs (a take-over) keeps its lease, and one that lost it stops at its next call.
  Result<std::optional<Tuple>> Read(const Pattern& p) override {
    ACAN_RETURN_IF_ERROR(lease_->Keep());
    return inner()->Read(p);
  }
  Result<std::vector<Tuple>> ReadAll(const Pattern& p, size_t limit) override {
    ACAN_RETURN_IF_ERROR(lease_->Keep());
    return inner()->ReadAll(p, limit);
  }
  Result<std::vector<Key>> ReadKeys(const Pattern& p, size_t limit) override {
    ACAN_RETURN_IF_ERROR(lease_->Keep());
    return inner()->ReadKeys(p, limit);
  }
  Result<Tuple> Get(const Pattern& p, Deadline d) override {
    ACAN_RETURN_IF_ERROR(lease_->Keep());
    return inner()->Get(p, d);
  }
  Result<std::vector<Tuple>> Take(const Pattern& p, size_t n, Deadline d) override {
    ACAN_RETURN_IF_ERROR(lease_->Keep());
    return inner()->Take(p, n, d);
  }
  Result<size_t> Erase(const Pattern& p) override {
    ACAN_RETURN_IF_ERROR(lease_->Keep());
    return inner()->Erase(p);
  }

 private:
  Lease* lease_;
  std::vector<Pattern> fenced_;
};

}  // namespace acan::runtime
