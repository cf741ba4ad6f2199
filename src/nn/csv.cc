#include "nn/csv.h"

#include <charconv>
#include <cmath>
#include <vector>

#include "nn/read_file.h"

namespace acan::nn {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

bool ParseFloat(std::string_view s, float* out) {
  if (s.empty()) return false;
  if (s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(*out);
}

struct Cell {
  std::string_view text;
  size_t offset;  // byte offset of the cell in the file
};

}  // namespace

Result<Dataset> ParseCsv(std::string_view text, std::string_view source, const CsvOptions& opts) {
  const std::string src(source);
  Dataset d;
  d.classification = opts.classification;
  d.target_width = opts.target_columns;
  int64_t columns = -1;
  int64_t max_label = -1;
  int64_t row = 0;  // 1-based line number in the file
  size_t pos = 0;
  std::vector<Cell> cells;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    const size_t line_start = pos;
    pos = end + 1;
    ++row;
    if (Trim(line).empty()) continue;
    cells.clear();
    size_t c0 = 0;
    while (true) {
      size_t comma = line.find(',', c0);
      if (comma == std::string_view::npos) comma = line.size();
      cells.push_back({Trim(line.substr(c0, comma - c0)), line_start + c0});
      if (comma == line.size()) break;
      c0 = comma + 1;
    }
    const auto where = [&](size_t col, size_t offset) {
      return src + ":" + std::to_string(row) + ":" + std::to_string(col + 1) + " (byte " +
             std::to_string(offset) + ")";
    };
    if (columns < 0) {
      float probe;
      bool header = false;
      for (const Cell& c : cells) header = header || !ParseFloat(c.text, &probe);
      columns = static_cast<int64_t>(cells.size());
      if (columns <= opts.target_columns) {
        return Status::InvalidArgument(where(0, line_start) + ": a row has " +
                                       std::to_string(columns) +
                                       " columns but needs at least one feature and " +
                                       std::to_string(opts.target_columns) + " target column(s)");
      }
      d.features = columns - opts.target_columns;
      if (header) continue;
    }
    if (static_cast<int64_t>(cells.size()) != columns) {
      return Status::InvalidArgument(where(0, line_start) + ": row has " +
                                     std::to_string(cells.size()) + " columns, expected " +
                                     std::to_string(columns) +
                                     " like the first row; fix the ragged row");
    }
    for (size_t c = 0; c < cells.size(); ++c) {
      float v;
      if (!ParseFloat(cells[c].text, &v)) {
        return Status::InvalidArgument(where(c, cells[c].offset) + ": cell \"" +
                                       std::string(cells[c].text.substr(0, 40)) +
                                       "\" is not a number");
      }
      const bool is_target = static_cast<int64_t>(c) >= d.features;
      if (is_target && opts.classification) {
        if (v < 0 || std::floor(v) != v || v > 1e7) {
          return Status::InvalidArgument(where(c, cells[c].offset) + ": label \"" +
                                         std::string(cells[c].text) +
                                         "\" is not a class number (an integer >= 0)");
        }
        max_label = std::max(max_label, static_cast<int64_t>(v));
      }
      (is_target ? d.y : d.x).push_back(v);
    }
    ++d.rows;
  }
  if (d.rows == 0) {
    return Status::InvalidArgument(src + ": no data rows; the file is empty or only a header");
  }
  d.classes = opts.classification ? max_label + 1 : 0;
  return d;
}

Result<Dataset> ReadCsv(const std::string& path, const CsvOptions& opts) {
  ACAN_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, "CSV file", Limits().data_file_bytes,
                                                        "check data.path"));
  return ParseCsv(text, path, opts);
}

}  // namespace acan::nn
