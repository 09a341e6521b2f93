#include "core/text_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace trident {

std::string FormatCount(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return value < 0 ? "-" + text : text;
}

std::string FormatFixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

std::string FormatMs(double ms) {
  return ms >= 1000 ? FormatFixed(ms / 1000, 3) + " s" : FormatFixed(ms, 2) + " ms";
}

namespace {

std::string Scaled(double value, const char* const* units, int num_units, double step) {
  int unit = 0;
  while (std::fabs(value) >= step && unit + 1 < num_units) {
    value /= step;
    ++unit;
  }
  return FormatFixed(value, unit == 0 ? 0 : 2) + " " + units[unit];
}

}  // namespace

std::string FormatBytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  return Scaled(bytes, kUnits, 6, 1024.0);
}

std::string FormatFlops(double flops) {
  static const char* const kUnits[] = {"FLOP",  "KFLOP", "MFLOP", "GFLOP",
                                       "TFLOP", "PFLOP", "EFLOP"};
  return Scaled(flops, kUnits, 7, 1000.0);
}

std::string TextTable::ToString() const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&width](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);
  measure(total_);
  auto line = [&width](const std::vector<std::string>& row) {
    std::string text;
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      std::string pad(width[i] - row[i].size(), ' ');
      text += i == 0 ? row[i] + pad : "  " + pad + row[i];
    }
    return text + "\n";
  };
  size_t total_width = 0;
  for (size_t w : width) total_width += w + 2;
  std::string rule(total_width - 2, '-');
  std::string text = line(header_) + rule + "\n";
  for (const auto& row : rows_) text += line(row);
  if (!total_.empty()) text += rule + "\n" + line(total_);
  return text;
}

}  // namespace trident
