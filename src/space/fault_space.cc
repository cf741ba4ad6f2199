#include "space/fault_space.h"

namespace acan {

FaultSpace::FaultSpace(std::unique_ptr<Space> inner, FaultOptions options,
                       std::shared_ptr<FaultCounts> counts)
    : SpaceWrapper(inner.get()),
      owned_(std::move(inner)),
      options_(std::move(options)),
      counts_(std::move(counts)),
      rng_(options_.seed) {
  for (const std::string& p : options_.patterns) patterns_.push_back(Pattern::Parse(p).value());
  delivery_ = std::thread([this] { DeliverDelayed(); });
}

FaultSpace::~FaultSpace() { Close(); }

Status FaultSpace::Put(Key key, Value value, Deadline deadline) {
  bool hit = patterns_.empty();
  for (const Pattern& p : patterns_) hit = hit || p.Matches(key);
  if (!hit) return inner()->Put(std::move(key), std::move(value), deadline);
  double roll;
  {
    std::lock_guard lock(mu_);
    roll = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (roll < options_.delay + options_.drop + options_.duplicate &&
        roll >= options_.drop + options_.duplicate) {
      counts_->delayed.fetch_add(1);
      delayed_.push({Clock::now() + options_.delay_by, std::move(key), std::move(value)});
      delayed_cv_.notify_one();
      return Status::Ok();
    }
  }
  if (roll < options_.drop) {
    counts_->dropped.fetch_add(1);
    return Status::Ok();
  }
  if (roll < options_.drop + options_.duplicate) {
    counts_->duplicated.fetch_add(1);
    ACAN_RETURN_IF_ERROR(inner()->Put(key, value, deadline));
  }
  return inner()->Put(std::move(key), std::move(value), deadline);
}

void FaultSpace::DeliverDelayed() {
  std::unique_lock lock(mu_);
  while (!closing_) {
    if (delayed_.empty()) {
      delayed_cv_.wait(lock);
      continue;
    }
    // A copy: the queue may grow (and move its elements) while the wait releases the lock.
    const Clock::time_point due = delayed_.top().at;
    if (delayed_cv_.wait_until(lock, due) == std::cv_status::timeout && !delayed_.empty() &&
        delayed_.top().at <= Clock::now()) {
      Delayed d = delayed_.top();
      delayed_.pop();
      lock.unlock();
      (void)inner()->Put(std::move(d.key), std::move(d.value), Deadline::Infinite());
      lock.lock();
    }
  }
}

void FaultSpace::Close() {
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
    closing_ = true;
    delayed_cv_.notify_all();
  }
  if (delivery_.joinable()) delivery_.join();
  inner()->Close();
}

}  // namespace acan
