#include "runtime/chaos/crashable_space.h"

namespace acan::runtime {

CrashableSpace::CrashableSpace(Space* inner, const std::atomic<bool>* crashed)
    : SpaceWrapper(inner), crashed_(crashed) {}

Status CrashableSpace::Enter() {
  calls_.fetch_add(1, std::memory_order_relaxed);
  return Alive();
}

void CrashableSpace::KillAtWrite(int64_t n, std::function<void()> on_kill) {
  on_kill_ = std::move(on_kill);
  kill_at_write_.store(writes_.load() + n);
}

Status CrashableSpace::Write() {
  if (writes_.fetch_add(1) + 1 >= kill_at_write_.load() && !killed_.exchange(true) && on_kill_) {
    on_kill_();
  }
  return Alive();
}

Status CrashableSpace::Alive() const {
  if (killed_.load() || crashed_->load() ||
      Clock::now().time_since_epoch().count() >= kill_at_ns_.load()) {
    return Status::Cancelled("this process crashed");
  }
  return Status::Ok();
}

Status CrashableSpace::Put(Key key, Value value, Deadline deadline) {
  ACAN_RETURN_IF_ERROR(Enter());
  ACAN_RETURN_IF_ERROR(Write());
  return inner()->Put(std::move(key), std::move(value), deadline);
}

Status CrashableSpace::PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) {
  ACAN_RETURN_IF_ERROR(Enter());
  ACAN_RETURN_IF_ERROR(Write());
  return inner()->PutFenced(std::move(key), std::move(value), fence, deadline);
}

Result<std::optional<Tuple>> CrashableSpace::Read(const Pattern& p) {
  ACAN_RETURN_IF_ERROR(Enter());
  return inner()->Read(p);
}

// A blocking call that returns after the crash returns nothing: what it took died with it.
Result<Tuple> CrashableSpace::Get(const Pattern& p, Deadline d) {
  ACAN_RETURN_IF_ERROR(Enter());
  auto got = inner()->Get(p, d);
  ACAN_RETURN_IF_ERROR(got.ok() ? Write() : Alive());
  return got;
}

Result<std::vector<Tuple>> CrashableSpace::Take(const Pattern& p, size_t n, Deadline d) {
  ACAN_RETURN_IF_ERROR(Enter());
  auto got = inner()->Take(p, n, d);
  ACAN_RETURN_IF_ERROR(got.ok() && !got->empty() ? Write() : Alive());
  return got;
}

Result<std::vector<Tuple>> CrashableSpace::ReadAll(const Pattern& p, size_t limit) {
  ACAN_RETURN_IF_ERROR(Enter());
  return inner()->ReadAll(p, limit);
}

Result<std::vector<Key>> CrashableSpace::ReadKeys(const Pattern& p, size_t limit) {
  ACAN_RETURN_IF_ERROR(Enter());
  return inner()->ReadKeys(p, limit);
}

Result<Cell> CrashableSpace::ReadCell(const Key& key) {
  ACAN_RETURN_IF_ERROR(Enter());
  return inner()->ReadCell(key);
}

Result<uint64_t> CrashableSpace::SwapCell(const Key& key, Value value, uint64_t expected,
                                          Deadline d) {
  ACAN_RETURN_IF_ERROR(Enter());
  ACAN_RETURN_IF_ERROR(Write());
  return inner()->SwapCell(key, std::move(value), expected, d);
}

}  // namespace acan::runtime
