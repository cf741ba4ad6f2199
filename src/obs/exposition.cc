#include "obs/exposition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace acan::obs {

namespace {

// Backslash and newline escaped; double quotes too in a label value (not in HELP text).
std::string Escape(std::string_view text, bool quotes) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) { return Escape(value, true); }

void Exposition::Header(std::string_view name, std::string_view help, std::string_view type) {
  if (std::find(families_.begin(), families_.end(), name) != families_.end()) return;
  families_.emplace_back(name);
  text_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, Escape(help, false), name, type);
}

void Exposition::Sample(std::string_view name, const Labels& labels, double value,
                        const std::pair<std::string, std::string>* extra) {
  text_ += name;
  bool first = true;
  auto add = [&](const std::string& k, const std::string& v) {
    text_ += first ? "{" : ",";
    first = false;
    text_ += fmt::format("{}=\"{}\"", k, EscapeLabelValue(v));
  };
  for (const auto& [k, v] : common_) add(k, v);
  for (const auto& [k, v] : labels) add(k, v);
  if (extra) add(extra->first, extra->second);
  if (!first) text_ += "}";
  text_ += " " + Number(value) + "\n";
}

void Exposition::Counter(std::string_view name, std::string_view help, double value,
                         const Labels& labels) {
  Header(name, help, "counter");
  Sample(name, labels, value);
}

void Exposition::Gauge(std::string_view name, std::string_view help, double value,
                       const Labels& labels) {
  Header(name, help, "gauge");
  Sample(name, labels, value);
}

void Exposition::Histogram(std::string_view name, std::string_view help,
                           std::span<const double> bounds, std::span<const uint64_t> counts,
                           double sum, const Labels& labels) {
  Header(name, help, "histogram");
  uint64_t cumulative = 0;
  const std::string bucket = std::string(name) + "_bucket";
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += i < counts.size() ? counts[i] : 0;
    const std::pair<std::string, std::string> le{"le", Number(bounds[i])};
    Sample(bucket, labels, double(cumulative), &le);
  }
  if (counts.size() > bounds.size()) cumulative += counts[bounds.size()];
  const std::pair<std::string, std::string> inf{"le", "+Inf"};
  Sample(bucket, labels, double(cumulative), &inf);
  Sample(std::string(name) + "_sum", labels, sum);
  Sample(std::string(name) + "_count", labels, double(cumulative));
}

}  // namespace acan::obs
