#include "runtime/testing/version_oracle.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "nn/plan.h"
#include "runtime/core/messages.h"
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
  MutexLock lock(mu_);
  const int64_t order = next_order_++;
  ShardLog& log = shards_[parsed->name];
  if (!state) {
    log.proposals.push_back({parsed->step, hash, order});
    return order;
  }
  if (parsed->version < log.verified) {
    // Its first bytes are forgotten: no copy can be told from a second update any more.
    log.forgotten++;
    log.forgotten_copies++;
    if (forgotten_failure_.empty()) {
      forgotten_failure_ = fmt::format(
          "shard '{}' version {}: written again after {} later versions (its first bytes are no "
          "longer on record to compare)",
          parsed->name, parsed->version, log.verified - parsed->version);
    }
    return -1;
  }
  log.versions.push_back({parsed->version, hash, order});
  // A run already failed keeps its record as it is (it may grow) for Check to name the failure.
  if (static_cast<int64_t>(log.versions.size()) >= 2 * kKeep && forgotten_failure_.empty()) {
    CompactLocked(parsed->name, log);
  }
  return order;
}

void VersionOracle::Unrecord(const Key& key, int64_t order) {
  auto parsed = layout_.Parse(key);
  if (!parsed.ok()) return;
  MutexLock lock(mu_);
  ShardLog& log = shards_[parsed->name];
  std::erase_if(parsed->kind == KeyKind::kState ? log.versions : log.proposals,
                [&](const Landed& l) { return l.order == order; });
}

Status VersionOracle::Verify(const std::string& shard, const ShardLog& log, int64_t upto,
                             int64_t* next, int64_t* next_order) {
  auto fail = [&](int64_t version, const std::string& what) {
    return Status::DataLoss(fmt::format("oracle: shard '{}' version {}: {}", shard, version, what));
  };
  // Each version's first landing, in version order; more copies must be the same bytes (a write
  // made again because it did not appear, or duplicated on the way: not a second update).
  std::map<int64_t, const Landed*> first;
  for (const Landed& l : log.versions) {
    if (l.number >= upto) continue;
    auto [at, fresh] = first.emplace(l.number, &l);
    if (fresh) continue;
    if (at->second->hash != l.hash) return fail(l.number, "written twice, with other bytes");
    if (l.order < at->second->order) at->second = &l;
  }
  std::multimap<int64_t, const Landed*> by_step;  // this shard's proposals, by step
  for (const Landed& u : log.proposals) by_step.emplace(u.number, &u);
  int64_t want = log.verified, last_order = log.last_order;
  for (const auto& [number, l] : first) {
    if (number != want) return fail(want, "never written (a gap)");
    if (l->order < last_order) return fail(want, "written before the version it follows");
    if (want > 0) {
      bool from_proposal = false;
      auto [begin, end] = by_step.equal_range(want - 1);
      for (auto u = begin; u != end && !from_proposal; ++u) {
        from_proposal = u->second->hash == l->hash && u->second->order < l->order;
      }
      if (!from_proposal) {
        return fail(want, fmt::format("not bitwise any proposal of step {} that landed before it",
                                      want - 1));
      }
    }
    last_order = l->order;
    ++want;
  }
  *next = want;
  *next_order = last_order;
  return Status::Ok();
}

void VersionOracle::CompactLocked(const std::string& shard, ShardLog& log) {
  int64_t newest = 0;
  for (const Landed& l : log.versions) newest = std::max(newest, l.number);
  const int64_t upto = newest - kKeep;
  if (upto <= log.verified) return;
  int64_t next = 0, next_order = 0;
  Status s = Verify(shard, log, upto, &next, &next_order);
  if (!s.ok() || next != upto) {
    // Kept as it is, for Check to report (the run fails: its record may grow).
    if (forgotten_failure_.empty()) {
      forgotten_failure_ =
          s.ok() ? fmt::format("shard '{}' version {}: never written (a gap)", shard, next)
                 : std::string(s.message()).substr(std::string("oracle: ").size());
    }
    return;
  }
  std::set<int64_t> distinct;
  int64_t dropped = 0;
  for (const Landed& l : log.versions) {
    if (l.number >= upto) continue;
    distinct.insert(l.number);
    ++dropped;
  }
  log.forgotten += dropped;
  log.forgotten_copies += dropped - static_cast<int64_t>(distinct.size());
  std::erase_if(log.versions, [&](const Landed& l) { return l.number < upto; });
  // Version `upto` is checked against proposals of step upto - 1: those before go.
  log.forgotten_proposals +=
      std::erase_if(log.proposals, [&](const Landed& l) { return l.number < upto - 1; });
  log.verified = upto;
  log.last_order = next_order;
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
  MutexLock lock(mu_);
  ++tasks_;
  if (window_violation_.empty()) window_violation_ = violation;
}

Status VersionOracle::Check(const std::vector<std::string>& shards, int64_t final_version) const {
  MutexLock lock(mu_);
  if (!window_violation_.empty()) return Status::DataLoss("oracle: " + window_violation_);
  if (!forgotten_failure_.empty()) return Status::DataLoss("oracle: " + forgotten_failure_);
  for (const std::string& shard : shards) {
    auto it = shards_.find(shard);
    if (it == shards_.end() || (it->second.versions.empty() && it->second.verified == 0)) {
      return Status::DataLoss(fmt::format("oracle: shard '{}' version 0: never written", shard));
    }
    int64_t next = 0, next_order = 0;
    ACAN_RETURN_IF_ERROR(Verify(shard, it->second, INT64_MAX, &next, &next_order));
    if (next != final_version + 1) {
      return Status::DataLoss(
          fmt::format("oracle: shard '{}' version {}: the last written is {}, not the final {}",
                      shard, next, next - 1, final_version));
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
  MutexLock lock(mu_);
  int64_t n = 0;
  for (const auto& [k, log] : shards_)
    n += log.forgotten + static_cast<int64_t>(log.versions.size());
  return n;
}

int64_t VersionOracle::version_copies() const {
  MutexLock lock(mu_);
  int64_t n = 0;
  for (const auto& [k, log] : shards_) {
    std::set<int64_t> distinct;
    for (const Landed& l : log.versions) distinct.insert(l.number);
    n += log.forgotten_copies + static_cast<int64_t>(log.versions.size() - distinct.size());
  }
  return n;
}

int64_t VersionOracle::tasks_seen() const {
  MutexLock lock(mu_);
  return tasks_;
}

int64_t VersionOracle::proposals_seen() const {
  MutexLock lock(mu_);
  int64_t n = 0;
  for (const auto& [k, log] : shards_) {
    n += log.forgotten_proposals + static_cast<int64_t>(log.proposals.size());
  }
  return n;
}

}  // namespace acan::runtime
