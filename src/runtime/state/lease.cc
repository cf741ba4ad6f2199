#include "runtime/state/lease.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace acan::runtime {

Lease::Lease(Space* space, Key key, std::string owner, std::chrono::milliseconds duration,
             const Env* env)
    : space_(space),
      key_(std::move(key)),
      owner_(std::move(owner)),
      duration_(duration),
      env_(env ? env : Env::Default()) {}

int64_t Lease::NowMs() const { return env_->WallNs() / 1000000; }

namespace {

// A swap worth trying again: another writer came in between (FailedPrecondition), or its outcome
// is unknown (Unavailable: a lost request or answer; a look at the cell tells).
bool TryAgain(const Status& s) {
  return s.code() == StatusCode::kFailedPrecondition || s.IsUnavailable();
}

}  // namespace

Status Lease::PutFree(Space* space, const Key& key, const Env* env) {
  env = env ? env : Env::Default();
  const Deadline deadline = Deadline::After(std::chrono::minutes(1));
  for (;;) {
    ACAN_ASSIGN_OR_RETURN(Cell cell, space->ReadCell(key));
    if (cell.revision != 0) {
      // Held and not lapsed: a manager of this job that initialised it at the same time as we
      // did holds it (two managers that start together both see a new job). Leave it be.
      auto m = DecodeLeaseMessage(cell.value);
      if (m.ok() && !m->owner.empty() && m->expires_ms >= env->WallNs() / 1000000) {
        return Status::Ok();
      }
    }
    auto swapped = space->SwapCell(key, EncodeLeaseMessage({"", 0}), cell.revision, deadline);
    if (swapped.ok()) return Status::Ok();
    if (!TryAgain(swapped.status()) || deadline.expired()) return swapped.status();
  }
}

Status Lease::FreeIfHeldBy(Space* space, const Key& key, const std::string& owner) {
  ACAN_ASSIGN_OR_RETURN(Cell cell, space->ReadCell(key));
  if (cell.revision == 0) return Status::Ok();
  auto m = DecodeLeaseMessage(cell.value);
  if (!m.ok() || m->owner != owner) return Status::Ok();
  // Lapsed now, its holder named: a standby that takes it has taken over.
  auto swapped = space->SwapCell(key, EncodeLeaseMessage({owner, 0}), cell.revision,
                                 Deadline::After(std::chrono::seconds(10)));
  if (swapped.ok() || swapped.status().code() == StatusCode::kFailedPrecondition) {
    return Status::Ok();
  }
  return swapped.status();
}

Result<uint64_t> Lease::SwapOurs(uint64_t from, Deadline deadline) {
  const int64_t expires_ms = NowMs() + duration_.count();
  const auto renew_at = env_->Now() + duration_ / 3;
  ACAN_ASSIGN_OR_RETURN(
      uint64_t revision,
      space_->SwapCell(key_, EncodeLeaseMessage({owner_, expires_ms}), from, deadline));
  expires_ms_ = expires_ms;
  renew_at_ = renew_at;
  revision_ = revision;
  return revision;
}

Status Lease::Acquire(const std::atomic<bool>& stop) {
  std::string taking_from;  // whose lease a swap whose outcome is unknown took, maybe
  for (;;) {
    if (stop.load()) return Status::Cancelled(owner_ + " stopped while standing by");
    ACAN_ASSIGN_OR_RETURN(Cell cell, space_->ReadCell(key_));
    LeaseMessage seen{"", 0};
    if (cell.revision != 0) {
      auto m = DecodeLeaseMessage(cell.value);
      if (m.ok()) {
        seen = *m;
      } else {  // a damaged lease holds no one: it is taken as lapsed
        spdlog::warn("lease '{}': the cell does not decode ({}); taking it as lapsed", key_.str(),
                     m.status().ToString());
      }
    }
    if (seen.expires_ms < NowMs() || seen.owner == owner_) {
      auto swapped = SwapOurs(cell.revision, Deadline::After(duration_));
      const std::string& from = seen.owner == owner_ ? taking_from : seen.owner;
      if (swapped.ok()) {
        took_over_ = !from.empty() && from != owner_;
        return Status::Ok();
      }
      taking_from = from;
      if (swapped.status().code() == StatusCode::kFailedPrecondition) continue;  // look again
      if (!swapped.status().IsUnavailable()) return swapped.status();
      // Unknown whether it landed: the next look shows it ours, or not, a pause from now.
      spdlog::warn("{}: taking the lease: {}", owner_, swapped.status().ToString());
    }
    // Look again a fifth of a lease later; `stop` ends the wait.
    const auto until = env_->Now() + duration_ / 5;
    while (env_->Now() < until && !stop.load()) {
      env_->SleepUntil(std::min(until, env_->Now() + std::chrono::milliseconds(2)));
    }
  }
}

std::string Lease::Holder() const {
  auto cell = space_->ReadCell(key_);
  if (!cell.ok() || cell->revision == 0) return "another manager";
  auto m = DecodeLeaseMessage(cell->value);
  return m.ok() && !m->owner.empty() ? m->owner : "another manager";
}

Status Lease::Keep() {
  if (revision_ == 0) return Status::FailedPrecondition(owner_ + " has not taken the lease");
  return env_->Now() >= renew_at_ ? Renew() : Status::Ok();
}

Status Lease::Renew() {
  // A swap from our own last revision succeeds only if no one wrote the cell since, also after
  // our lease lapsed (a pause): then no standby took it, and we still are the only holder.
  const auto left = std::chrono::milliseconds(std::max<int64_t>(expires_ms_ - NowMs(), 0));
  auto swapped = SwapOurs(revision_, Deadline::After(std::max(left, duration_ / 10)));
  if (swapped.ok()) return Status::Ok();
  if (swapped.status().code() != StatusCode::kFailedPrecondition) {
    return Status::Unavailable(
        fmt::format("{} could not renew its lease: {}", owner_, swapped.status().ToString()));
  }
  return Status::Unavailable(fmt::format("{} lost the lease to {} (revision {} is gone: {})",
                                         owner_, Holder(), revision_, swapped.status().message()));
}

Status Lease::Refused(const Status& refused) const {
  return Status::Unavailable(
      fmt::format("{} lost the lease to {}: the space refused its write ({})", owner_, Holder(),
                  refused.message()));
}

}  // namespace acan::runtime
