// Evaluation of one fully specified plan: the exact schedule simulated with the plan's stage
// times and link costs, the gradient synchronization left exposed after it, the optimizer
// step, and the memory of every pipeline position. `trident simulate` and the search's
// re-ranking both use it, so a plan file and the planner's choice are predicted alike.
//
// Replication. Position p has r_p replicas. Micro-batch j of the step's M = num_micro_batches
// runs on replica j mod r_p (round robin, core/replica_lanes.h), so replica d is a lane of
// ⌈(M − d) / r_p⌉ micro-batches, each at its stage's own per-micro-batch time (never scaled).
// The simulator replays every lane (planner/simulator.h). Boundary s → s+1 is a point-to-point
// transfer on the link joining the last rank of s's position to the first rank of s+1's
// (positions hold contiguous ranks, core/rank_map.h). Position p's gradient all-reduce, sync_p,
// runs over its r_p replicas times cp (RankMap::GradGroup: every cp rank saw part of each
// sequence) on the link of the group of ranks it spans. Memory: each rank of
// p keeps its lane's live activations, memory_model.h's formulas with m = the busiest lane's
// count ⌈M / r_p⌉, and the state its sharding level divides over the n_p = shard replicas · cp
// ranks of its shard group (Plan::ShardReplicas; memory_model.h has the formulas).
//
// Step time, flushing schedules (every kind but PipeDream):
//   step = makespan + max_p exposed_p + tied + max_p optimizer_p
//   makespan    of the simulated lanes
//   exposed_p   the part of sync_p the other positions' work cannot hide: the runtime starts
//               a stage's all-reduce when its gradients are complete (runtime/train/grad_sync.h),
//               after p's last backward, so exposed_p = max(0, sync_p − (makespan − max over
//               p's lanes of end_ms)). An earlier chunk's all-reduce under interleaving, which
//               the runtime starts before the position's last backward, is not credited.
//   tied        the tied-embedding gradient all-reduce between the first and last position
//   optimizer_p position p's optimizer step
// Sharded data parallelism (core/plan.h DpSharding; planner/sharding_comm.h computes every
// collective, over the n_p ranks of p's shard group at the level that group spans): sync_p is
// the collective that starts after p's last backward, exposed as above, and
//   step = makespan + max_p exposed_p + tied + max_p optimizer_p + max_p gather_p
//          + max_p scatter_p + max_p layers_p
//   none       sync_p = all-reduce of G over the grad group; no other term
//   optimizer  sync_p = reduce-scatter of G; gather_p = all-gather of P after the optimizer
//              step, which nothing hides (each rank steps its shard)
//   gradients  a reduce-scatter of G after every micro-batch's backward: the lane's last is
//              sync_p, each of its m − 1 others overlaps the next micro-batch's compute c_p
//              (p's forward and backward of one micro-batch), scatter_p = (m − 1) ·
//              max(0, RS(G) − c_p); gather_p as optimizer
//   full       per micro-batch an all-gather of P before forward, another before backward and a
//              reduce-scatter of G after it, prefetched a layer ahead so they overlap that
//              micro-batch's compute: layers_p = m · max(0, 2·AG(P) + RS(G) − c_p) + AG(P_l),
//              the first layer's gather that nothing hides; no gather after the step
// (P, G: p's parameter and gradient bytes; P_l: its largest layer's parameters; m: p's busiest
// lane's micro-batches.) Hybrid sharding (dp_shard < dp) adds to sync_p an all-reduce of the
// G / n_p shard over the dp / dp_shard groups holding it, at the grad group's level. A pipeline
// of many micro-batches pays full sharding's gathers once per micro-batch.
// PipeDream updates after every backward instead (runtime/train/pipedream.cc): position p takes
// u_p = ⌈M / r_p⌉ updates a step (its busiest lane's count, M / r_p when r_p divides M), each
// after a blocking all-reduce of its replicas' gradients, so
//   step = max(steady, busy) + max_p u_p · sync_p + max_p u_p · optimizer_p
// with steady = makespan(k steps) − makespan(k − 1 steps) of the lanes run back to back and
// busy = the busiest lane's compute per step. A steady state cannot beat the busiest lane,
// which runs its actions one at a time; the max keeps a short replay to that rule.
//
// Lower bounds a search may prune with (tests/planner/lane_bound_test.cc checks them on random
// times and replicas for gpipe, 1f1b, zb_h1 and one PipeDream step): for every lane of stage s
// (v = 1) with m micro-batches, F, B, W and send the stages' and boundaries' times,
//   backward not split (each lane's list ends with a B):
//     makespan ≥ Σ_{q<s} (F_q + B_q + 2·send_q) + m · (F_s + B_s + W_s)
//   split (ZB-H1):
//     makespan ≥ Σ_{q<s} (F_q + send_q) + m · (F_s + B_s + W_s)
// The lane's first forward waits for its micro-batch to cross stages 0..s−1, the lane then
// runs its m micro-batches one action at a time, and (not split) the gradient of its last B
// must still cross stages s−1..0.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "planner/cost_model.h"
#include "planner/memory_model.h"
#include "planner/simulator.h"
#include "planner/stage_costs.h"

namespace trident {

struct Evaluation {
  double step_ms = 0;
  double makespan_ms = 0;      // PipeDream: max(steady, busy) per step
  double busy_ms = 0;          // the busiest lane's compute time per step
  double bubble_ms = 0;        // makespan − busy
  double exposed_sync_ms = 0;  // data-parallel and tied-embedding gradient sync not hidden
  double sync_ms = 0;          // the longest position's gradient sync, hidden or not
  double optimizer_ms = 0;
  double param_gather_ms = 0;  // optimizer, gradients: the parameters' all-gather after the step
  double grad_scatter_ms = 0;  // gradients: the per-micro-batch reduce-scatters not hidden
  double layer_comm_ms = 0;    // full: the per-micro-batch gathers and scatters not hidden
  double bubble_fraction = 0;
  std::vector<double> stage_ms;         // forward + backward of one micro-batch per stage
  std::vector<MemoryBreakdown> memory;  // per pipeline position
  int64_t peak_memory_bytes = 0;
  int64_t memory_limit_bytes = 0;
  int bottleneck_stage = 0;  // the stage whose busiest lane computes longest per step
  SimulationResult simulation;
  bool Fits() const { return peak_memory_bytes <= memory_limit_bytes; }
};

// How an activation (and its gradient) crosses a stage boundary, as the software that runs the
// plan moves it; B is the boundary tensor one tp rank holds (OutputBytes: the whole activation,
// or its 1/t sequence shard under sequence parallelism), t the tp degree, X(b) the p2p time of
// b bytes on the link the two positions' ranks span (α + b / (e · bw)).
enum class PipelineTransfers {
  // Trident's runtime: every tp rank sends its B with an asynchronous send (runtime/train's
  // Isend); the transfer X(B) delays the receiver only (planner/simulator.h).
  kAsync,
  // Megatron-LM as of 2021-2022 (megatron/p2p_communication.py, `_communicate`: the sends and
  // receives of one call go out as torch.distributed.batch_isend_irecv, then req.wait() and
  // torch.cuda.synchronize(), so nothing else runs on either rank meanwhile; Narayanan et al.,
  // "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21,
  // §4.1, the scatter/gather optimization, on by default: --no-scatter-gather-tensors-in-
  // pipeline turns it off). Without sequence parallelism each of the t ranks sends 1/t of the
  // tensor (split_tensor_into_1d_equal_chunks) and the receiver all-gathers the t pieces over
  // its tp group (gather_split_1d_tensor); with sequence parallelism each rank's B is already
  // its own shard and goes as it is. Blocking on both sides, boundary s -> s+1 costs
  //   sender    X(B / t) in the forward of stage s and in the backward of stage s+1 (the
  //             input gradient goes back the same way)
  //   receiver  AG(B, t) in the forward of stage s+1 and in the backward of stage s: the
  //             all-gather on the tp group's link (none with sequence parallelism)
  // and nothing more after the sender's action ends (its end is the transfer's).
  // Example 530B (h 20480, s 2048, b 1, bf16, t 8), A100 DGX, IB 25 GB/s · 0.9, α 5 µs, NVLink
  // 300 GB/s · 0.77, α 3 µs: B = 83,886,080 bytes; X(B / 8) = 0.005 + 0.466 = 0.471 ms; AG =
  // 7·0.003 + 7/8 · 83.9 MB / 231 GB/s = 0.339 ms.
  kMegatronBlocking,
};

class ScheduleCache;

struct EvaluateOptions {
  int64_t memory_limit_bytes = 0;  // 0: the device's memory
  int pipedream_steps = 4;         // steps replayed to reach PipeDream's steady state
  bool timeline = true;            // false: simulation.events left empty, all else the same
  PipelineTransfers pipeline_transfers = PipelineTransfers::kAsync;
  // The plan's stage costs of a recompute mode (StageCosts::Create at its micro-batch size, tp,
  // sequence parallelism and cp), where the caller holds them (the search's cache); null, or no
  // function: made for this evaluation.
  std::function<const StageCosts*(RecomputeMode)> stage_costs;
  // Keeps generated schedules and their lanes for the next evaluation of the same shape
  // (planner/schedule_cache.h); null: made for this one.
  ScheduleCache* schedules = nullptr;
};

// REQUIRES: plan.Validate() is ok. Fails when the cost model lacks a layer's costs at the
// plan's (micro_batch_size, tp, sequence_parallel, cp), or the plan's placement exceeds the
// cluster.
StatusOr<Evaluation> EvaluatePlan(const CostModel& costs, const Plan& plan,
                                  const EvaluateOptions& options);

// Copies the evaluation's predictions (per stage and overall) into `plan`.
void RecordPredictions(const Evaluation& evaluation, Plan* plan);

}  // namespace trident
