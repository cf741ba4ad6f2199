// Counters and latency histograms shared by the space backends. Lock-free (relaxed atomics), so
// a backend records after releasing its own lock and keeps its critical sections short.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>

#include "acan/space.h"

namespace acan {

class StatsRecorder {
 public:
  // Records one finished call of `op` that started at `start` with outcome `status`.
  void Record(SpaceOp op, Clock::time_point start, const Status& status) {
    auto i = static_cast<size_t>(op);
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    calls_[i].fetch_add(1, std::memory_order_relaxed);
    size_t bucket = ns <= 0 ? 0 : static_cast<size_t>(std::bit_width(uint64_t(ns)) - 1);
    latency_[i][std::min(bucket, LatencyHistogram::kBuckets - 1)].fetch_add(
        1, std::memory_order_relaxed);
    sum_ns_[i].fetch_add(uint64_t(std::max<int64_t>(ns, 0)), std::memory_order_relaxed);
    switch (status.code()) {
      case StatusCode::kOk:
        break;
      case StatusCode::kTimeout:
        timeouts_.fetch_add(1, std::memory_order_relaxed);
        break;
      case StatusCode::kCancelled:
        cancelled_.fetch_add(1, std::memory_order_relaxed);
        break;
      default:
        rejected_.fetch_add(1, std::memory_order_relaxed);
        break;
    }
  }
  void CountTaken(size_t n) { taken_.fetch_add(n, std::memory_order_relaxed); }
  void CountBytes(uint64_t put, uint64_t returned) {
    if (put) bytes_put_.fetch_add(put, std::memory_order_relaxed);
    if (returned) bytes_returned_.fetch_add(returned, std::memory_order_relaxed);
  }
  SpaceStats Snapshot(uint64_t tuples, uint64_t bytes) const {
    SpaceStats s;
    s.tuples = tuples;
    s.bytes = bytes;
    for (size_t i = 0; i < s.calls.size(); ++i) {
      s.calls[i] = calls_[i].load(std::memory_order_relaxed);
      for (size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
        s.latency[i].counts[b] = latency_[i][b].load(std::memory_order_relaxed);
        s.latency[i].total += s.latency[i].counts[b];
      }
      s.latency[i].sum_ns = sum_ns_[i].load(std::memory_order_relaxed);
    }
    s.tuples_taken = taken_.load(std::memory_order_relaxed);
    s.timeouts = timeouts_.load(std::memory_order_relaxed);
    s.cancelled = cancelled_.load(std::memory_order_relaxed);
    s.rejected = rejected_.load(std::memory_order_relaxed);
    s.bytes_put = bytes_put_.load(std::memory_order_relaxed);
    s.bytes_returned = bytes_returned_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  static constexpr size_t kOps = size_t(SpaceOp::kCount);
  std::array<std::atomic<uint64_t>, kOps> calls_{};
  std::array<std::atomic<uint64_t>, kOps> sum_ns_{};
  std::array<std::array<std::atomic<uint64_t>, LatencyHistogram::kBuckets>, kOps> latency_{};
  std::atomic<uint64_t> taken_{0}, timeouts_{0}, cancelled_{0}, rejected_{0};
  std::atomic<uint64_t> bytes_put_{0}, bytes_returned_{0};
};

}  // namespace acan
