#include "cli/format.h"

#include <algorithm>

namespace trident {

std::string JsonText(const nlohmann::json& value) {
  return value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
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
