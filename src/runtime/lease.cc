#include "runtime/lease.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "runtime/confirmed_put.h"

namespace acan::runtime {

Lease::Lease(Space* space, std::string key, std::string owner, std::chrono::milliseconds duration,
             const Env* env)
    : space_(space),
      key_(std::move(key)),
      owner_(std::move(owner)),
      duration_(duration),
      env_(env ? env : Env::Default()) {}

int64_t Lease::NowMs() const { return env_->WallNs() / 1000000; }

Status Lease::PutFree(Space* space, const std::string& key) {
  return PutConfirmed(space, Key::Parse(key).value(), EncodeLeaseMessage({"", 0}));
}

Result<std::optional<LeaseMessage>> Lease::Take(Deadline deadline) {
  const Pattern pattern = Pattern::Parse(key_).value();
  auto first = space_->Get(pattern, deadline);
  if (!first.ok()) {
    if (first.status().IsTimeout()) return std::optional<LeaseMessage>();
    return first.status();
  }
  std::vector<Tuple> tokens{std::move(*first)};
  auto more = space_->Take(pattern, SIZE_MAX, Deadline::Now());
  if (more.ok()) {
    for (Tuple& t : *more) tokens.push_back(std::move(t));
  } else if (!more.status().IsTimeout()) {
    return more.status();
  }
  std::optional<LeaseMessage> latest;
  for (const Tuple& t : tokens) {
    auto m = DecodeLeaseMessage(t.value);
    if (!m.ok()) {
      spdlog::warn("lease '{}': dropping an undecodable token: {}", key_, m.status().ToString());
      continue;
    }
    if (!latest || m->expires_ms > latest->expires_ms) latest = *m;
  }
  if (!latest) latest = LeaseMessage{"", 0};  // only damaged tokens: a lapsed one replaces them
  return latest;
}

Status Lease::PutOurs() {
  expires_ms_ = NowMs() + duration_.count();
  renew_at_ = env_->Now() + duration_ / 3;
  return PutToken({owner_, expires_ms_});
}

Status Lease::PutToken(const LeaseMessage& m) {
  return PutConfirmed(space_, Key::Parse(key_).value(), EncodeLeaseMessage(m));
}

Status Lease::Acquire(const std::atomic<bool>& stop) {
  const Pattern pattern = Pattern::Parse(key_).value();
  // When the token was first found missing (max: it was not).
  Clock::time_point missing_since = Clock::time_point::max();
  for (;;) {
    if (stop.load()) return Status::Cancelled(owner_ + " stopped while standing by");
    ACAN_ASSIGN_OR_RETURN(auto seen, space_->Read(pattern));
    bool free = false;
    if (seen.has_value()) {
      missing_since = Clock::time_point::max();
      ACAN_ASSIGN_OR_RETURN(LeaseMessage m, DecodeLeaseMessage(seen->value));
      free = m.expires_ms < NowMs() || m.owner == owner_;
    } else if (missing_since == Clock::time_point::max()) {
      missing_since = env_->Now();
    } else if (env_->Now() - missing_since >= 2 * duration_) {
      // Gone for two lease periods: its holder died between taking and putting it back.
      spdlog::warn("{}: the lease token '{}' was lost; putting a lapsed one back", owner_, key_);
      ACAN_RETURN_IF_ERROR(PutFree(space_, key_));
      missing_since = Clock::time_point::max();
      continue;
    }
    if (free) {
      // Take the token; check it again (it may have been renewed meanwhile).
      ACAN_ASSIGN_OR_RETURN(auto m, Take(Deadline::After(duration_ / 2)));
      if (m.has_value()) {
        if (m->expires_ms < NowMs() || m->owner == owner_) {
          took_over_ = !m->owner.empty() && m->owner != owner_;
          return PutOurs();
        }
        ACAN_RETURN_IF_ERROR(PutToken(*m));  // not ours: put back
      }
    }
    // Look again a fifth of a lease later; `stop` ends the wait.
    const auto until = env_->Now() + duration_ / 5;
    while (env_->Now() < until && !stop.load()) {
      env_->SleepUntil(std::min(until, env_->Now() + std::chrono::milliseconds(2)));
    }
  }
}

Status Lease::Keep() { return env_->Now() >= renew_at_ ? Renew() : Status::Ok(); }

Status Lease::Renew() {
  while (NowMs() < expires_ms_) {
    ACAN_ASSIGN_OR_RETURN(auto m, Take(Deadline::After(duration_ / 10)));
    if (!m.has_value()) continue;  // someone is looking at it; try again
    if (m->owner != owner_) {
      ACAN_RETURN_IF_ERROR(PutToken(*m));
      return Status::Unavailable(fmt::format("{} lost the lease to {}", owner_, m->owner));
    }
    return PutOurs();
  }
  return Status::Unavailable(owner_ + "'s lease expired before it could renew it");
}

}  // namespace acan::runtime
