#include "planner/search_estimate.h"

#include <algorithm>
#include <vector>

#include "core/replica_lanes.h"
#include "planner/sharding_comm.h"

namespace trident::search_internal {
namespace {

// The pipeline's part of the estimate: the busiest lane's compute and the fill and drain.
double PipelineMs(const Config& c, const DpCosts& dp_costs, const StageCosts& costs,
                  const std::vector<PlanStage>& stages) {
  std::vector<double> position_ms(c.pp, 0);
  std::vector<int> lane(c.pp, 0);
  double sum_ms = 0, boundary_ms = 0, f_b_minus_w = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    const PlanStage& st = stages[s];
    int last = st.first_layer + st.num_layers - 1;
    RangeTimes t = costs.Times(st.first_layer, last);
    position_ms[s % c.pp] += t.Total();
    lane[s % c.pp] = LaneMicroBatches(c.micro_batches, st.replicas, 0);
    sum_ms += t.Total();
    f_b_minus_w = std::max(f_b_minus_w, t.fwd_ms + t.bwd_input_ms - t.bwd_weight_ms);
    int next_unit = static_cast<int>((s + 1) % c.pp) * c.dp;
    if (s + 1 < stages.size()) boundary_ms += 2 * dp_costs.BoundaryMs(last, next_unit);
  }
  int busiest = 0;
  for (int p = 1; p < c.pp; ++p) {
    if (lane[p] * position_ms[p] > lane[busiest] * position_ms[busiest]) busiest = p;
  }
  const double slowest = position_ms[busiest];
  const double pace = lane[busiest] * slowest;
  switch (c.schedule) {
    case ScheduleKind::kNaive:
      return sum_ms + boundary_ms;
    case ScheduleKind::kPipeDream:
      return pace;
    case ScheduleKind::kInterleaved1F1B:
      return pace + (c.pp - 1) * slowest / c.v + boundary_ms;
    case ScheduleKind::kZbH1:
      return pace + (c.pp - 1) * f_b_minus_w + boundary_ms;
    case ScheduleKind::kGpipe:
    case ScheduleKind::k1F1B:
      return pace - slowest + sum_ms / c.v + boundary_ms;
  }
  return kInf;
}

// The data-parallel part of the estimate (planner/sharding_comm.h). REQUIRES: uniform
// replication.
double DataParallelEstimateMs(const Config& c, const DpCosts& dp_costs, const StageCosts& costs,
                              const std::vector<PlanStage>& stages) {
  std::vector<PositionComm> positions(c.pp);
  for (int p = 0; p < c.pp; ++p) {
    PositionComm& position = positions[p];
    for (size_t s = p; s < stages.size(); s += c.pp) {
      const int last = stages[s].first_layer + stages[s].num_layers - 1;
      const PositionFootprint chunk = costs.Footprint(stages[s].first_layer, last);
      position.footprint.param_bytes += chunk.param_bytes;
      position.footprint.grad_bytes += chunk.grad_bytes;
      position.footprint.layer_param_bytes =
          std::max(position.footprint.layer_param_bytes, chunk.layer_param_bytes);
      position.compute_ms += costs.Times(stages[s].first_layer, last).Total();
    }
    position.links = dp_costs.Links(c.dp, p * c.dp);
  }
  return DataParallelMs(dp_costs.model(), c.sharding, c.schedule == ScheduleKind::kPipeDream,
                        LaneMicroBatches(c.micro_batches, c.dp, 0), positions);
}

}  // namespace

double EstimateMs(const Config& c, const DpCosts& dp_costs, const StageCosts& costs,
                  const std::vector<PlanStage>& stages) {
  const double data_parallel =
      UniformReplication(stages) ? DataParallelEstimateMs(c, dp_costs, costs, stages) : 0;
  return PipelineMs(c, dp_costs, costs, stages) + data_parallel;
}

}  // namespace trident::search_internal
