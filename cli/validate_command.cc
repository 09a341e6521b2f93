// trident validate FILE... [--json]: strict check of any Trident file.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/format.h"
#include "core/validate_file.h"
#include "launcher/published_plans.h"

namespace trident {
namespace {

struct ValidateOptions {
  std::vector<std::string> files;
  bool json = false;
};

// The file's own rules, and for a published_runs file whether each run's arguments import.
StatusOr<FileSummary> Validate(const std::string& file) {
  TRIDENT_ASSIGN_OR_RETURN(FileSummary summary, ValidateFile(file));
  if (summary.kind == "published_runs") TRIDENT_RETURN_IF_ERROR(LoadPublishedPlans(file).status());
  return summary;
}

int RunValidate(const ValidateOptions& options) {
  nlohmann::json report = nlohmann::json::array();
  int failures = 0;
  for (const std::string& file : options.files) {
    StatusOr<FileSummary> summary = Validate(file);
    if (summary.ok()) {
      report.push_back(
          {{"file", file}, {"ok", true}, {"kind", summary->kind}, {"summary", summary->summary}});
      if (!options.json)
        std::cout << file << ": ok: " << summary->kind << " " << summary->summary << "\n";
    } else {
      ++failures;
      report.push_back({{"file", file}, {"ok", false}, {"error", summary.status().message()}});
      if (!options.json) std::cerr << "error: " << summary.status().message() << "\n";
    }
  }
  if (options.json) std::cout << JsonText(report);
  return failures == 0 ? 0 : 1;
}

}  // namespace

void AddValidateCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Check Trident files (model, cluster, profile, plan, published_runs) strictly and summarize "
      "them");
  cmd->add_option("files", options->files, "Files to check")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--json", options->json, "Print a JSON array with one result per file");
  cmd->footer("Exit status: 0 when every file is valid, 1 when any is not, 2 on usage errors.");
  cmd->callback([options, exit_code] { *exit_code = RunValidate(*options); });
}

}  // namespace trident
