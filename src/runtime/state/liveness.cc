#include "runtime/state/liveness.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "runtime/core/messages.h"

namespace acan::runtime {

Status Liveness::Fold(const Tuple& claim, std::map<int, std::optional<int64_t>>& alive,
                      ClaimState& state) {
  auto v = claim.value.As<int64_t>();
  auto parsed = layout_->Parse(claim.key);
  if (v.size() != 2 || !parsed.ok() || parsed->kind != KeyKind::kClaim) return Status::Ok();
  auto known = alive.find(parsed->handler);
  if (known == alive.end()) {
    ACAN_ASSIGN_OR_RETURN(auto tuple, space_->Read(layout_->Alive(parsed->handler)));
    std::optional<int64_t> incarnation;
    if (tuple.has_value()) {
      auto a = DecodeAliveMessage(tuple->value);
      incarnation = a.ok() ? a->incarnation : -1;
    }
    known = alive.emplace(parsed->handler, incarnation).first;
  }
  if (state == ClaimState::kAlive) return Status::Ok();
  const bool current = known->second == v[0];
  if (current && v[1] > env_->WallNs()) {
    state = ClaimState::kAlive;
  } else if (current) {
    state = ClaimState::kLapsed;
  } else if (state == ClaimState::kNone || state == ClaimState::kDead) {
    state = known->second.has_value() ? ClaimState::kStale : ClaimState::kDead;
  }
  return Status::Ok();
}

Result<ClaimState> Liveness::ClaimOf(std::string_view task_key) {
  ACAN_ASSIGN_OR_RETURN(auto claims, space_->ReadAll(layout_->ClaimPattern(task_key)));
  std::map<int, std::optional<int64_t>> alive;
  ClaimState result = ClaimState::kNone;
  for (const Tuple& c : claims) ACAN_RETURN_IF_ERROR(Fold(c, alive, result));
  return result;
}

Result<std::vector<int>> Liveness::LiveClaimants(std::string_view task_key) {
  ACAN_ASSIGN_OR_RETURN(auto claims, space_->ReadAll(layout_->ClaimPattern(task_key)));
  std::map<int, std::optional<int64_t>> alive;
  std::vector<int> live;
  for (const Tuple& c : claims) {
    ClaimState state = ClaimState::kNone;
    ACAN_RETURN_IF_ERROR(Fold(c, alive, state));
    auto parsed = layout_->Parse(c.key);
    if (state == ClaimState::kAlive && parsed.ok()) live.push_back(parsed->handler);
  }
  std::sort(live.begin(), live.end());
  live.erase(std::unique(live.begin(), live.end()), live.end());
  return live;
}

Result<std::map<std::string, ClaimState>> Liveness::AllClaims() {
  ACAN_ASSIGN_OR_RETURN(auto claims, space_->ReadAll(layout_->AllClaimsPattern()));
  std::map<int, std::optional<int64_t>> alive;
  std::map<std::string, ClaimState> result;
  for (const Tuple& c : claims) {
    auto parsed = layout_->Parse(c.key);
    if (!parsed.ok() || parsed->kind != KeyKind::kClaim) continue;
    auto it = result.emplace(parsed->task_key, ClaimState::kNone).first;
    ACAN_RETURN_IF_ERROR(Fold(c, alive, it->second));
  }
  return result;
}

void Liveness::DropClaims(std::string_view task_key) {
  (void)space_->Erase(layout_->ClaimPattern(task_key));
}

Status PutRestartNotice(Space* space, const Layout& layout, int handler) {
  const Key key = layout.RestartNotice(handler);
  (void)space->Erase(key);
  return space->Put(key, EncodeDoneMessage(DoneMessage{0, handler, 0, "", {}}));
}

Status AnnounceDeath(Space* space, const Layout& layout, int handler, int64_t incarnation) {
  spdlog::info("handler {} left the job (its incarnations up to {} are dead)", handler,
               incarnation == std::numeric_limits<int64_t>::max() ? std::string("the last")
                                                                  : std::to_string(incarnation));
  const Key key = layout.Alive(handler);
  auto alive = space->Take(key, 16, Deadline::Now());
  if (!alive.ok() && !alive.status().IsTimeout()) return alive.status();
  if (alive.ok()) {
    for (const Tuple& t : *alive) {  // a newer incarnation's tuple stays
      auto a = DecodeAliveMessage(t.value);
      if (a.ok() && a->incarnation > incarnation) ACAN_RETURN_IF_ERROR(space->Put(key, t.value));
    }
  }
  return PutRestartNotice(space, layout, handler);
}

}  // namespace acan::runtime
