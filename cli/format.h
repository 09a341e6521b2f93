// Aligned text tables and JSON text for command output (numbers: core/text_format.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/text_format.h"

namespace trident {

// JSON text for --json output, indented by 2. Strings that are not valid UTF-8 (a name
// copied from a Latin-1 file) have their bad bytes replaced, never abort the command.
std::string JsonText(const nlohmann::json& value);

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
