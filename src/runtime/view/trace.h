// A recorder of what a run did, written as Chrome Trace Event JSON (open it in Perfetto or
// chrome://tracing): a slice per task execution on its handler's lane, and instant events for
// retransmissions and crashes (DESIGN.md section 9). Thread-safe; bounded: past `max_events` it
// counts what it drops instead of growing.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "acan/clock.h"
#include "common/thread_annotations.h"

namespace acan::runtime {

class TraceRecorder {
 public:
  // Lanes: the manager's, then one per handler.
  static constexpr int kManagerLane = 0;
  static int HandlerLane(int handler) { return handler + 1; }

  explicit TraceRecorder(size_t max_events = 2'000'000);

  // A span of work on `lane`; `args` is a JSON object's text ("" for none).
  void Slice(int lane, std::string name, const char* category, Clock::time_point start,
             Clock::time_point end, std::string args = "");
  // A task's execution on a handler's lane: its args (attempt, read, exec and CPU milliseconds)
  // are kept as numbers and written out only by ToJson, so recording one allocates nothing
  // beyond the name.
  void TaskSlice(int lane, std::string name, const char* category, Clock::time_point start,
                 Clock::time_point end, int32_t attempt, double read_ms, double exec_ms,
                 double cpu_ms);
  // A moment on `lane` (a retransmission, a crash).
  void Instant(int lane, std::string name, const char* category, std::string args = "");

  // The trace as Chrome Trace Event JSON, lanes named, times in microseconds from the start.
  std::string ToJson(int handlers) const;
  size_t size() const;
  int64_t dropped() const;

 private:
  struct Event {
    int lane;
    char phase;  // 'X' complete, 'i' instant
    const char* category;
    std::string name;
    int64_t ts_ns;
    int64_t dur_ns;
    std::string args;
    // A TaskSlice's args (attempt 0: none).
    int32_t attempt = 0;
    double read_ms = 0, exec_ms = 0, cpu_ms = 0;
  };
  void Add(Event e);

  const Clock::time_point origin_;
  const size_t max_events_;
  mutable Mutex mu_;
  std::deque<Event> events_ GUARDED_BY(mu_);  // no copying of what is recorded as it grows
  int64_t dropped_ GUARDED_BY(mu_) = 0;
};

}  // namespace acan::runtime
