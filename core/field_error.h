// FieldError: one semantic problem in a data-model value, named by its key path
// ("layers[3].heads"), so the same check serves Validate() on values built in code and
// file:line:column messages on values read from YAML.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace trident {

struct FieldError {
  std::string key_path;
  std::string message;
  std::string hint;  // the likely fix; may be empty
};

using FieldCheck = std::optional<FieldError>;

// "must be in [min, max], got value" at `key_path` when `value` lies outside [min, max]:
// the check every loaded integer passes before any arithmetic uses it.
FieldCheck CheckRange(const std::string& key_path, int64_t value, int64_t min, int64_t max);

// "key_path: message; hint: ..." as an InvalidArgument status, or Ok for nullopt.
Status ToStatus(const FieldCheck& check);

// Formats "key_path: message[; hint: hint]".
std::string FormatFieldError(const FieldError& error);

// Joins a parent key path and a child key: ("layers[2]", "heads") -> "layers[2].heads".
std::string JoinKeyPath(const std::string& parent, std::string_view child);
std::string IndexKeyPath(const std::string& parent, size_t index);

}  // namespace trident
