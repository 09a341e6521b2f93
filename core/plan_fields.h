// Every field a plan file holds (as PlanToYaml writes it) and what Trident's runtime does with
// it: the one list that the runtime's plan check (runtime/train/plan_contract.h) and the
// exporters to other frameworks walk, so a new field is classified before either accepts it.
//
// Roles:
// - executed: the runtime carries out every value Plan::Check accepts;
// - restricted: carried out for some values; the runtime's check refuses the others, before
//   any rank starts, naming the field, why and the fix;
// - informational: read by no rank (predictions, provenance, the cluster's name); the run
//   report sets the predictions beside what it measured.
#pragma once

#include <string_view>
#include <vector>

namespace trident {

enum class FieldRole { kExecuted, kRestricted, kInformational };

struct PlanFieldUse {
  std::string_view path;  // as PlanToYaml nests it: "model.hidden", "stages[].replicas"
  FieldRole role;
  std::string_view use;  // what the runtime does with it, or whom it informs
};

// Every field PlanToYaml can write, in the file's order.
const std::vector<PlanFieldUse>& PlanFieldUses();

}  // namespace trident
