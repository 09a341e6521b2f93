// Plans for the launcher tests: a tiny model on any (tp, replicas per position) mesh and node
// shape, checked by Plan::Validate.
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"

namespace trident::testing {

// tp and the replication of each pipeline position (at most 5 positions); devices and mesh
// follow from them. REQUIRES: tp divides 4 and devices_per_node.
Plan LaunchPlan(int tp, std::vector<int> replicas, int devices_per_node);

// Writes `plan` as YAML under the test's temporary folder; returns the path.
std::string WritePlanFile(const Plan& plan, const std::string& name);

}  // namespace trident::testing
