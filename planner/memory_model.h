// Memory per rank of one pipeline position: parameters, gradients, optimizer state, the flat
// buffers the replicas' gradient all-reduce packs the gradients into (replicas · cp > 1; a tied
// table split over two positions is summed on its own and not packed), the activations the
// schedule keeps alive at its peak, PipeDream's stashed weight versions, the largest layer
// workspace and the device's reserved memory.
//
// Sharded data parallelism (core/plan.h DpSharding) divides state over the n = shard replicas
// · cp ranks of the position's shard group (P, G, O: the position's parameters, gradients and
// optimizer state; P_l, G_l: its largest layer's; each share rounded up):
//   none        P + G + O + buckets G
//   optimizer   P + G + O/n + buckets G + G/n                (ZeRO-1, as the runtime runs it:
//                                                             the buckets hold a split tie's
//                                                             table too, for the parameter
//                                                             gather, and each rank receives
//                                                             its chunks' sums in G/n)
//   gradients   P + G/n + O/n + X                            (ZeRO-2, as the runtime runs it:
//                                                             each layer's gradients are
//                                                             packed into a buffer and
//                                                             reduce-scattered as its
//                                                             backward completes, X =
//                                                             max over layers of 2 · G_layer
//                                                             less the micro-batch's stash
//                                                             freed by then; a table tied
//                                                             over two positions, T, stays
//                                                             whole: + T − T/n in G, + T +
//                                                             T/n for its gather)
//   full        P/n + G/n + O/n + 2 · (P_l + G_l)            (ZeRO-3 / FSDP: the layer being
//                                                             computed and the one prefetched
//                                                             are gathered whole, with their
//                                                             gradients during backward)
//
// Live activations, in micro-batches of the position's whole stash (p = position, P = pp,
// m = micro-batches of the rank's lane, v = virtual stages; DESIGN.md §5). A lane is one
// replica of the position running its schedule list alone (core/replica_lanes.h): with r
// replicas and M micro-batches a step, replica d's lane has ⌈(M − d) / r⌉, so a position's
// fullest rank is replica 0's, m = ⌈M / r⌉:
//   naive                 1
//   gpipe                 m
//   1f1b                  min(P − p, m)
//   zb_h1                 min(P, m) on every position: deferring W keeps a later position's
//                         activations alive until its W runs (Qi et al. 2023, ZB-H1 keeps
//                         the peak of all workers at 1F1B's, P micro-batches)
//   interleaved_1f1b      min(v·m, 2(P − p − 1) + (v − 1)·P + 1) / v     (chunk activations
//                         held, each 1/v of the position's stash; at p = 0 this is
//                         P·(1 + (P − 1)/(P·v)), Narayanan et al. 2021)
//   pipedream             min(P − p, m), plus one weight version per extra in-flight
//                         micro-batch (weight stashing)
// Example: 1F1B, P 4, m 8: position 0 holds 4 micro-batches, position 3 holds 1. GPipe, M 6,
// position 0 with 3 replicas: each rank's lane has m = 2 and holds 2.
#pragma once

#include <cstdint>
#include <string>

#include "core/plan.h"

namespace trident {

double LiveActivationFactor(ScheduleKind kind, int position, int pp, int micro_batches,
                            int virtual_stages);

// What one rank of a position keeps, summed over the position's layers.
struct PositionFootprint {
  int64_t param_bytes = 0;
  int64_t grad_bytes = 0;
  int64_t tied_grad_bytes = 0;   // of grad_bytes, a tied table's summed outside the buckets
  int64_t tied_param_bytes = 0;  // and its parameters, which full sharding keeps whole
  int64_t optimizer_bytes = 0;
  int64_t stash_bytes = 0;        // per micro-batch, for the position's recompute mode
  int64_t workspace_bytes = 0;    // the largest single layer's
  int64_t layer_param_bytes = 0;  // the largest single layer's parameters
  int64_t layer_grad_bytes = 0;   // and gradients
  // Gradient sharding: the most one layer's gradients and the buffer they are packed into
  // (2 · its gradient bytes) add at the end of its backward, above the stash of the micro-batch
  // that this layer and the later ones of its chunk have freed by then (0 when never above).
  int64_t grad_transient_bytes = 0;
  // Full sharding: the most gathering one layer's parameters (the whole tensors and the
  // all-gather buffer, 2 · its parameter bytes) adds before its input gradient, above the stash
  // that the later layers of its chunk have freed by then (0 when never above).
  int64_t param_transient_bytes = 0;
};

// A position's footprint with another chunk of its layers added: the sums summed, the
// single-layer figures (workspace, largest layer, transients) the larger of the two. The tied
// table's figures are the position's own, left as they are in `total`.
PositionFootprint AddChunk(PositionFootprint total, const PositionFootprint& chunk);

struct MemoryBreakdown {
  int64_t params = 0;
  int64_t grads = 0;
  int64_t optimizer = 0;
  int64_t grad_buckets = 0;
  int64_t gathered_layers = 0;  // full sharding: two layers' whole parameters and gradients
  int64_t activations = 0;
  int64_t weight_versions = 0;
  int64_t workspace = 0;
  int64_t fragmentation = 0;  // of the activations' allocations, held but not reusable
  int64_t reserved = 0;
  int64_t Total() const {
    return params + grads + optimizer + grad_buckets + gathered_layers + activations +
           weight_versions + workspace + fragmentation + reserved;
  }
  // "params 1.2 GiB, grads ..., total 30.1 GiB".
  std::string ToString() const;
};

struct MemoryContext {
  ScheduleKind schedule = ScheduleKind::k1F1B;
  int pp = 1;
  int virtual_stages = 1;
  int micro_batches = 1;  // of the lane: ⌈M / replicas⌉ for the position's fullest rank
  int replicas = 1;       // of this position
  DpSharding sharding = DpSharding::kNone;
  int64_t reserved_bytes = 0;
  int cp = 1;                // the grad group is replicas · cp ranks
  double fragmentation = 0;  // MemoryOverhead::fragmentation: of the activations
  int shard_replicas = 0;    // of a shard group (Plan::ShardReplicas); 0: every replica
  // The parameters are a low-precision copy (bf16, fp16) of fp32 master weights that the
  // optimizer state holds (the plan's dtype is not fp32).
  bool master_weights = false;
  // Whether the gradients travel in buckets: a grad group of more than one rank.
  bool GradBuckets() const { return replicas * cp > 1; }
  // n, the ranks of the shard group.
  int ShardRanks() const { return (shard_replicas > 0 ? shard_replicas : replicas) * cp; }
};

MemoryBreakdown PositionMemory(const PositionFootprint& footprint, int position,
                               const MemoryContext& context);

// The bytes one optimizer step moves on a rank of the position, kernel by kernel as the runtime
// and Megatron-LM's optimizers run it, over the share the rank steps (all of it, or 1/n of the
// parameters from optimizer sharding on; `share` is PositionMemory's): the gradient norm reads
// the stepped gradients G; AdamW (or SGD) reads them and the optimizer state O and writes O
// back; fp32 parameters P are their own master weights, read and written with O, while
// low-precision ones are written from the fp32 masters in O (2 bytes read a byte written); the
// held gradients Gh are zeroed for the next step:
//   fp32            2·G + 2·O + 2·P + Gh
//   master weights  2·G + 2·O + 3·P + Gh
// Example: AdamW, bf16, no sharding (P 2, G = Gh 4, O 12: master, m, v bytes a parameter):
// 8 + 24 + 6 + 4 = 42 bytes a parameter; fp32 (P 4, G 4, O 8): 8 + 16 + 8 + 4 = 36.
double OptimizerStepBytes(const PositionFootprint& footprint, const MemoryBreakdown& share,
                          const MemoryContext& context);

// A lower bound on the fullest rank's memory (Total()) for any cut of layers whose footprints
// sum to `whole` into context.pp · context.virtual_stages chunks (chunk s on position s mod pp),
// whether each chunk is judged alone standing for v like it (the partition DP's rule) or each
// position sums its chunks (the evaluation's). Summed over the chunks, the ranks hold all the
// parameters, gradients, optimizer state and the whole-gradient buckets of none and optimizer
// (each divided by n where the sharding level shards it; the per-layer terms only add), and at
// least the last position's live activations (the fewest) of the whole stash; the fullest
// holds at least the average, a pp-th of that, plus the reserved memory. Example 1F1B, pp 4,
// 40 GiB of static state, 16 GiB of stash: 40/4 + 1 · 16/4 = 14 GiB + reserved.
int64_t FullestPositionLowerBound(const PositionFootprint& whole, const MemoryContext& context);

}  // namespace trident
