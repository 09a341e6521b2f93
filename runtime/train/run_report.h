// What a training run reports: one JSON line per step and rank (metrics.jsonl), a readable
// line per step on stdout, and a Chrome trace of every action on every rank for chosen steps.
//
// Metrics line (all times in ms, on the rank's own clock):
//   {"step": 3, "rank": 1, "dp": 0, "pp": 1, "cp": 0, "tp": 0, "loss": 5.41, "lr": 0.001,
//    "grad_norm": 1.2, "tokens_per_s": 41000, "step_time_ms": 12.3, "schedule_ms": 10.1,
//    "compute_ms": 8.0, "pipeline_wait_ms": 1.9, "idle_ms": 2.1, "bubble_fraction": 0.21,
//    "sync_ms": 1.5, "optimizer_ms": 0.4, "peak_memory_bytes": 3355443}
// schedule_ms is the rank's walk through its action list; compute_ms the layer work in it;
// idle_ms = schedule_ms − compute_ms is the measured bubble (waiting for inputs, including
// transfer time, as the planner's simulator counts idle), of which pipeline_wait_ms was spent
// blocked in a receive or send; sync_ms covers the gradient all-reduces (the part not hidden
// behind backward), the tied-embedding sum and the loss reduction (PipeDream: the replicas'
// sum after each backward, and idle_ms leaves out its updates); peak_memory_bytes is the
// tracking allocator's peak during the step.
//
// The trace has the shape of the planner's simulated trace (planner/simulator.h): complete
// events ("ph": "X") with "ts"/"dur" in µs, "pid" 0, "tid" = rank, "name" like "1F3", "args"
// {stage, micro_batch, step}, plus a thread name per rank; each traced step starts where the
// previous traced one ended on rank 0's clock.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/mesh.h"
#include "core/plan.h"
#include "core/rank_map.h"
#include "core/schedule.h"
#include "core/status.h"

namespace trident {

struct RankStepStats {
  double step_ms = 0;
  double schedule_ms = 0;
  double compute_ms = 0;
  double pipeline_wait_ms = 0;
  double sync_ms = 0;
  double optimizer_ms = 0;
  int64_t peak_memory_bytes = 0;

  double IdleMs() const;
  double BubbleFraction() const;  // IdleMs / schedule_ms (0 for an empty schedule)
};

// Exactly representable encoding for an all-gather: kStatsFloats floats.
inline constexpr int kStatsFloats = 9;
std::vector<float> EncodeStats(const RankStepStats& stats);
RankStepStats DecodeStats(const float* floats);

struct StepSummary {
  int64_t step = 0;   // 1 for the first optimizer step
  int64_t steps = 0;  // of the run
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  int64_t tokens = 0;  // per step: global batch × sequence length
};

std::string MetricsLine(const StepSummary& step, int rank, const MeshCoords& coords,
                        const RankStepStats& stats);
// "step 3/10 | loss 5.4123 | lr 1.00e-03 | grad norm 1.203 | 12.3 ms | 41,000 tok/s |
//  bubble 21% | peak 3.2 MiB" over all ranks: the slowest step time, the mean bubble and the
// largest peak.
std::string StepLine(const StepSummary& step, const std::vector<RankStepStats>& ranks);

// What a run measured against what its plan predicted: medians over `steps` (per step, every
// rank's figures), leaving out the first step (warm-up) when there are more. Step time is the
// slowest rank's; busiest compute the largest sum of action times of a rank; their ratio is
// the runtime's own overhead plus the schedule's bubble. Per pipeline position: the largest
// compute of its ranks against the plan's Σ over its stages of predicted_time_ms × ceil(M / r)
// (the busiest replica's micro-batches, core/replica_lanes.h), and its largest peak memory
// against the plan's predicted_memory_bytes.
struct RunFigures {
  int64_t first_step = 0;
  int64_t last_step = 0;
  double step_ms = 0;
  double busiest_compute_ms = 0;
  double tokens_per_s = 0;
  double bubble_fraction = 0;  // the mean over ranks
  int64_t peak_memory_bytes = 0;
  struct Position {
    int position = 0;
    std::vector<int> stages;
    double compute_ms = 0;
    double predicted_compute_ms = 0;
    int64_t peak_memory_bytes = 0;
    int64_t predicted_memory_bytes = 0;
  };
  std::vector<Position> positions;
  PlanPrediction predicted;
};

// REQUIRES: every entry of `ranks` has plan.devices figures, in rank order.
RunFigures MeasureRun(const Plan& plan, const std::vector<StepSummary>& steps,
                      const std::vector<std::vector<RankStepStats>>& ranks);

// The end-of-run summary on stdout, e.g.
//   run summary (medians over steps 2-30):
//     step time             14.06 ms
//     predicted (plan)      11.87 ms  (+18.4%)
//     ...
//   per pipeline position     compute/step   predicted   error   peak memory   predicted   error
//   0 (stages 0)                   6.61 ms     5.62 ms  +17.6%      2.19 MiB    1.97 MiB  +11.2%
// Predictions of 0 (a hand-written plan) are left out.
std::string RunSummary(const RunFigures& figures);
// The same figures as one JSON object (summary.json): {"steps": [2, 30], "step_time_ms":
// {"measured": 14.06, "predicted": 11.87}, ..., "positions": [{"position": 0, "stages": [0],
// "compute_ms": {...}, "peak_memory_bytes": {...}}]}.
std::string RunSummaryJson(const RunFigures& figures);

struct TraceEvent {
  int rank = 0;
  int64_t step = 0;
  Action action;
  double start_ms = 0;  // since the trace's start
  double end_ms = 0;
};

std::string TraceToChromeJson(const std::vector<TraceEvent>& events, const RankMap& ranks);

}  // namespace trident
