// Exposition: builds a page of metrics in the Prometheus text exposition format (version 0.0.4):
// one HELP and TYPE line per family, then its samples, label values escaped. A family's samples
// must be added together (the format wants them grouped); names are checked by the caller's
// tests through `promtool check metrics`. Not thread-safe: one scrape builds one.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace acan::obs {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Exposition {
 public:
  // Every sample of the page carries these labels first (e.g. job, role).
  explicit Exposition(Labels common = {}) : common_(std::move(common)) {}

  // A monotonic total. `name` ends in _total by convention.
  void Counter(std::string_view name, std::string_view help, double value,
               const Labels& labels = {});
  void Gauge(std::string_view name, std::string_view help, double value, const Labels& labels = {});
  // A histogram from counts per bucket: counts[i] counts observations in (bounds[i-1], bounds[i]]
  // (the last entry of `counts`, one past `bounds`, those above every bound), `sum` their total.
  void Histogram(std::string_view name, std::string_view help, std::span<const double> bounds,
                 std::span<const uint64_t> counts, double sum, const Labels& labels = {});

  const std::string& text() const { return text_; }

 private:
  void Header(std::string_view name, std::string_view help, std::string_view type);
  void Sample(std::string_view name, const Labels& labels, double value,
              const std::pair<std::string, std::string>* extra = nullptr);

  Labels common_;
  std::string text_;
  std::vector<std::string> families_;  // declared so far: a family's samples come together
};

// Label values as the format escapes them (backslash, double quote, newline).
std::string EscapeLabelValue(std::string_view value);

}  // namespace acan::obs
