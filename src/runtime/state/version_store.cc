#include "runtime/state/version_store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <filesystem>

#include "nn/safetensors.h"
#include "runtime/state/confirmed_put.h"

namespace acan::runtime {

Status VersionStore::Load(const std::vector<std::string>& shards, int64_t oldest_step,
                          const std::function<Status()>& keep) {
  versions_.clear();
  std::map<std::string, std::vector<std::pair<Key, int64_t>>> found;
  for (const std::string& shard : shards) {
    if (keep) ACAN_RETURN_IF_ERROR(keep());
    // Which versions there are, not their bytes: a take-over of many large tiles reads none here.
    ACAN_ASSIGN_OR_RETURN(auto keys, space_->ReadKeys(layout_->StatePattern(shard)));
    int64_t best = -1;
    for (const Key& key : keys) {
      auto parsed = layout_->Parse(key);
      if (!parsed.ok() || parsed->kind != KeyKind::kState) continue;
      best = std::max(best, parsed->version);
      found[shard].emplace_back(key, parsed->version);
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
  ACAN_ASSIGN_OR_RETURN(const bool existing, space_->Contains(next));
  Outcome outcome = Outcome::kApplied;
  if (existing) {
    outcome = Outcome::kRepeat;
  } else {
    ACAN_RETURN_IF_ERROR(PutConfirmed(space_, next, proposal->value));
    WrittenVersion w{shard, step + 1, proposal->value, ""};
    if (held_ + int64_t(w.value.size()) > hold_limit_) {
      w.Hash();
    } else {
      held_ += int64_t(w.value.size());
    }
    written_.push_back(std::move(w));
  }
  v = step + 1;
  // The proposal (and any copy) goes with the step's other outputs when the step is cleaned up,
  // off the path from this update to the next step's tasks.
  return outcome;
}

void WrittenVersion::Hash() {
  sha256 = nn::BytesSha256({reinterpret_cast<const char*>(value.data()), value.size()});
  value = Value();
}

std::vector<WrittenVersion> VersionStore::TakeWritten() {
  held_ = 0;
  std::vector<WrittenVersion> out;
  out.swap(written_);
  return out;
}

void VersionStore::DropStale(const std::string& shard, int64_t step) {
  const int64_t stale = step + 1 - window_;
  if (stale >= 0) (void)space_->Erase(layout_->State(shard, stale));
}

Result<std::vector<float>> ReadModelRows(Space* space, const Layout& layout, const nn::Plan& plan,
                                         int64_t version, int layer, bool bias, int64_t r0,
                                         int64_t r1) {
  const int64_t cols = bias ? 1 : plan.widths()[layer];
  std::vector<float> rows((r1 - r0) * cols);
  // Each shard's rows inside [r0, r1) go where they belong: nothing but the band and one shard
  // is held, however tall the shard.
  for (const nn::ShardSpec& s : plan.shards()) {
    if (s.layer != layer || s.bias != bias || s.r1 <= r0 || s.r0 >= r1) continue;
    ACAN_ASSIGN_OR_RETURN(auto t, space->Read(layout.State(s.key, version)));
    if (!t.has_value()) {
      return Status::DataLoss(
          fmt::format("version {} of '{}' is not in the space", version, s.key));
    }
    const auto v = t->value.As<float>();
    if (v.size() != static_cast<size_t>(s.Size())) {
      return Status::DataLoss(fmt::format("version {} of '{}' holds {} values, not {}", version,
                                          s.key, v.size(), s.Size()));
    }
    const int64_t width = s.c1 - s.c0;
    for (int64_t r = std::max(s.r0, r0); r < std::min(s.r1, r1); ++r) {
      std::copy_n(&v[(r - s.r0) * width], width, &rows[(r - r0) * cols + s.c0]);
    }
  }
  return rows;
}

nn::BandReader VersionRows(Space* space, const Layout& layout, const nn::Plan& plan,
                           int64_t version) {
  return [space, &layout, &plan, version](int layer, bool bias, int64_t r0, int64_t r1) {
    return ReadModelRows(space, layout, plan, version, layer, bias, r0, r1);
  };
}

Status SaveVersion(Space* space, const Layout& layout, const nn::Plan& plan, int64_t version,
                   const std::string& path, const std::function<Status()>& keep,
                   const std::function<void(const std::string& key, const Value&)>& on_shard) {
  std::vector<nn::ModelBlock> blocks;
  for (const nn::ShardSpec& s : plan.shards()) {
    blocks.push_back({s.layer, s.bias, s.r0, s.r1, s.c0, s.c1});
  }
  // SaveModelBlocks reads the blocks once each, in their order: the plan's shards'.
  size_t next = 0;
  return nn::SaveModelBlocks(
      path, plan.widths(), blocks, [&](const nn::ModelBlock&) -> Result<std::vector<float>> {
        const nn::ShardSpec& s = plan.shards()[next++];
        if (keep) ACAN_RETURN_IF_ERROR(keep());
        ACAN_ASSIGN_OR_RETURN(auto t, space->Read(layout.State(s.key, version)));
        if (!t.has_value()) {
          return Status::DataLoss(
              fmt::format("version {} of '{}' is not in the space", version, s.key));
        }
        if (on_shard) on_shard(s.key, t->value);
        const auto v = t->value.As<float>();
        return std::vector<float>(v.begin(), v.end());
      });
}

Result<nn::BandReader> SavedVersionRows(
    Space* space, const Layout& layout, const nn::Plan& plan, int64_t version,
    const std::string& path, bool scratch, const std::function<Status()>& keep,
    const std::function<void(const std::string& key, const Value&)>& on_shard) {
  Status saved = SaveVersion(space, layout, plan, version, path, keep, on_shard);
  if (saved.ok()) return nn::ModelFileRows(path, plan.widths());
  const bool file_error = saved.code() == StatusCode::kPermissionDenied ||
                          saved.code() == StatusCode::kResourceExhausted;
  if (!scratch || !file_error) return saved;
  spdlog::warn("job '{}': {}; reading the model in bands from the space instead", layout.job(),
               saved.message());
  return VersionRows(space, layout, plan, version);
}

ScratchFile::ScratchFile(std::string_view what) {
  static std::atomic<int> count{0};
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) dir = "/tmp";
  path_ = (dir / fmt::format("acan-{}-{}-{}.safetensors", what, getpid(), count++)).string();
}

ScratchFile::~ScratchFile() {
  std::error_code ec;
  std::filesystem::remove(path_, ec);
  std::filesystem::remove(path_ + ".tmp", ec);
}

int64_t ReadBandRows(const nn::Plan& plan, int64_t memory) {
  int64_t tallest = 1;
  for (const nn::ShardSpec& s : plan.shards()) tallest = std::max(tallest, s.r1 - s.r0);
  if (memory <= 0) return tallest;
  // Within a budget, a band of the widest tensor is at most a sixteenth of it; a block taller
  // than that is read in equal parts (each of its shards read once per part).
  const int64_t widest = *std::max_element(plan.widths().begin(), plan.widths().end());
  const int64_t fit = std::max<int64_t>(1, memory / 16 / (widest * int64_t(sizeof(float))));
  if (tallest <= fit) return tallest;
  const int64_t parts = (tallest + fit - 1) / fit;
  return (tallest + parts - 1) / parts;
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
