#include "runtime/crashable_space.h"

namespace acan::runtime {

CrashableSpace::CrashableSpace(Space* inner, const std::atomic<bool>* crashed)
    : SpaceWrapper(inner), crashed_(crashed) {}

Status CrashableSpace::Enter() {
  calls_.fetch_add(1, std::memory_order_relaxed);
  return Alive();
}

Status CrashableSpace::Alive() const {
  if (crashed_->load() || Clock::now().time_since_epoch().count() >= kill_at_ns_.load()) {
    return Status::Cancelled("this process crashed");
  }
  return Status::Ok();
}

Status CrashableSpace::Put(Key key, Value value, Deadline deadline) {
  ACAN_RETURN_IF_ERROR(Enter());
  return inner()->Put(std::move(key), std::move(value), deadline);
}

Result<std::optional<Tuple>> CrashableSpace::Read(const Pattern& p) {
  ACAN_RETURN_IF_ERROR(Enter());
  return inner()->Read(p);
}

// A blocking call that returns after the crash returns nothing: what it took died with it.
Result<Tuple> CrashableSpace::Get(const Pattern& p, Deadline d) {
  ACAN_RETURN_IF_ERROR(Enter());
  auto got = inner()->Get(p, d);
  ACAN_RETURN_IF_ERROR(Alive());
  return got;
}

Result<std::vector<Tuple>> CrashableSpace::Take(const Pattern& p, size_t n, Deadline d) {
  ACAN_RETURN_IF_ERROR(Enter());
  auto got = inner()->Take(p, n, d);
  ACAN_RETURN_IF_ERROR(Alive());
  return got;
}

Result<std::vector<Tuple>> CrashableSpace::ReadAll(const Pattern& p, size_t limit) {
  ACAN_RETURN_IF_ERROR(Enter());
  return inner()->ReadAll(p, limit);
}

}  // namespace acan::runtime
