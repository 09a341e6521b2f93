// Name tables for enums read from files and flags: one (name, value) list per enum, used by
// YamlMap::GetEnum, the writers and CLI11 transforms alike.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trident {

template <typename E>
using NameTable = std::vector<std::pair<std::string, E>>;

// The name of `value` in `table`, or "?" when absent.
template <typename E>
const std::string& NameOf(const NameTable<E>& table, E value) {
  static const std::string kUnknown = "?";
  for (const auto& [name, v] : table) {
    if (v == value) return name;
  }
  return kUnknown;
}

// The value named `name` in `table`, or nullopt.
template <typename E>
std::optional<E> ValueOf(const NameTable<E>& table, std::string_view name) {
  for (const auto& [n, v] : table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

// The names of a table, in order (for CLI11's IsMember and for messages).
template <typename E>
std::vector<std::string> NamesOf(const NameTable<E>& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.push_back(entry.first);
  return names;
}

// "a, b, c", for messages.
inline std::string JoinNames(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace trident
