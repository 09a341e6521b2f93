// Evaluation of one fully specified plan: the exact schedule simulated with the plan's stage
// times and link costs, the gradient synchronization left exposed after it, the optimizer
// step, and the memory of every pipeline position. `trident simulate` and the search's
// re-ranking both use it, so a plan file and the planner's choice are predicted alike.
//
// Step time = makespan of the simulated schedule (PipeDream: its steady per-step time)
//           + the exposed part of the replicas' gradient all-reduce: it starts as the
//             position finishes its last backward and overlaps (in buckets) that backward,
//             so exposed_p = max(0, sync_p − B_p − (makespan − end_p))
//           + the tied-embedding gradient all-reduce between the first and last position
//           + the slowest position's optimizer step.
// PipeDream updates after every backward instead (runtime/train/pipedream.cc): a position with
// r replicas takes m / r updates a step, each after a blocking all-reduce of the replicas'
// gradients, so both the all-reduce (unhidden) and the optimizer step count m / r times.
// Replication that differs between positions (PipeDream-style) is simulated as one pipeline
// of m / dp micro-batches in which a position with r < dp replicas takes dp / r times as
// long per micro-batch.
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"
#include "planner/cost_model.h"
#include "planner/memory_model.h"
#include "planner/simulator.h"

namespace trident {

struct Evaluation {
  double step_ms = 0;
  double makespan_ms = 0;
  double busy_ms = 0;          // the busiest position's compute time
  double bubble_ms = 0;        // makespan − busy of the busiest position
  double exposed_sync_ms = 0;  // data-parallel and tied-embedding gradient sync not hidden
  double optimizer_ms = 0;
  double bubble_fraction = 0;
  std::vector<double> stage_ms;         // forward + backward of one micro-batch per stage
  std::vector<MemoryBreakdown> memory;  // per pipeline position
  int64_t peak_memory_bytes = 0;
  int64_t memory_limit_bytes = 0;
  int bottleneck_stage = 0;
  SimulationResult simulation;
  bool Fits() const { return peak_memory_bytes <= memory_limit_bytes; }
};

struct EvaluateOptions {
  int64_t memory_limit_bytes = 0;  // 0: the device's memory
  int pipedream_steps = 4;         // steps replayed to reach PipeDream's steady state
};

// REQUIRES: plan.Validate() is ok. Fails when the cost model lacks a layer's costs at the
// plan's (micro_batch_size, tp), or the plan's placement exceeds the cluster.
StatusOr<Evaluation> EvaluatePlan(const CostModel& costs, const Plan& plan,
                                  const EvaluateOptions& options);

// Copies the evaluation's predictions (per stage and overall) into `plan`.
void RecordPredictions(const Evaluation& evaluation, Plan* plan);

}  // namespace trident
