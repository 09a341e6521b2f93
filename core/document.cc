#include "core/document.h"

namespace trident {

Status ReadDocumentHeader(YamlMap& map, std::string_view kind, int format_version) {
  int version = 0;
  TRIDENT_RETURN_IF_ERROR(map.Get("format_version", &version));
  if (version != format_version) {
    return map.Error("format_version",
                     "unsupported version " + std::to_string(version) + " (this build reads " +
                         std::to_string(format_version) + ")",
                     "write the file with this Trident version or upgrade Trident");
  }
  std::string got;
  TRIDENT_RETURN_IF_ERROR(map.Get("kind", &got));
  if (got != kind) {
    return map.Error("kind", "expected a " + std::string(kind) + " file, got kind '" + got + "'",
                     "pass a " + std::string(kind) + " file here");
  }
  return Status::Ok();
}

void WriteDocumentHeader(YamlWriter& out, std::string_view kind, int format_version) {
  out.Field("format_version", format_version).Field("kind", std::string(kind));
}

StatusOr<std::string> PeekDocumentKind(std::string_view text, const std::string& file) {
  TRIDENT_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, file));
  TRIDENT_ASSIGN_OR_RETURN(YamlMap map, YamlMap::Open(doc, doc.root(), ""));
  std::string kind;
  TRIDENT_RETURN_IF_ERROR(map.Get("kind", &kind));
  return kind;
}

}  // namespace trident
