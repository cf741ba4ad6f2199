#include "runtime/chaos/chaos.h"

#include <chrono>

namespace acan::runtime {

ChaosOptions ChaosOptions::FromConfig(const ChaosConfig& c, uint64_t seed) {
  ChaosOptions o;
  if (!c.enabled) return o;
  o.speeds = c.speeds;
  o.speed_change_s = c.speed_change_s;
  o.crash_interval_s = c.crash_interval_s;
  o.crash_probability = c.crash_probability;
  o.crash_manager = c.crash_manager;
  o.speed_change_steps = c.speed_change_steps;
  o.crash_interval_steps = c.crash_interval_steps;
  o.seed = seed;
  return o;
}

int64_t CrashPoint(uint64_t seed, int64_t who, int64_t incarnation, int64_t range) {
  // mt19937_64's output is fixed by the standard (a distribution's is not): the same on every
  // build.
  std::mt19937_64 rng(seed * 1000003u + static_cast<uint64_t>(who) * 7919u +
                      static_cast<uint64_t>(incarnation));
  return 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(range));
}

ChaosOptions ChaosOptions::InSeconds(double step_s) const {
  ChaosOptions o = *this;
  if (speed_change_steps > 0) o.speed_change_s = speed_change_steps * step_s;
  if (crash_interval_steps > 0) o.crash_interval_s = crash_interval_steps * step_s;
  o.speed_change_steps = o.crash_interval_steps = 0;
  return o;
}

Chaos::Chaos(ChaosOptions options, int handlers, ChaosActions actions)
    : options_(std::move(options)),
      handlers_(handlers),
      actions_(std::move(actions)),
      rng_(options_.seed) {}

Chaos::~Chaos() { Stop(); }

void Chaos::Start() {
  if (!options_.speeds.empty()) {
    for (int h = 0; h < handlers_; ++h) {
      actions_.set_speed(h, options_.speeds[size_t(h) % options_.speeds.size()]);
    }
  }
  if (options_.speed_change_s > 0 ||
      (options_.crash_interval_s > 0 && options_.crash_probability > 0)) {
    thread_ = std::thread([this] { Loop(); });
  }
}

void Chaos::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void Chaos::Loop() {
  using Clock = std::chrono::steady_clock;
  auto secs = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  const bool crashes = options_.crash_interval_s > 0 && options_.crash_probability > 0;
  const auto start = Clock::now();
  auto next_speed = options_.speed_change_s > 0 && !options_.speeds.empty()
                        ? start + secs(options_.speed_change_s)
                        : Clock::time_point::max();
  std::uniform_real_distribution<double> coin(0, 1);
  // Crash moments of the current interval: index handlers_ is the manager.
  std::vector<Clock::time_point> crash_at(handlers_ + 1, Clock::time_point::max());
  auto interval_start = start;
  auto plan_interval = [&] {
    for (int c = 0; c <= handlers_; ++c) {
      bool manager = c == handlers_;
      bool hit = (!manager || options_.crash_manager) && coin(rng_) < options_.crash_probability;
      crash_at[c] = hit ? interval_start + secs(coin(rng_) * options_.crash_interval_s)
                        : Clock::time_point::max();
    }
  };
  if (crashes) plan_interval();
  MutexLock lock(mu_);
  while (!stop_) {
    auto wake = next_speed;
    for (auto t : crash_at) wake = std::min(wake, t);
    if (crashes) wake = std::min(wake, interval_start + secs(options_.crash_interval_s));
    // Until `wake` or Stop(); a wake-up for neither waits again.
    while (!stop_ && cv_.WaitUntil(mu_, wake) == std::cv_status::no_timeout) {
    }
    if (stop_) break;
    const auto now = Clock::now();
    if (now >= next_speed && !options_.speeds.empty()) {
      std::uniform_int_distribution<size_t> pick(0, options_.speeds.size() - 1);
      for (int h = 0; h < handlers_; ++h) actions_.set_speed(h, options_.speeds[pick(rng_)]);
      next_speed += secs(options_.speed_change_s);
    }
    for (int c = 0; c <= handlers_; ++c) {
      if (now < crash_at[c]) continue;
      crash_at[c] = Clock::time_point::max();
      if (c == handlers_) {
        actions_.crash_manager();
      } else {
        actions_.crash_handler(c);
      }
    }
    if (crashes && now >= interval_start + secs(options_.crash_interval_s)) {
      interval_start += secs(options_.crash_interval_s);
      plan_interval();
    }
  }
}

}  // namespace acan::runtime
