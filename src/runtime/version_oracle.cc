#include "runtime/version_oracle.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "nn/plan.h"
#include "runtime/messages.h"
#include "space/space_wrapper.h"

namespace acan::runtime {

namespace {

// FNV-1a over the value's bytes: equal bytes, equal hash; a collision between two different
// tensors of one shard would be needed to hide a wrong version.
uint64_t HashOf(const Value& v) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < v.size(); ++i) {
    h ^= static_cast<uint8_t>(v.data()[i]);
    h *= 1099511628211ull;
  }
  return h;
}

class OracleSpace final : public SpaceWrapper {
 public:
  OracleSpace(std::unique_ptr<Space> inner, VersionOracle* oracle)
      : SpaceWrapper(inner.get()), owned_(std::move(inner)), oracle_(oracle) {}
  using SpaceWrapper::Put;
  Status Put(Key key, Value value, Deadline deadline) override {
    const Key copy = key;
    // Recorded before it lands: a reader (the manager applying a proposal) may act on it the
    // moment it does, before this thread would get to record it.
    const int64_t order = oracle_->Record(copy, value);
    Status s = SpaceWrapper::Put(std::move(key), std::move(value), deadline);
    if (!s.ok() && order >= 0) oracle_->Unrecord(copy, order);
    return s;
  }
  // A refused fenced put stored nothing: it is taken back like a failed put.
  Status PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) override {
    const Key copy = key;
    const int64_t order = oracle_->Record(copy, value);
    Status s = SpaceWrapper::PutFenced(std::move(key), std::move(value), fence, deadline);
    if (!s.ok() && order >= 0) oracle_->Unrecord(copy, order);
    return s;
  }

 private:
  std::unique_ptr<Space> owned_;
  VersionOracle* oracle_;
};

}  // namespace

std::unique_ptr<Space> VersionOracle::Wrap(std::unique_ptr<Space> inner) {
  return std::make_unique<OracleSpace>(std::move(inner), this);
}

int64_t VersionOracle::Record(const Key& key, const Value& value) {
  if (key.token_count() < 2) return -1;
  auto parsed = layout_.Parse(key);
  if (!parsed.ok()) return -1;
  if (parsed->kind == KeyKind::kTask) {
    CheckTask(*parsed, value);
    return -1;
  }
  if (parsed->kind != KeyKind::kState && parsed->kind != KeyKind::kProposal) return -1;
  const bool state = parsed->kind == KeyKind::kState;
  const uint64_t hash = HashOf(value);
  std::lock_guard lock(mu_);
  const int64_t order = next_order_++;
  (state ? versions_ : proposals_)[parsed->name].push_back(
      {state ? parsed->version : parsed->step, hash, order});
  return order;
}

void VersionOracle::Unrecord(const Key& key, int64_t order) {
  auto parsed = layout_.Parse(key);
  if (!parsed.ok()) return;
  std::lock_guard lock(mu_);
  auto& all = (parsed->kind == KeyKind::kState ? versions_ : proposals_)[parsed->name];
  std::erase_if(all, [&](const Landed& l) { return l.order == order; });
}

void VersionOracle::CheckTask(const ParsedKey& task, const Value& value) {
  auto m = DecodeTaskMessage(value);
  std::string violation;
  if (!m.ok()) {
    violation = fmt::format("task '{}' does not decode: {}", task.task_key, m.status().message());
  } else {
    const int64_t s = m->spec.step;
    const bool update = m->spec.type == nn::TaskType::kUpdate;
    for (const std::string& in : m->input_keys) {
      auto k = Key::Parse(in);
      auto p = k.ok() ? layout_.Parse(*k) : Result<ParsedKey>(k.status());
      if (!p.ok() || p->kind != KeyKind::kState) continue;
      const bool within =
          update ? p->version == s : p->version >= s - window_ + 1 && p->version <= s;
      if (!within && violation.empty()) {
        violation = fmt::format("task '{}' (step {}, window {}) reads version {} of '{}'",
                                task.task_key, s, window_, p->version, p->name);
      }
    }
  }
  std::lock_guard lock(mu_);
  ++tasks_;
  if (window_violation_.empty()) window_violation_ = violation;
}

Status VersionOracle::Check(const std::vector<std::string>& shards, int64_t final_version) const {
  std::lock_guard lock(mu_);
  if (!window_violation_.empty()) return Status::DataLoss("oracle: " + window_violation_);
  for (const std::string& shard : shards) {
    auto fail = [&](int64_t version, const std::string& what) {
      return Status::DataLoss(
          fmt::format("oracle: shard '{}' version {}: {}", shard, version, what));
    };
    auto it = versions_.find(shard);
    if (it == versions_.end()) return fail(0, "never written");
    // Each version's first landing, in version order; more copies must be the same bytes (a
    // write made again because it did not appear, or duplicated on the way: not a second update).
    std::map<int64_t, const Landed*> first;
    for (const Landed& l : it->second) {
      auto [at, fresh] = first.emplace(l.number, &l);
      if (fresh) continue;
      if (at->second->hash != l.hash) return fail(l.number, "written twice, with other bytes");
      if (l.order < at->second->order) at->second = &l;
    }
    std::vector<Landed> written;
    for (const auto& [number, l] : first) {
      const int64_t want = static_cast<int64_t>(written.size());
      if (number != want) return fail(want, "never written (a gap)");
      if (!written.empty() && l->order < written.back().order) {
        return fail(want, "written before the version it follows");
      }
      written.push_back(*l);
    }
    if (static_cast<int64_t>(written.size()) != final_version + 1) {
      return fail(static_cast<int64_t>(written.size()),
                  fmt::format("the last written is {}, not the final {}",
                              static_cast<int64_t>(written.size()) - 1, final_version));
    }
    std::multimap<int64_t, const Landed*> by_step;  // this shard's proposals, by step
    if (auto p = proposals_.find(shard); p != proposals_.end()) {
      for (const Landed& u : p->second) by_step.emplace(u.number, &u);
    }
    for (size_t n = 1; n < written.size(); ++n) {
      bool from_proposal = false;
      auto [begin, end] = by_step.equal_range(static_cast<int64_t>(n) - 1);
      for (auto u = begin; u != end && !from_proposal; ++u) {
        from_proposal = u->second->hash == written[n].hash && u->second->order < written[n].order;
      }
      if (!from_proposal) {
        return fail(
            static_cast<int64_t>(n),
            fmt::format("not bitwise any proposal of step {} that landed before it", n - 1));
      }
    }
  }
  return Status::Ok();
}

Status VersionOracle::CheckJob(const JobConfig& job, int64_t task_size, int64_t rows,
                               int64_t total_steps) const {
  ACAN_ASSIGN_OR_RETURN(nn::Plan plan, nn::Plan::Create(job, task_size, rows));
  std::vector<std::string> shards;
  for (const nn::ShardSpec& s : plan.shards()) {
    shards.push_back(s.key);
    if (!s.momentum_key.empty()) shards.push_back(s.momentum_key);
  }
  return Check(shards, total_steps);
}

int64_t VersionOracle::versions_written() const {
  std::lock_guard lock(mu_);
  int64_t n = 0;
  for (const auto& [k, v] : versions_) n += static_cast<int64_t>(v.size());
  return n;
}

int64_t VersionOracle::version_copies() const {
  std::lock_guard lock(mu_);
  int64_t n = 0;
  for (const auto& [k, v] : versions_) {
    std::set<int64_t> distinct;
    for (const Landed& l : v) distinct.insert(l.number);
    n += static_cast<int64_t>(v.size() - distinct.size());
  }
  return n;
}

int64_t VersionOracle::tasks_seen() const {
  std::lock_guard lock(mu_);
  return tasks_;
}

int64_t VersionOracle::proposals_seen() const {
  std::lock_guard lock(mu_);
  int64_t n = 0;
  for (const auto& [k, v] : proposals_) n += static_cast<int64_t>(v.size());
  return n;
}

}  // namespace acan::runtime
