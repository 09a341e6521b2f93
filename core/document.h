// The common shape of every Trident file: a YAML mapping that starts with
//   format_version: 1
//   kind: model | cluster | profile | plan | published_runs
// followed by the kind's own keys. ParseDocument reads one strictly (syntax, types, unknown
// keys), then runs the type's semantic Check() and reports its error at file:line:column.
#pragma once

#include <string>
#include <string_view>

#include "core/file_util.h"
#include "core/status.h"
#include "core/yaml_io.h"

namespace trident {

// Reads and checks format_version and kind at the top of a document.
Status ReadDocumentHeader(YamlMap& map, std::string_view kind, int format_version);
void WriteDocumentHeader(YamlWriter& out, std::string_view kind, int format_version);

// T provides: static constexpr int kFormatVersion; FieldCheck Check() const.
// `read` fills T from the top-level map.
template <typename T, typename ReadFn>
StatusOr<T> ParseDocument(std::string_view text, const std::string& file, std::string_view kind,
                          ReadFn read) {
  TRIDENT_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, file));
  TRIDENT_ASSIGN_OR_RETURN(YamlMap map, YamlMap::Open(doc, doc.root(), ""));
  TRIDENT_RETURN_IF_ERROR(ReadDocumentHeader(map, kind, T::kFormatVersion));
  T value;
  TRIDENT_RETURN_IF_ERROR(read(map, &value));
  TRIDENT_RETURN_IF_ERROR(map.Finish());
  if (FieldCheck error = value.Check()) return doc.ErrorAt(*error);
  return value;
}

template <typename T, typename ReadFn>
StatusOr<T> LoadDocument(const std::string& path, std::string_view kind, ReadFn read) {
  TRIDENT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseDocument<T>(text, path, kind, read);
}

// The `kind:` of a Trident file, for commands that accept any of them.
StatusOr<std::string> PeekDocumentKind(std::string_view text, const std::string& file);

}  // namespace trident
