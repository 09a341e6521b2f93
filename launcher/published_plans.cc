#include "launcher/published_plans.h"

#include "core/file_util.h"
#include "launcher/megatron_import.h"

namespace trident {

StatusOr<PublishedPlans> ParsePublishedPlans(std::string_view text, const std::string& file) {
  std::vector<Plan> plans;
  auto import = [&plans](const PublishedRuns& runs, const PublishedRun& run) -> Status {
    MegatronImportOptions options;
    options.name = run.name;
    options.cluster = runs.cluster;
    options.vocab_size = runs.vocab_size;
    StatusOr<MegatronImport> in = ImportMegatron(run.megatron, "run '" + run.name + "'", options);
    if (!in.ok()) return in.status();
    plans.push_back(std::move(in->plan));
    return Status::Ok();
  };
  TRIDENT_ASSIGN_OR_RETURN(PublishedRuns runs, ParsePublishedRuns(text, file, import));
  return PublishedPlans{std::move(runs), std::move(plans)};
}

StatusOr<PublishedPlans> LoadPublishedPlans(const std::string& path) {
  TRIDENT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParsePublishedPlans(text, path);
}

}  // namespace trident
