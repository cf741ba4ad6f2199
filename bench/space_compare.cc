// Whole-run benchmark of the mem: space against a plain mutex+condition-variable queue, measured
// in the same run (docs/benchmarks.md). Prints throughput of put+get pairs with 1 KiB values on
// two threads, the ratio against the queue, the same with resident non-matching tuples, and the
// latency from a put to the wake-up of a blocked get.
//
//   space_compare [--messages N] [--rounds R] [--max-resident N]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "acan/space.h"

using namespace std::chrono;
using acan::Deadline;
using acan::Key;
using acan::Pattern;
using acan::Space;
using acan::Value;

namespace {

// The baseline: what a hand-written in-process queue of shared buffers costs.
class PlainQueue {
 public:
  void Push(Value v) {
    {
      std::lock_guard lock(mu_);
      q_.push_back(std::move(v));
    }
    cv_.notify_one();
  }
  Value Pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !q_.empty(); });
    Value v = std::move(q_.front());
    q_.pop_front();
    return v;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Value> q_;
};

// Each message is a new 1 KiB buffer, as a task's result would be; both sides pay for it.
Value Fresh(const Value& payload) { return Value::CopyOf(payload.data(), payload.size()); }

double Seconds(steady_clock::duration d) { return duration<double>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double QueueRate(size_t n, const Value& payload) {
  PlainQueue q;
  auto start = steady_clock::now();
  std::thread producer([&] {
    for (size_t i = 0; i < n; ++i) q.Push(Fresh(payload));
  });
  for (size_t i = 0; i < n; ++i) (void)q.Pop();
  producer.join();
  return n / Seconds(steady_clock::now() - start);
}

void Check(const acan::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "space_compare: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

// Producer puts `n` tuples under `key`; the consumer gets them with `pattern` (blocking).
double SpaceRate(Space& space, size_t n, const Value& payload, const std::string& key,
                 const std::string& pattern) {
  Key k = Key::Parse(key).value();
  Pattern p = Pattern::Parse(pattern).value();
  auto start = steady_clock::now();
  std::thread producer([&] {
    for (size_t i = 0; i < n; ++i) Check(space.Put(k, Fresh(payload), Deadline::Infinite()));
  });
  for (size_t i = 0; i < n; ++i) Check(space.Get(p, Deadline::Infinite()).status());
  producer.join();
  return n / Seconds(steady_clock::now() - start);
}

std::unique_ptr<Space> OpenMem(const char* uri = "mem:") {
  auto s = acan::OpenSpace(uri);
  Check(s.status());
  return std::move(s).value();
}

// Put-to-wake latency: the getter blocks first, then the putter stamps the time and puts.
template <typename PutFn, typename GetFn>
std::vector<double> WakeLatencies(size_t n, PutFn put, GetFn get) {
  std::vector<double> lat;
  lat.reserve(n);
  std::atomic<bool> waiting{false};
  std::atomic<int64_t> stamp{0};
  std::thread getter([&] {
    for (size_t i = 0; i < n; ++i) {
      waiting.store(true);
      get();
      auto now = steady_clock::now().time_since_epoch().count();
      lat.push_back(static_cast<double>(now - stamp.load()) / 1e3);
    }
  });
  for (size_t i = 0; i < n; ++i) {
    while (!waiting.exchange(false)) std::this_thread::yield();
    std::this_thread::sleep_for(20us);  // let the getter block
    stamp.store(steady_clock::now().time_since_epoch().count());
    put();
  }
  getter.join();
  std::sort(lat.begin(), lat.end());
  return lat;
}

}  // namespace

int main(int argc, char** argv) {
  size_t messages = 1'000'000, rounds = 5, max_resident = 1'000'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--messages"))
      messages = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--max-resident"))
      max_resident = std::strtoull(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: space_compare [--messages N] [--rounds R] [--max-resident N]\n");
      return 2;
    }
  }
  const Value payload = Value::FromVector(std::vector<std::byte>(1024));
  std::printf(
      "acan space benchmark: %zu put+get pairs of 1 KiB, 2 threads, median of %zu rounds\n\n",
      messages, rounds);

  // 1. mem: against the plain queue, rounds interleaved so both see the same machine.
  std::vector<double> q, lit, wild, nospin;
  auto s1 = OpenMem(), s2 = OpenMem(), s3 = OpenMem("mem:?spin=1024");
  // Warm-up: the allocator, the page cache and the spaces' nodes, for both sides alike.
  QueueRate(messages / 10, payload);
  SpaceRate(*s1, messages / 10, payload, "bench.task.x", "bench.task.x");
  SpaceRate(*s2, messages / 10, payload, "bench.task.x", "bench.task.*");
  SpaceRate(*s3, messages / 10, payload, "bench.task.x", "bench.task.x");
  for (size_t r = 0; r < rounds; ++r) {
    q.push_back(QueueRate(messages, payload));
    lit.push_back(SpaceRate(*s1, messages, payload, "bench.task.x", "bench.task.x"));
    wild.push_back(SpaceRate(*s2, messages, payload, "bench.task.x", "bench.task.*"));
    nospin.push_back(SpaceRate(*s3, messages, payload, "bench.task.x", "bench.task.x"));
  }
  double qm = Median(q);
  std::printf("%-44s %12s %8s\n", "", "msgs/s", "ratio");
  std::printf("%-44s %12.0f %8s\n", "mutex+condvar queue (baseline)", qm, "1.00");
  std::printf("%-44s %12.0f %8.2f\n", "mem: space, literal pattern", Median(lit), Median(lit) / qm);
  std::printf("%-44s %12.0f %8.2f\n", "mem: space, pattern bench.task.*", Median(wild),
              Median(wild) / qm);
  std::printf("%-44s %12.0f %8.2f\n", "mem:?spin=1024 (spin first), literal", Median(nospin),
              Median(nospin) / qm);

  // 2. Resident tuples that do not match the pattern being taken.
  std::printf("\nwith resident non-matching tuples (keys bench.idle.<i>; taking bench.task.*)\n");
  double empty_rate = 0;
  for (size_t resident : {size_t{0}, size_t{10'000}, size_t{1'000'000}}) {
    if (resident > max_resident) continue;
    auto s = OpenMem();
    for (size_t i = 0; i < resident; ++i) {
      Check(s->Put(Key::Parse("bench.idle." + std::to_string(i)).value(), payload));
    }
    SpaceRate(*s, messages / 10, payload, "bench.task.x", "bench.task.*");  // warm-up
    std::vector<double> rates;
    for (size_t r = 0; r < rounds; ++r) {
      rates.push_back(SpaceRate(*s, messages, payload, "bench.task.x", "bench.task.*"));
    }
    double m = Median(rates);
    if (resident == 0) empty_rate = m;
    std::printf("  %9zu resident: %12.0f msgs/s   %.2fx of empty\n", resident, m, m / empty_rate);
  }

  // 3. Latency from put to the wake-up of a blocked get.
  const size_t n = std::min<size_t>(messages / 50, 20'000);
  PlainQueue pq;
  auto ql = WakeLatencies(
      n, [&] { pq.Push(payload); }, [&] { (void)pq.Pop(); });
  Key k = Key::Parse("bench.wake").value();
  Pattern p = Pattern::Parse("bench.*").value();
  std::printf("\nput -> wake-up of a blocked get (%zu samples, microseconds)\n", n);
  std::printf("  %-28s median %7.1f   p99 %7.1f\n", "mutex+condvar queue", ql[n / 2],
              ql[n * 99 / 100]);
  // The default blocks at once, as the queue does; spin=1024 watches for a put first.
  for (const char* uri : {"mem:", "mem:?spin=1024"}) {
    auto opened = acan::OpenSpace(uri);
    Check(opened.status());
    Space& s = **opened;
    auto sl = WakeLatencies(
        n, [&] { Check(s.Put(k, payload, Deadline::Infinite())); },
        [&] { Check(s.Get(p, Deadline::Infinite()).status()); });
    std::printf("  %-28s median %7.1f   p99 %7.1f\n", uri, sl[n / 2], sl[n * 99 / 100]);
  }
  return 0;
}
