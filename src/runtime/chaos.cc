#include "runtime/chaos.h"

#include <chrono>

namespace acan::runtime {

Chaos::Chaos(ChaosOptions options, int handlers, ChaosActions actions)
    : options_(std::move(options)), handlers_(handlers), actions_(std::move(actions)),
      rng_(options_.seed) {}

Chaos::~Chaos() { Stop(); }

void Chaos::Start() {
  if (!options_.speeds.empty()) {
    for (int h = 0; h < handlers_; ++h) {
      actions_.set_speed(h, options_.speeds[size_t(h) % options_.speeds.size()]);
    }
  }
  if (options_.speed_change_s > 0 || (options_.crash_interval_s > 0 && options_.crash_probability > 0)) {
    thread_ = std::thread([this] { Loop(); });
  }
}

void Chaos::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Chaos::Loop() {
  using Clock = std::chrono::steady_clock;
  auto secs = [](double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };
  const auto start = Clock::now();
  auto next_speed = options_.speed_change_s > 0 ? start + secs(options_.speed_change_s) : Clock::time_point::max();
  auto next_crash = options_.crash_interval_s > 0 && options_.crash_probability > 0
                        ? start + secs(options_.crash_interval_s)
                        : Clock::time_point::max();
  std::uniform_real_distribution<double> coin(0, 1);
  std::unique_lock lock(mu_);
  while (!stop_) {
    auto wake = std::min(next_speed, next_crash);
    if (cv_.wait_until(lock, wake, [&] { return stop_; })) break;
    const auto now = Clock::now();
    if (now >= next_speed) {
      for (int h = 0; h < handlers_; ++h) {
        std::uniform_int_distribution<size_t> pick(0, options_.speeds.size() - 1);
        actions_.set_speed(h, options_.speeds[pick(rng_)]);
      }
      next_speed += secs(options_.speed_change_s);
    }
    if (now >= next_crash) {
      for (int h = 0; h < handlers_; ++h) {
        if (coin(rng_) < options_.crash_probability) actions_.crash_handler(h);
      }
      if (options_.crash_manager && coin(rng_) < options_.crash_probability) actions_.crash_manager();
      next_crash += secs(options_.crash_interval_s);
    }
  }
}

}  // namespace acan::runtime
