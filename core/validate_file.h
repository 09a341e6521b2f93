// Validation of any Trident file, whatever its kind (`trident validate`).
#pragma once

#include <string>

#include "core/status.h"

namespace trident {

struct FileSummary {
  std::string kind;     // model, cluster, profile, plan or published_runs
  std::string summary;  // the value's one-line ToString()
};

// Reads `path`, dispatches on its `kind:` and runs that kind's strict loader and checks (a
// published_runs file's own rules: whether its runs import is launcher/published_plans.h's).
StatusOr<FileSummary> ValidateFile(const std::string& path);

}  // namespace trident
