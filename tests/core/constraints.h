// The constraints core/README.md documents for each file kind, written out again from the
// README with literal limits and no loader code, so a loader that accepts a value breaking
// one of them is caught. Each function returns "" when `value` keeps every constraint, else
// the first one it breaks.
#pragma once

#include <string>

#include "core/cluster.h"
#include "core/model_spec.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/published_runs.h"

namespace trident::testing {

std::string BrokenConstraint(const ModelSpec& model);
std::string BrokenConstraint(const ClusterSpec& cluster);
std::string BrokenConstraint(const Profile& profile);
std::string BrokenConstraint(const Plan& plan);
std::string BrokenConstraint(const PublishedRuns& runs);

}  // namespace trident::testing
