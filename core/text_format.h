// Human-readable numbers and aligned text tables for reports and messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trident {

std::string FormatCount(int64_t value);  // 124439808 -> "124,439,808"
std::string FormatBytes(double bytes);   // 1572864 -> "1.50 MiB"
std::string FormatFlops(double flops);   // 2.5e12 -> "2.50 TFLOP"
std::string FormatFixed(double value, int decimals);
std::string FormatMs(double ms);  // 12.5 -> "12.50 ms", 18551 -> "18.551 s"

// A text table: the first column left-aligned, the others right-aligned, a rule under the
// header and before a totals row.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void AddTotalRow(std::vector<std::string> row) { total_ = std::move(row); }
  std::string ToString() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::string> total_;
};

}  // namespace trident
