// Deadlines for blocking calls. Every blocking call in acan takes a Deadline; Deadline::Infinite()
// waits forever and Deadline::Now() makes a call non-blocking. Plain values, thread-safe to copy.
#pragma once

#include <chrono>

namespace acan {

using Clock = std::chrono::steady_clock;

class Deadline {
 public:
  constexpr explicit Deadline(Clock::time_point at) : at_(at) {}
  static Deadline Infinite() { return Deadline(Clock::time_point::max()); }
  static Deadline Now() { return Deadline(Clock::now()); }
  template <typename Rep, typename Period>
  static Deadline After(std::chrono::duration<Rep, Period> d) {
    return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(d));
  }

  Clock::time_point at() const { return at_; }
  bool infinite() const { return at_ == Clock::time_point::max(); }
  bool expired() const { return !infinite() && Clock::now() >= at_; }

 private:
  Clock::time_point at_;
};

}  // namespace acan
