// Validation of any Trident file, whatever its kind (`trident validate`).
#pragma once

#include <string>

#include "core/status.h"

namespace trident {

struct FileSummary {
  std::string kind;     // model, cluster, profile or plan
  std::string summary;  // the value's one-line ToString()
};

// Reads `path`, dispatches on its `kind:` and runs that kind's strict loader and checks.
StatusOr<FileSummary> ValidateFile(const std::string& path);

}  // namespace trident
