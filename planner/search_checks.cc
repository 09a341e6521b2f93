#include "planner/search_checks.h"

#include <string>

namespace trident::search_internal {

// --cuts: the first layer of each stage, starting at 0, strictly increasing, in range.
Status CheckCuts(const std::vector<int>& cuts, int num_layers) {
  for (size_t i = 0; i < cuts.size(); ++i) {
    bool ok = i == 0 ? cuts[i] == 0 : cuts[i] > cuts[i - 1] && cuts[i] < num_layers;
    if (!ok) {
      return InvalidArgument("--cuts: cut " + std::to_string(i) + " is " + std::to_string(cuts[i]) +
                             "; cuts are the first layer of each stage: 0, then strictly "
                             "increasing, below the model's " +
                             std::to_string(num_layers) + " layers");
    }
  }
  return Status::Ok();
}

// --replicas: a count of at least 1 per stage, as many as --fix pp and the stages of --cuts,
// summing to devices / (tp · cp) for some tp · cp.
Status CheckReplicas(const SearchConstraints& c, int devices) {
  const std::vector<int>& replicas = c.replicas;
  if (replicas.empty()) return Status::Ok();
  const int stages = static_cast<int>(replicas.size());
  int64_t sum = 0;
  for (int s = 0; s < stages; ++s) {
    if (replicas[s] < 1) {
      return InvalidArgument("--replicas: stage " + std::to_string(s) + " has " +
                             std::to_string(replicas[s]) +
                             " replicas; every stage needs at least 1");
    }
    sum += replicas[s];
  }
  const std::string given = "--replicas gives " + std::to_string(stages) + " stages";
  if (c.pp && *c.pp != stages) {
    return InvalidArgument(given + " but --fix pp=" + std::to_string(*c.pp) +
                           "; give one count per pipeline stage or drop --fix pp");
  }
  if (!c.cuts.empty() && c.cuts.size() % replicas.size() != 0) {
    return InvalidArgument(given + " but --cuts " + std::to_string(c.cuts.size()) +
                           "; give one cut and one replica count per stage");
  }
  if (sum > devices || devices % sum != 0) {
    return InvalidArgument(
        "--replicas sums to " + std::to_string(sum) + " replicas, " +
        (sum > devices ? "more than the " : "which does not divide the ") +
        std::to_string(devices) +
        " devices: each replica is one tp · cp group, so the counts must sum to devices / "
        "(tp · cp); change the counts or --devices");
  }
  return Status::Ok();
}

}  // namespace trident::search_internal
