#include "space/testing/fault_space.h"

#include <fmt/format.h>

#include <string_view>

#include "common/split_mix.h"

namespace acan {

namespace {

// FNV-1a: fixed by its definition, unlike std::hash, so a seed means the same on every build.
uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

Fault FaultOptions::Decide(const std::string& key, int64_t attempt) const {
  const uint64_t h =
      SplitMix64(SplitMix64(seed ^ Fnv1a(key)) ^ static_cast<uint64_t>(attempt) * 0x9e37ULL);
  const double roll = UnitInterval(h);
  double edge = drop;
  if (roll < edge) return Fault::kDrop;
  if (roll < (edge += duplicate)) return Fault::kDuplicate;
  if (roll < (edge += delay)) return Fault::kDelay;
  if (roll < (edge += reorder)) return Fault::kReorder;
  if (roll < (edge += tamper)) return Fault::kTamper;
  return Fault::kNone;
}

FaultSpace::FaultSpace(std::unique_ptr<Space> inner, FaultOptions options,
                       std::shared_ptr<FaultCounts> counts)
    : SpaceWrapper(inner.get()),
      owned_(std::move(inner)),
      options_(std::move(options)),
      counts_(std::move(counts)) {
  for (const std::string& p : options_.patterns) patterns_.push_back(Pattern::Parse(p).value());
  delivery_ = std::thread([this] { DeliverDelayed(); });
}

FaultSpace::~FaultSpace() { Close(); }

Status FaultSpace::Put(Key key, Value value, Deadline deadline) {
  return PutWithFaults(std::move(key), std::move(value), nullptr, deadline);
}

Status FaultSpace::PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) {
  return PutWithFaults(std::move(key), std::move(value), &fence, deadline);
}

Status FaultSpace::Land(Key key, Value value, const Fence* fence, Deadline deadline) {
  if (fence == nullptr) return inner()->Put(std::move(key), std::move(value), deadline);
  return inner()->PutFenced(std::move(key), std::move(value), *fence, deadline);
}

Status FaultSpace::PutWithFaults(Key key, Value value, const Fence* fence, Deadline deadline) {
  bool hit = patterns_.empty();
  for (const Pattern& p : patterns_) hit = hit || p.Matches(key);
  if (!hit) return Land(std::move(key), std::move(value), fence, deadline);
  Fault fault;
  {
    MutexLock lock(mu_);
    fault = options_.Decide(key.str(), attempts_[key.str()]++);
    if (fault == Fault::kReorder && held_.has_value()) fault = Fault::kNone;  // one at a time
    if (fault == Fault::kDelay || fault == Fault::kReorder) {
      Delayed d{Clock::now() + options_.delay_by, std::move(key), std::move(value),
                fence ? std::optional<Fence>(*fence) : std::nullopt};
      if (fault == Fault::kDelay) {
        counts_->delayed.fetch_add(1);
        delayed_.push(std::move(d));
      } else {
        counts_->reordered.fetch_add(1);
        held_ = std::move(d);
      }
      delayed_cv_.Signal();
      return Status::Ok();
    }
  }
  Status s;
  if (fault == Fault::kTamper && value.size() > 0) {
    // Other bytes of the same size under the same key: a copy, whose buffer marks it.
    std::vector<std::byte> bytes(value.data(), value.data() + value.size());
    bytes[0] ^= std::byte{1};
    Value forged = Value::FromVector(std::move(bytes));
    {
      MutexLock lock(mu_);
      tampered_at_.insert(forged.data());
      tampered_.push_back(forged);
    }
    counts_->tampered.fetch_add(1);
    counts_->AddTampered(key.str());
    s = Land(std::move(key), std::move(forged), fence, deadline);
  } else if (fault == Fault::kDrop) {
    counts_->dropped.fetch_add(1);
  } else {
    if (fault == Fault::kDuplicate) {
      counts_->duplicated.fetch_add(1);
      s = Land(key, value, fence, deadline);
    }
    if (s.ok()) s = Land(std::move(key), std::move(value), fence, deadline);
  }
  ReleaseHeld();  // after this put: the held one lands second
  return s;
}

bool FaultSpace::IsTamperedValue(const Value& v) {
  MutexLock lock(mu_);
  return !tampered_at_.empty() && v.size() > 0 && tampered_at_.contains(v.data());
}

Status FaultSpace::TamperedStatus(const Key& key) const {
  return Status::DataLoss(fmt::format(
      "fault space: tuple '{}': tampered: injected fault: its bytes are not its writer's",
      key.str()));
}

Result<std::optional<Tuple>> FaultSpace::Read(const Pattern& p) {
  auto r = inner()->Read(p);
  if (r.ok() && r->has_value() && IsTamperedValue((*r)->value)) return TamperedStatus((*r)->key);
  return r;
}

Result<Tuple> FaultSpace::Get(const Pattern& p, Deadline d) {
  auto r = inner()->Get(p, d);
  if (r.ok() && IsTamperedValue(r->value)) return TamperedStatus(r->key);
  return r;
}

Result<std::vector<Tuple>> FaultSpace::Take(const Pattern& p, size_t n, Deadline d) {
  auto r = inner()->Take(p, n, d);
  if (!r.ok()) return r;
  std::vector<Tuple> kept;
  std::optional<Key> refused;
  for (Tuple& t : *r) {
    if (IsTamperedValue(t.value)) {
      if (!refused) refused = t.key;
    } else {
      kept.push_back(std::move(t));
    }
  }
  if (kept.empty() && refused) return TamperedStatus(*refused);
  return kept;
}

Result<std::vector<Tuple>> FaultSpace::ReadAll(const Pattern& p, size_t limit) {
  auto r = inner()->ReadAll(p, limit);
  if (!r.ok()) return r;
  for (const Tuple& t : *r) {
    if (IsTamperedValue(t.value)) return TamperedStatus(t.key);
  }
  return r;
}

Result<uint64_t> FaultSpace::SwapCell(const Key& key, Value value, uint64_t expected,
                                      Deadline deadline) {
  bool hit = patterns_.empty();
  for (const Pattern& p : patterns_) hit = hit || p.Matches(key);
  if (!hit) return inner()->SwapCell(key, std::move(value), expected, deadline);
  Fault fault;
  {
    MutexLock lock(mu_);
    fault = options_.Decide(key.str(), attempts_[key.str()]++);
  }
  switch (fault) {
    case Fault::kDrop:
      counts_->dropped.fetch_add(1);
      return Status::Unavailable(fmt::format(
          "injected fault: the swap of cell '{}' was lost on its way (not applied)", key.str()));
    case Fault::kDuplicate: {
      counts_->duplicated.fetch_add(1);
      ACAN_ASSIGN_OR_RETURN(uint64_t revision,
                            inner()->SwapCell(key, std::move(value), expected, deadline));
      return Status::Unavailable(fmt::format(
          "injected fault: the answer to the swap of cell '{}' was lost (it was applied: "
          "revision {})",
          key.str(), revision));
    }
    case Fault::kDelay:
    case Fault::kReorder:
    case Fault::kTamper:  // a cell is not chunked: held back instead
      (fault == Fault::kDelay ? counts_->delayed : counts_->reordered).fetch_add(1);
      std::this_thread::sleep_for(
          std::min<Clock::duration>(options_.delay_by, deadline.at() - Clock::now()));
      break;
    case Fault::kNone:
      break;
  }
  return inner()->SwapCell(key, std::move(value), expected, deadline);
}

void FaultSpace::ReleaseHeld() {
  std::optional<Delayed> d;
  {
    MutexLock lock(mu_);
    if (!held_.has_value() || closing_) return;
    d.swap(held_);
  }
  (void)Land(std::move(d->key), std::move(d->value), d->fence ? &*d->fence : nullptr,
             Deadline::Infinite());
}

void FaultSpace::DeliverDelayed() {
  MutexLock lock(mu_);
  while (!closing_) {
    if (delayed_.empty() && !held_.has_value()) {
      delayed_cv_.Wait(mu_);
      continue;
    }
    // Copies: the queue may grow (and move its elements) while the wait releases the lock.
    Clock::time_point due = Clock::time_point::max();
    if (!delayed_.empty()) due = delayed_.top().at;
    if (held_.has_value()) due = std::min(due, held_->at);
    if (delayed_cv_.WaitUntil(mu_, due) != std::cv_status::timeout || closing_) continue;
    const auto now = Clock::now();
    std::optional<Delayed> d;
    if (held_.has_value() && held_->at <= now) {
      d.swap(held_);  // no put came along to overtake it
    } else if (!delayed_.empty() && delayed_.top().at <= now) {
      d = delayed_.top();
      delayed_.pop();
    }
    if (!d.has_value()) continue;
    mu_.Unlock();
    (void)Land(std::move(d->key), std::move(d->value), d->fence ? &*d->fence : nullptr,
               Deadline::Infinite());
    mu_.Lock();
  }
}

void FaultSpace::Close() {
  {
    MutexLock lock(mu_);
    if (closing_) return;
    closing_ = true;
    delayed_cv_.SignalAll();
  }
  if (delivery_.joinable()) delivery_.join();
  inner()->Close();
}

}  // namespace acan
