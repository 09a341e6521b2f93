#include "core/field_error.h"

namespace trident {

std::string FormatFieldError(const FieldError& error) {
  std::string text = error.key_path.empty() ? error.message : error.key_path + ": " + error.message;
  if (!error.hint.empty()) text += "; hint: " + error.hint;
  return text;
}

FieldCheck CheckRange(const std::string& key_path, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return std::nullopt;
  return FieldError{key_path,
                    "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                        std::to_string(value),
                    ""};
}

Status ToStatus(const FieldCheck& check) {
  if (!check) return Status::Ok();
  return InvalidArgument(FormatFieldError(*check));
}

std::string JoinKeyPath(const std::string& parent, std::string_view child) {
  if (parent.empty()) return std::string(child);
  return parent + "." + std::string(child);
}

std::string IndexKeyPath(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

}  // namespace trident
