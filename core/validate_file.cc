#include "core/validate_file.h"

#include "core/cluster.h"
#include "core/document.h"
#include "core/model_spec.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/published_runs.h"

namespace trident {
namespace {

template <typename T>
StatusOr<FileSummary> Summarize(const StatusOr<T>& value, const std::string& kind) {
  if (!value.ok()) return value.status();
  return FileSummary{kind, value->ToString()};
}

}  // namespace

StatusOr<FileSummary> ValidateFile(const std::string& path) {
  TRIDENT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  TRIDENT_ASSIGN_OR_RETURN(std::string kind, PeekDocumentKind(text, path));
  if (kind == "model") return Summarize(ParseModelSpec(text, path), kind);
  if (kind == "cluster") return Summarize(ParseClusterSpec(text, path), kind);
  if (kind == "profile") return Summarize(ParseProfile(text, path), kind);
  if (kind == "plan") return Summarize(ParsePlan(text, path), kind);
  if (kind == "published_runs") return Summarize(ParsePublishedRuns(text, path), kind);
  TRIDENT_ASSIGN_OR_RETURN(YamlDoc doc, YamlDoc::Parse(text, path));
  return doc.ErrorAt({"kind", "unknown kind '" + kind + "'",
                      "use one of: model, cluster, profile, plan, published_runs"});
}

}  // namespace trident
