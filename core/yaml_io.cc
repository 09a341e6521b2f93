#include "core/yaml_io.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <system_error>

#include "core/file_util.h"

namespace trident {
namespace {

std::string Location(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null()) return file;
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// Printable, shortened text for messages: control and non-ASCII bytes as \xNN, at most 60
// characters, so a binary or huge file never floods the terminal.
std::string Printable(std::string_view text) {
  constexpr size_t kMaxChars = 60;
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= kMaxChars) return out + "...";
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing (null)";
    case YAML::NodeType::Scalar:
      return "'" + Printable(node.Scalar()) + "'";
    case YAML::NodeType::Undefined:
      return "nothing";
  }
  return "?";
}

// Splits "a.b[2].c" into steps "a", "b", 2, "c" and walks them as far as they exist.
YAML::Node Locate(const YAML::Node& root, const std::string& key_path) {
  YAML::Node current = root;
  size_t pos = 0;
  while (pos < key_path.size()) {
    YAML::Node next;
    if (key_path[pos] == '[') {
      size_t close = key_path.find(']', pos);
      if (close == std::string::npos || !current.IsSequence()) break;
      size_t index = std::stoul(key_path.substr(pos + 1, close - pos - 1));
      if (index >= current.size()) break;
      next = current[index];
      pos = close + 1;
    } else {
      if (key_path[pos] == '.') ++pos;
      size_t end = key_path.find_first_of(".[", pos);
      if (end == std::string::npos) end = key_path.size();
      if (!current.IsMap()) break;
      std::string key = key_path.substr(pos, end - pos);
      if (!current[key]) break;
      next = current[key];
      pos = end;
    }
    current.reset(next);
  }
  return current;
}

// Whether `line` is the document marker `marker` ("---" or "...").
bool IsMarker(std::string_view line, std::string_view marker) {
  return line.substr(0, 3) == marker &&
         (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
}

// The line:column where a second document of `text` starts, or a null mark. YAML puts a
// document marker in column 0 only: "---" starts a document (the first one too, when no content
// comes before it) and "..." ends one, after which any content is a new document.
YAML::Mark SecondDocumentMark(std::string_view text) {
  YAML::Mark mark;
  mark.line = 0;
  mark.column = 0;
  bool opened = false, ended = false;
  for (size_t at = 0; at < text.size(); ++mark.line) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    const size_t first = line.find_first_not_of(" \t\r");
    const bool content = first != std::string_view::npos && line[first] != '#';
    if ((IsMarker(line, "---") && opened) || (content && ended && !IsMarker(line, "..."))) {
      return mark;
    }
    ended = ended || (IsMarker(line, "...") && opened);
    opened = opened || content;
    at = end + 1;
  }
  return YAML::Mark::null_mark();
}

// The one document of `text`; a second one is an error, not silently ignored. (yaml-cpp's
// LoadAll can loop forever on malformed text, so the documents are told apart here.)
StatusOr<YAML::Node> LoadOneDocument(std::string_view text, const std::string& file) {
  YAML::Node root = YAML::Load(std::string(text));
  YAML::Mark second = SecondDocumentMark(text);
  if (second.is_null()) return root;
  return InvalidArgument(Location(file, second) +
                         ": a second YAML document; hint: a Trident file holds exactly one "
                         "document: remove everything after the first");
}

}  // namespace

StatusOr<YamlDoc> YamlDoc::Parse(std::string_view text, std::string file) {
  try {
    TRIDENT_ASSIGN_OR_RETURN(YAML::Node root, LoadOneDocument(text, file));
    if (!root.IsMap()) {
      return InvalidArgument(file + ": expected a YAML mapping at the top level, got " +
                             Describe(root) +
                             "; hint: a Trident file starts with 'format_version: 1'");
    }
    return YamlDoc(root, std::move(file));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(Location(file, e.mark) + ": YAML syntax error: " + Printable(e.msg));
  }
}

StatusOr<YamlDoc> YamlDoc::Load(const std::string& path) {
  TRIDENT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return Parse(text, path);
}

Status YamlDoc::ErrorAt(const FieldError& error) const {
  return ErrorAtNode(Locate(root_, error.key_path), error);
}

Status YamlDoc::ErrorAtNode(const YAML::Node& node, const FieldError& error) const {
  return InvalidArgument(Location(file_, node.Mark()) + ": " + FormatFieldError(error));
}

StatusOr<YamlMap> YamlMap::Open(const YamlDoc& doc, const YAML::Node& node, std::string path) {
  if (!node.IsMap()) {
    return doc.ErrorAtNode(
        node, {path, "expected a mapping (key: value lines), got " + Describe(node), ""});
  }
  std::set<std::string, std::less<>> seen;
  for (const auto& entry : node) {
    std::string key = entry.first.Scalar();
    if (!seen.insert(key).second) {
      return doc.ErrorAtNode(entry.first, {JoinKeyPath(path, key), "duplicate key",
                                           "keep one '" + key + ":' line in this mapping"});
    }
  }
  return YamlMap(doc, node, std::move(path));
}

bool YamlMap::Has(std::string_view key) const { return static_cast<bool>(node_[std::string(key)]); }

YAML::Node YamlMap::Lookup(std::string_view key) {
  read_keys_.emplace(key);
  return node_[std::string(key)];
}

std::string YamlMap::KeyPath(std::string_view key) const { return JoinKeyPath(path_, key); }

Status YamlMap::Error(std::string_view key, std::string message, std::string hint) const {
  YAML::Node value = node_[std::string(key)];
  FieldError error{KeyPath(key), std::move(message), std::move(hint)};
  return doc_->ErrorAtNode(value ? value : node_, error);
}

Status YamlMap::ScalarError(const YAML::Node& value, const std::string& key_path,
                            std::string_view expected) const {
  return doc_->ErrorAtNode(
      value, {key_path, "expected " + std::string(expected) + ", got " + Describe(value), ""});
}

Status YamlMap::EnumError(std::string_view key, const std::string& got,
                          const std::vector<std::string>& names) const {
  return Error(key, "unknown value '" + got + "'", "use one of: " + JoinNames(names));
}

StatusOr<YamlMap> YamlMap::GetMap(std::string_view key) {
  YAML::Node value = Lookup(key);
  if (!value) return Error(key, "missing required section", "add '" + std::string(key) + ":'");
  return Open(*doc_, value, KeyPath(key));
}

Status YamlMap::ForEachMap(std::string_view key, const std::function<Status(YamlMap&, int)>& fn) {
  YAML::Node value = Lookup(key);
  if (!value) return Error(key, "missing required list", "add '" + std::string(key) + ":'");
  if (!value.IsSequence()) {
    return doc_->ErrorAtNode(value, {KeyPath(key), "expected a list, got " + Describe(value), ""});
  }
  for (size_t i = 0; i < value.size(); ++i) {
    TRIDENT_ASSIGN_OR_RETURN(YamlMap item, Open(*doc_, value[i], IndexKeyPath(KeyPath(key), i)));
    TRIDENT_RETURN_IF_ERROR(fn(item, static_cast<int>(i)));
    TRIDENT_RETURN_IF_ERROR(item.Finish());
  }
  return Status::Ok();
}

Status YamlMap::Finish() const {
  for (const auto& entry : node_) {
    std::string key = entry.first.Scalar();
    if (read_keys_.count(key)) continue;
    std::vector<std::string> allowed(read_keys_.begin(), read_keys_.end());
    return doc_->ErrorAtNode(
        entry.first, {KeyPath(key), "unknown key", "allowed keys here: " + JoinNames(allowed)});
  }
  return Status::Ok();
}

std::string FormatDouble(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc()) return "nan";
  std::string text(buffer, end);
  const size_t exponent = text.find('e');
  if (exponent != std::string::npos && text.find('.') == std::string::npos) {
    text.insert(exponent, ".0");  // "3e-04" is a string to YAML 1.1 readers (PyYAML)
  }
  return text;
}

YamlWriter::YamlWriter() {
  out_.SetIndent(2);
  out_.SetMapFormat(YAML::Block);
  out_.SetSeqFormat(YAML::Block);
}

YamlWriter& YamlWriter::BeginMap(bool flow) {
  if (flow) out_ << YAML::Flow;
  out_ << YAML::BeginMap;
  return *this;
}
YamlWriter& YamlWriter::EndMap() {
  out_ << YAML::EndMap;
  return *this;
}
YamlWriter& YamlWriter::BeginList(bool flow) {
  if (flow) out_ << YAML::Flow;
  out_ << YAML::BeginSeq;
  return *this;
}
YamlWriter& YamlWriter::EndList() {
  out_ << YAML::EndSeq;
  return *this;
}
YamlWriter& YamlWriter::Key(std::string_view key) {
  out_ << YAML::Key << std::string(key) << YAML::Value;
  return *this;
}
YamlWriter& YamlWriter::Value(std::string_view value) {
  out_ << std::string(value);
  return *this;
}
YamlWriter& YamlWriter::Value(double value) {
  out_ << FormatDouble(value);
  return *this;
}
YamlWriter& YamlWriter::Value(int64_t value) {
  out_ << value;
  return *this;
}
YamlWriter& YamlWriter::Value(bool value) {
  out_ << YAML::TrueFalseBool << value;
  return *this;
}
YamlWriter& YamlWriter::Comment(std::string_view text) {
  out_ << YAML::Comment(std::string(text));
  return *this;
}

std::string YamlWriter::Text() const { return std::string(out_.c_str()) + "\n"; }

}  // namespace trident
