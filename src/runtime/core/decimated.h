// Decimated: a time series kept within a bound however long the run, so a run's history (the
// metrics rows behind metrics.csv, the dashboard's samples) does not grow with its length (the
// soak: a row every 0.5 s, kept as JSON and as a row, was 0.4 MB a minute). Until `cap` entries
// are held every entry is kept; then every other one is dropped and only every second entry
// pushed afterwards is kept, so the series still spans the whole run, evenly, at half the
// resolution each time it fills. Push(v, true) keeps an entry whatever its turn (a run's last
// row). Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace acan::runtime {

template <typename T>
class Decimated {
 public:
  // 1024 rows: full after 8.5 minutes of rows every 0.5 s, then 512 to 1024 over the whole run.
  explicit Decimated(size_t cap = 1024) : cap_(cap < 2 ? 2 : cap) {}

  void Push(T v, bool keep = false) {
    const uint64_t n = pushed_++;
    if (n % stride_ != 0 && !keep) return;
    if (items_.size() + 1 >= cap_) {
      Halve();
      if (n % stride_ != 0 && !keep) return;  // not on the new stride
    }
    items_.push_back(std::move(v));
  }
  const std::vector<T>& items() const { return items_; }
  std::vector<T> Take() && { return std::move(items_); }
  // Entries pushed per entry kept now.
  uint64_t stride() const { return stride_; }

 private:
  void Halve() {
    size_t j = 0;
    for (size_t i = 0; i < items_.size(); i += 2) items_[j++] = std::move(items_[i]);
    items_.resize(j);
    stride_ *= 2;
  }

  size_t cap_;
  uint64_t stride_ = 1;
  uint64_t pushed_ = 0;
  std::vector<T> items_;
};

}  // namespace acan::runtime
