// Strict YAML reading and stable YAML writing: the one place Trident calls yaml-cpp.
//
// Reading: YamlDoc parses a file (yaml-cpp exceptions become a Status with file:line:column).
// YamlMap reads one mapping strictly: every key is looked up by name, values must have the
// expected type, and Finish() rejects any key that was not read, listing the keys that are
// allowed. Every error names "file:line:column: key.path: what was expected; hint".
// Semantic checks (ranges, consistency) are written once, as FieldErrors produced by a
// type's checker, and YamlDoc::ErrorAt locates them in the file by their key path.
//
// Writing: YamlWriter wraps YAML::Emitter with block style, keys in the caller's order and
// doubles in their shortest round-trip form, so the same value always writes the same text.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/field_error.h"
#include "core/names.h"
#include "core/status.h"

namespace trident {

class YamlDoc {
 public:
  static StatusOr<YamlDoc> Parse(std::string_view text, std::string file);
  static StatusOr<YamlDoc> Load(const std::string& path);

  const YAML::Node& root() const { return root_; }
  const std::string& file() const { return file_; }

  // "file:line:col: key_path: message; hint: ..." located at the node that `error.key_path`
  // names, or at its nearest existing ancestor.
  Status ErrorAt(const FieldError& error) const;
  // The same, located at `node`.
  Status ErrorAtNode(const YAML::Node& node, const FieldError& error) const;

 private:
  YamlDoc(YAML::Node root, std::string file) : root_(std::move(root)), file_(std::move(file)) {}
  YAML::Node root_;
  std::string file_;
};

class YamlMap {
 public:
  // Fails unless `node` is a mapping. `path` is the key path of `node` ("" for the root).
  static StatusOr<YamlMap> Open(const YamlDoc& doc, const YAML::Node& node, std::string path);

  bool Has(std::string_view key) const;

  // Required scalars. T is one of bool, int, int64_t, double, std::string.
  template <typename T>
  Status Get(std::string_view key, T* out);
  // Optional scalars: `out` keeps its value when the key is absent.
  template <typename T>
  Status GetOptional(std::string_view key, T* out);
  // A required list of scalars.
  template <typename T>
  Status GetList(std::string_view key, std::vector<T>* out);
  // A required string that must be one of `names`; stores the matching value.
  template <typename E>
  Status GetEnum(std::string_view key, const NameTable<E>& names, E* out);
  template <typename E>
  Status GetOptionalEnum(std::string_view key, const NameTable<E>& names, E* out);

  StatusOr<YamlMap> GetMap(std::string_view key);
  // Calls `fn(item, index)` for each mapping in the required list `key`.
  Status ForEachMap(std::string_view key, const std::function<Status(YamlMap&, int)>& fn);

  // Rejects keys that no Get* call asked for.
  Status Finish() const;

  const YamlDoc& doc() const { return *doc_; }
  const std::string& path() const { return path_; }
  std::string KeyPath(std::string_view key) const;
  Status Error(std::string_view key, std::string message, std::string hint = "") const;

 private:
  YamlMap(const YamlDoc& doc, YAML::Node node, std::string path)
      : doc_(&doc), node_(std::move(node)), path_(std::move(path)) {}
  YAML::Node Lookup(std::string_view key);
  Status ScalarError(const YAML::Node& value, const std::string& key_path,
                     std::string_view expected) const;
  template <typename T>
  Status Convert(const YAML::Node& value, const std::string& key_path, T* out) const;
  Status EnumError(std::string_view key, const std::string& got,
                   const std::vector<std::string>& names) const;

  const YamlDoc* doc_;
  YAML::Node node_;
  std::string path_;
  std::set<std::string, std::less<>> read_keys_;
};

// Human names of the scalar types, for "expected an integer" messages.
template <typename T>
constexpr std::string_view YamlTypeName();

// Shortest decimal text that reads back to exactly `value`; an exponent always follows a
// decimal point ("3.0e-04", not "3e-04"), so YAML 1.1 readers see a float too.
std::string FormatDouble(double value);

class YamlWriter {
 public:
  YamlWriter();

  YamlWriter& BeginMap(bool flow = false);
  YamlWriter& EndMap();
  YamlWriter& BeginList(bool flow = false);
  YamlWriter& EndList();
  YamlWriter& Key(std::string_view key);
  YamlWriter& Value(std::string_view value);
  YamlWriter& Value(const char* value) { return Value(std::string_view(value)); }
  YamlWriter& Value(const std::string& value) { return Value(std::string_view(value)); }
  YamlWriter& Value(double value);
  YamlWriter& Value(int64_t value);
  YamlWriter& Value(int value) { return Value(static_cast<int64_t>(value)); }
  YamlWriter& Value(bool value);
  YamlWriter& Comment(std::string_view text);
  template <typename T>
  YamlWriter& Field(std::string_view key, const T& value) {
    return Key(key).Value(value);
  }
  template <typename T>
  YamlWriter& FlowList(std::string_view key, const std::vector<T>& values) {
    Key(key).BeginList(/*flow=*/true);
    for (const T& v : values) Value(v);
    return EndList();
  }

  // The document text, ending in a newline. REQUIRES: every Begin* has been ended.
  std::string Text() const;

 private:
  YAML::Emitter out_;
};

// ---- implementation of the templates ----

template <>
constexpr std::string_view YamlTypeName<bool>() {
  return "true or false";
}
template <>
constexpr std::string_view YamlTypeName<int>() {
  return "an integer";
}
template <>
constexpr std::string_view YamlTypeName<int64_t>() {
  return "an integer";
}
template <>
constexpr std::string_view YamlTypeName<double>() {
  return "a number";
}
template <>
constexpr std::string_view YamlTypeName<std::string>() {
  return "a string";
}

template <typename T>
Status YamlMap::Convert(const YAML::Node& value, const std::string& key_path, T* out) const {
  if (!value.IsScalar()) return ScalarError(value, key_path, YamlTypeName<T>());
  T converted{};
  if (!YAML::convert<T>::decode(value, converted)) {
    return ScalarError(value, key_path, YamlTypeName<T>());
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(converted)) return ScalarError(value, key_path, "a finite number");
  }
  *out = std::move(converted);
  return Status::Ok();
}

template <typename T>
Status YamlMap::Get(std::string_view key, T* out) {
  YAML::Node value = Lookup(key);
  if (!value) {
    return Error(key, "missing required key", "add '" + std::string(key) + ": <value>'");
  }
  return Convert(value, KeyPath(key), out);
}

template <typename T>
Status YamlMap::GetOptional(std::string_view key, T* out) {
  YAML::Node value = Lookup(key);
  if (!value) return Status::Ok();
  return Convert(value, KeyPath(key), out);
}

template <typename T>
Status YamlMap::GetList(std::string_view key, std::vector<T>* out) {
  YAML::Node value = Lookup(key);
  if (!value) return Error(key, "missing required key", "add '" + std::string(key) + ": [...]'");
  if (!value.IsSequence()) {
    return doc_->ErrorAtNode(value, {KeyPath(key), "expected a list", ""});
  }
  out->clear();
  for (size_t i = 0; i < value.size(); ++i) {
    T item{};
    TRIDENT_RETURN_IF_ERROR(Convert(value[i], KeyPath(key) + "[" + std::to_string(i) + "]", &item));
    out->push_back(std::move(item));
  }
  return Status::Ok();
}

template <typename E>
Status YamlMap::GetEnum(std::string_view key, const NameTable<E>& names, E* out) {
  std::string text;
  TRIDENT_RETURN_IF_ERROR(Get(key, &text));
  std::optional<E> value = ValueOf(names, text);
  if (!value) return EnumError(key, text, NamesOf(names));
  *out = *value;
  return Status::Ok();
}

template <typename E>
Status YamlMap::GetOptionalEnum(std::string_view key, const NameTable<E>& names, E* out) {
  if (!Has(key)) return Status::Ok();
  return GetEnum(key, names, out);
}

}  // namespace trident
