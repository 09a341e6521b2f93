// The runs of a published_runs file (core/published_runs.h) as Trident plans: each run's
// Megatron-LM arguments imported with ImportMegatron (launcher/megatron_import.h), the file's
// cluster name and vocabulary given to every import.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/plan.h"
#include "core/published_runs.h"

namespace trident {

struct PublishedPlans {
  PublishedRuns file;
  std::vector<Plan> plans;  // plans[i] is file.runs[i]
};

// InvalidArgument at file:line for the file's own errors and, at the run's `megatron` key
// naming the run, for arguments that do not import.
StatusOr<PublishedPlans> ParsePublishedPlans(std::string_view text, const std::string& file);
StatusOr<PublishedPlans> LoadPublishedPlans(const std::string& path);

}  // namespace trident
