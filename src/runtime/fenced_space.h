// FencedSpace: the active manager's view of the space, in which every write waits for a check
// that the manager still holds its lease (Lease::Keep: a renewal by compare-and-set on the lease
// cell's revision when one is due, at once after any pause longer than a third of the lease).
// A manager paused past its lease and resumed after a standby took over is refused at its first
// write, by the server's check of the revision, and stops; reads pass. A write already on its way
// when the pause began is not stopped by this (docs/architecture.md, "Fencing"). Thread-safe
// when the fence is.
#pragma once

#include <functional>
#include <utility>

#include "space/space_wrapper.h"

namespace acan::runtime {

class FencedSpace final : public SpaceWrapper {
 public:
  // REQUIRES: `inner` outlives this space; `fence` returns Ok while writes may go on.
  FencedSpace(Space* inner, std::function<Status()> fence)
      : SpaceWrapper(inner), fence_(std::move(fence)) {}

  using Space::Erase;
  using Space::Get;
  using Space::Put;
  using Space::Take;
  Status Put(Key key, Value value, Deadline deadline) override {
    ACAN_RETURN_IF_ERROR(fence_());
    return inner()->Put(std::move(key), std::move(value), deadline);
  }
  Result<Tuple> Get(const Pattern& p, Deadline d) override {
    ACAN_RETURN_IF_ERROR(fence_());
    return inner()->Get(p, d);
  }
  Result<std::vector<Tuple>> Take(const Pattern& p, size_t n, Deadline d) override {
    ACAN_RETURN_IF_ERROR(fence_());
    return inner()->Take(p, n, d);
  }
  Result<size_t> Erase(const Pattern& p) override {
    ACAN_RETURN_IF_ERROR(fence_());
    return inner()->Erase(p);
  }

 private:
  std::function<Status()> fence_;
};

}  // namespace acan::runtime
