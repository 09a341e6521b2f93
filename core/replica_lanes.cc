#include "core/replica_lanes.h"

#include <string>

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

}  // namespace

StatusOr<std::vector<Lane>> ReplicaLanes(ScheduleKind kind, int pp, int virtual_stages,
                                         int num_micro_batches, const std::vector<int>& replicas,
                                         int steps) {
  TRIDENT_RETURN_IF_ERROR(CheckShape(pp, num_micro_batches, replicas, steps));
  std::vector<Lane> lanes;
  for (int p = 0; p < pp; ++p) {
    const int r = replicas[p];
    for (int d = 0; d < r; ++d) {
      const int local = LaneMicroBatches(num_micro_batches, r, d);
      StatusOr<Schedule> one = GenerateSchedule(kind, pp, virtual_stages, local);
      StatusOr<Schedule> schedule = one.ok() ? UnrollSteps(*one, steps) : one;
      if (!schedule.ok()) {
        return InvalidArgument("pipeline position " + Str(p) + " (" + Str(local) +
                               " micro-batches on replica " + Str(d) +
                               "): " + schedule.status().message());
      }
      Lane lane{p, d, local, schedule->positions[p]};
      MapToGlobal(num_micro_batches, r, d, local, &lane.actions);
      lanes.push_back(std::move(lane));
    }
  }
  return lanes;
}

}  // namespace trident
