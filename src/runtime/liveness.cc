#include "runtime/liveness.h"

#include "runtime/messages.h"

namespace acan::runtime {

Result<ClaimState> Liveness::ClaimOf(std::string_view task_key) {
  ACAN_ASSIGN_OR_RETURN(auto claims, space_->ReadAll(layout_->ClaimPattern(task_key)));
  ClaimState result = ClaimState::kNone;
  const int64_t now = env_->WallNs();
  for (const Tuple& c : claims) {
    auto v = c.value.As<int64_t>();
    auto parsed = layout_->Parse(c.key);
    if (v.size() != 2 || !parsed.ok() || parsed->kind != KeyKind::kClaim) continue;
    ACAN_ASSIGN_OR_RETURN(auto alive, space_->Read(layout_->Alive(parsed->handler)));
    const bool current = alive.has_value() && alive->value.As<int64_t>().size() == 1 &&
                         alive->value.As<int64_t>()[0] == v[0];
    if (current && v[1] > now) return ClaimState::kAlive;
    if (current) {
      result = ClaimState::kLapsed;
    } else if (result == ClaimState::kNone || result == ClaimState::kDead) {
      result = alive.has_value() ? ClaimState::kStale : ClaimState::kDead;
    }
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
  const Key key = layout.Alive(handler);
  auto alive = space->Take(key, 16, Deadline::Now());
  if (!alive.ok() && !alive.status().IsTimeout()) return alive.status();
  if (alive.ok()) {
    for (const Tuple& t : *alive) {  // a newer incarnation's tuple stays
      auto v = t.value.As<int64_t>();
      if (v.size() == 1 && v[0] > incarnation) ACAN_RETURN_IF_ERROR(space->Put(key, t.value));
    }
  }
  return PutRestartNotice(space, layout, handler);
}

}  // namespace acan::runtime
