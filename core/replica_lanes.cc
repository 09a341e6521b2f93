#include "core/replica_lanes.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace trident {
namespace {

std::string Str(int value) { return std::to_string(value); }

Status CheckShape(int pp, int num_micro_batches, const std::vector<int>& replicas, int steps) {
  if (static_cast<int>(replicas.size()) != pp) {
    return InvalidArgument("lanes: " + Str(static_cast<int>(replicas.size())) +
                           " replica counts for " + Str(pp) + " pipeline positions");
  }
  if (steps < 1) return InvalidArgument("lanes: steps must be >= 1, got " + Str(steps));
  for (int p = 0; p < pp; ++p) {
    if (replicas[p] < 1 || replicas[p] > num_micro_batches) {
      return InvalidArgument("pipeline position " + Str(p) + " has " + Str(replicas[p]) +
                             " replicas; each needs at least one of the step's " +
                             Str(num_micro_batches) + " micro-batches, so use 1 to " +
                             Str(num_micro_batches));
    }
  }
  return Status::Ok();
}

// Local micro-batch ids (k·m_d + i) to global ones (k·M + i·r + d).
void MapToGlobal(int num_micro_batches, int replicas, int replica, int local_count,
                 std::vector<Action>* actions) {
  for (Action& a : *actions) {
    int step = a.micro_batch / local_count;
    a.micro_batch = step * num_micro_batches + (a.micro_batch % local_count) * replicas + replica;
  }
}

std::vector<int> WarmUps(int pp, int num_micro_batches, const std::vector<int>& replicas) {
  std::vector<int> warm_ups(pp);
  WarmUpRule rule;
  for (int p = 0; p < pp; ++p) warm_ups[p] = rule.Next(pp, p, num_micro_batches, replicas[p]);
  return warm_ups;
}

// The position whose list runs lanes of position p: the one with p's warm-up.
int ListPosition(ScheduleKind kind, int pp, int p, const std::vector<int>& warm_ups) {
  const bool one_f_one_b = kind == ScheduleKind::k1F1B || kind == ScheduleKind::kZbH1;
  return one_f_one_b ? pp - 1 - warm_ups[p] : p;
}

}  // namespace

// bound_ is D of the positions before: a lane's key gap between B h and F h, at least r·w and,
// while its busiest lane still alternates, below r·(w + 1).
int WarmUpRule::Next(int pp, int position, int num_micro_batches, int replicas) {
  const int64_t r = replicas;
  const int64_t last = LaneMicroBatches(num_micro_batches, replicas, 0) - 1;
  const int64_t w = std::min({int64_t{pp - position - 1}, last, (bound_ + r - 1) / r - 1});
  if (w < last) bound_ = std::min(bound_, r * (w + 1));
  return static_cast<int>(w);
}

StatusOr<std::vector<Lane>> ReplicaLanes(ScheduleKind kind, int pp, int virtual_stages,
                                         int num_micro_batches, const std::vector<int>& replicas,
                                         int steps) {
  return ReplicaLanesBetween(kind, pp, virtual_stages, num_micro_batches, replicas, steps, 0,
                             pp - 1);
}

StatusOr<std::vector<Lane>> ReplicaLanesBetween(ScheduleKind kind, int pp, int virtual_stages,
                                                int num_micro_batches,
                                                const std::vector<int>& replicas, int steps,
                                                int first, int last) {
  TRIDENT_RETURN_IF_ERROR(CheckShape(pp, num_micro_batches, replicas, steps));
  std::vector<Lane> lanes;
  const std::vector<int> warm_ups = WarmUps(pp, num_micro_batches, replicas);
  // A lane count takes at most two values a position: one list for each count and list position.
  std::map<std::pair<int, int>, StatusOr<std::vector<Action>>> lists;
  for (int p = first; p <= last; ++p) {
    const int r = replicas[p];
    const int list = ListPosition(kind, pp, p, warm_ups);
    for (int d = 0; d < r; ++d) {
      const int local = LaneMicroBatches(num_micro_batches, r, d);
      auto it = lists.find({local, list});
      if (it == lists.end()) {
        it = lists
                 .emplace(std::pair(local, list),
                          GeneratePositionSteps(kind, list, pp, virtual_stages, local, steps))
                 .first;
      }
      const StatusOr<std::vector<Action>>& listed = it->second;
      if (!listed.ok()) {
        return InvalidArgument("pipeline position " + Str(p) + " (" + Str(local) +
                               " micro-batches on replica " + Str(d) +
                               "): " + listed.status().message());
      }
      Lane lane{p, d, local, *listed};
      for (Action& a : lane.actions) a.stage += p - list;
      MapToGlobal(num_micro_batches, r, d, local, &lane.actions);
      lanes.push_back(std::move(lane));
    }
  }
  return lanes;
}

}  // namespace trident
