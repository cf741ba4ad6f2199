#include "runtime/view/trace.h"

#include <nlohmann/json.hpp>

namespace acan::runtime {

TraceRecorder::TraceRecorder(size_t max_events) : origin_(Clock::now()), max_events_(max_events) {}

void TraceRecorder::Add(Event e) {
  MutexLock lock(mu_);
  if (events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  events_.push_back(std::move(e));
}

void TraceRecorder::Slice(int lane, std::string name, const char* category, Clock::time_point start,
                          Clock::time_point end, std::string args) {
  using std::chrono::nanoseconds;
  Add({lane, 'X', category, std::move(name),
       std::chrono::duration_cast<nanoseconds>(start - origin_).count(),
       std::chrono::duration_cast<nanoseconds>(end - start).count(), std::move(args)});
}

void TraceRecorder::TaskSlice(int lane, std::string name, const char* category,
                              Clock::time_point start, Clock::time_point end, int32_t attempt,
                              double read_ms, double exec_ms, double cpu_ms) {
  using std::chrono::nanoseconds;
  Add({lane, 'X', category, std::move(name),
       std::chrono::duration_cast<nanoseconds>(start - origin_).count(),
       std::chrono::duration_cast<nanoseconds>(end - start).count(), std::string(), attempt,
       read_ms, exec_ms, cpu_ms});
}

void TraceRecorder::Instant(int lane, std::string name, const char* category, std::string args) {
  Add({lane, 'i', category, std::move(name),
       std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin_).count(), 0,
       std::move(args)});
}

size_t TraceRecorder::size() const {
  MutexLock lock(mu_);
  return events_.size();
}

int64_t TraceRecorder::dropped() const {
  MutexLock lock(mu_);
  return dropped_;
}

std::string TraceRecorder::ToJson(int handlers) const {
  using nlohmann::json;
  json events = json::array();
  auto lane_name = [&](int lane, const std::string& name) {
    events.push_back({{"ph", "M"},
                      {"pid", 1},
                      {"tid", lane},
                      {"name", "thread_name"},
                      {"args", {{"name", name}}}});
    events.push_back({{"ph", "M"},
                      {"pid", 1},
                      {"tid", lane},
                      {"name", "thread_sort_index"},
                      {"args", {{"sort_index", lane}}}});
  };
  lane_name(kManagerLane, "manager");
  for (int h = 0; h < handlers; ++h) lane_name(HandlerLane(h), "handler " + std::to_string(h));
  MutexLock lock(mu_);
  for (const Event& e : events_) {
    json j = {{"ph", std::string(1, e.phase)},
              {"pid", 1},
              {"tid", e.lane},
              {"name", e.name},
              {"cat", e.category},
              {"ts", double(e.ts_ns) / 1e3}};
    if (e.phase == 'X') j["dur"] = double(e.dur_ns) / 1e3;
    if (e.phase == 'i') j["s"] = "t";
    if (!e.args.empty()) j["args"] = json::parse(e.args, nullptr, false);
    if (e.attempt > 0) {
      j["args"] = {{"attempt", e.attempt},
                   {"read_ms", e.read_ms},
                   {"exec_ms", e.exec_ms},
                   {"cpu_ms", e.cpu_ms}};
    }
    events.push_back(std::move(j));
  }
  json out = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  if (dropped_ > 0) out["otherData"] = {{"dropped_events", dropped_}};
  return out.dump();
}

}  // namespace acan::runtime
