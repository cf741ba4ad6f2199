#include "runtime/state/version_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "runtime/state/confirmed_put.h"

namespace acan::runtime {

Status VersionStore::Load(const std::vector<std::string>& shards, int64_t oldest_step) {
  versions_.clear();
  std::map<std::string, std::vector<std::pair<Key, int64_t>>> found;
  for (const std::string& shard : shards) {
    ACAN_ASSIGN_OR_RETURN(auto all, space_->ReadAll(layout_->StatePattern(shard)));
    int64_t best = -1;
    for (const Tuple& t : all) {
      auto parsed = layout_->Parse(t.key);
      if (!parsed.ok() || parsed->kind != KeyKind::kState) continue;
      best = std::max(best, parsed->version);
      found[shard].emplace_back(t.key, parsed->version);
    }
    if (best < 0) {
      return Status::DataLoss(
          fmt::format("job '{}': no version of shard '{}' in the space", layout_->job(), shard));
    }
    versions_[shard] = best;
  }
  const int64_t oldest_needed = std::min(Min(), oldest_step) + 1 - window_;
  for (const auto& [shard, keys] : found) {
    for (const auto& [key, version] : keys) {
      if (version < oldest_needed) (void)space_->Erase(key);
    }
  }
  return Status::Ok();
}

int64_t VersionStore::Min() const {
  int64_t m = INT64_MAX;
  for (const auto& [k, v] : versions_) m = std::min(m, v);
  return m;
}

int64_t VersionStore::Applied() const {
  int64_t sum = 0;
  for (const auto& [k, v] : versions_) sum += v;
  return sum;
}

Result<VersionStore::Outcome> VersionStore::Apply(const std::string& shard, int64_t step,
                                                  const std::function<Status()>& before_write) {
  int64_t& v = versions_.at(shard);
  if (v > step) return Outcome::kDuplicate;
  if (v < step) return Outcome::kGap;
  const Key proposal_key = layout_->Proposal(shard, step);
  auto read = space_->Read(proposal_key);
  if (IsTampered(read.status())) {
    // Not its handler's bytes: out of the space, and the update is made again (the caller's).
    (void)space_->Take(proposal_key, 1, Deadline::Now());
    return read.status();
  }
  ACAN_ASSIGN_OR_RETURN(auto proposal, std::move(read));
  if (!proposal.has_value()) {
    return Status::NotFound(
        fmt::format("the update of '{}' at step {} is not in the space", shard, step));
  }
  if (before_write) ACAN_RETURN_IF_ERROR(before_write());
  const Key next = layout_->State(shard, step + 1);
  ACAN_ASSIGN_OR_RETURN(auto existing, space_->Read(next));
  Outcome outcome = Outcome::kApplied;
  if (existing.has_value()) {
    outcome = Outcome::kRepeat;
  } else {
    ACAN_RETURN_IF_ERROR(PutConfirmed(space_, next, proposal->value));
    written_.emplace_back(shard, step + 1, proposal->value);
  }
  v = step + 1;
  // The proposal (and any copy) goes with the step's other outputs when the step is cleaned up,
  // off the path from this update to the next step's tasks.
  return outcome;
}

void VersionStore::DropStale(const std::string& shard, int64_t step) {
  const int64_t stale = step + 1 - window_;
  if (stale >= 0) (void)space_->Erase(layout_->State(shard, stale));
}

Result<nn::Model> ReadModel(Space* space, const Layout& layout, const nn::Plan& plan,
                            int64_t version) {
  Status missing;
  nn::Model m = plan.ModelFromState([&](const std::string& key) {
    auto t = space->Read(layout.State(key, version));
    if (!t.ok() || !t->has_value()) {
      if (missing.ok()) {
        missing = !t.ok() ? t.status()
                          : Status::DataLoss(fmt::format("version {} of '{}' is not in the space",
                                                         version, key));
      }
      return std::vector<float>();
    }
    auto v = (*t)->value.As<float>();
    return std::vector<float>(v.begin(), v.end());
  });
  ACAN_RETURN_IF_ERROR(missing);
  return m;
}

}  // namespace acan::runtime
