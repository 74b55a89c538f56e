// Aligned text tables and byte sizes for the CLI's human output (`tpcomm doctor`, `tpcomm tune`).
// Header-only so the CPU tests can use the same formatting as the tools.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tpcomm::cli {

// "512 B", "1 KiB", "64 MiB", "1.5 MiB", "inf" (SIZE_MAX: a rule that covers every larger size).
inline std::string formatBytes(size_t b) {
  constexpr size_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;
  char buf[32];
  if (b == SIZE_MAX) return "inf";
  if (b >= GiB && b % GiB == 0)
    snprintf(buf, sizeof(buf), "%zu GiB", b / GiB);
  else if (b >= MiB && b % MiB == 0)
    snprintf(buf, sizeof(buf), "%zu MiB", b / MiB);
  else if (b >= KiB && b % KiB == 0)
    snprintf(buf, sizeof(buf), "%zu KiB", b / KiB);
  else if (b >= MiB)
    snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(b) / MiB);
  else if (b >= KiB)
    snprintf(buf, sizeof(buf), "%.1f KiB", static_cast<double>(b) / KiB);
  else
    snprintf(buf, sizeof(buf), "%zu B", b);
  return buf;
}

// Columns padded to their widest cell, two spaces apart, each line indented. A cell may be
// wider than the header; the last column is not padded (no trailing blanks). An empty header
// gives a table without a header line (key / value lists).
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t rows() const { return rows_.size() - 1; }

  std::string render(const std::string& indent = "  ") const {
    std::vector<size_t> width;
    for (const auto& r : rows_) {
      if (width.size() < r.size()) width.resize(r.size(), 0);
      for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    }
    std::string out;
    for (const auto& r : rows_) {
      if (&r == &rows_.front() && r.empty()) continue;
      std::string line = indent;
      for (size_t c = 0; c < r.size(); ++c) {
        line += r[c];
        if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace tpcomm::cli
