// Measurement of one layer at several micro-batch sizes, on this rank of its tp group, with the
// runtime's own layers (runtime/layers) on a Compute backend.
//
// One repeat runs a whole micro-batch through the layer — Forward, BackwardInput,
// BackwardWeight, each call timed on its own — once per recompute mode the layer has (the GPT
// and Llama blocks: none, selective, full; the MLP block: none, full; other layers: none).
// The modes run back to back inside each repeat, so the extra time of a mode
// (recompute_*_ms: BackwardInput with that mode minus BackwardInput without) is a
// per-repeat difference taken under the same machine conditions; the entry records its
// median over every repeat (never below 0). Inputs are seeded random values (token ids for the
// embedding); weights come from the layers' own initializer. A tied LM head reads a stand-in for
// the embedding's table on this rank, which is not counted as the head's (the embedding counts it).
//
// Memory, from the backend's allocator (Compute::memory_stats):
//   param_bytes, grad_bytes   what building the layer allocated (checked against its
//                             Parameters());
//   optimizer_bytes           what AdamW's state for those parameters allocates (two moments
//                             per parameter, as runtime/train/optimizer.cc);
//   output_bytes              what Forward's output holds;
//   stashed_*_bytes           what the layer still holds after Forward (its input included),
//                             per recompute mode (checked against Layer::StashBytes);
//   workspace_*_bytes         the most any call allocated above what was alive at its start
//                             or end (temporaries freed before it returned), per recompute
//                             mode.
// A layer that keeps memory after its micro-batch ended, or whose figures disagree with its
// own account, is reported as an Internal error (a bug to fix in the layer).
//
// Jobs of several ranks: every rank of the job (the setup's world, or the tp group without
// one) measures the same layer at the same time. The ranks meet at a barrier before each timed
// call, and each repeat's times are the slowest rank's (gathered over the job): a training job
// runs at the pace of its slowest rank, and on a shared machine the cores' speeds drift apart.
// Every rank so sees the same samples and stops after the same repeat.
// Thread-safety: one thread at a time per Compute and Comm.
#pragma once

#include <memory>
#include <vector>

#include "core/model_spec.h"
#include "core/profile.h"
#include "core/status.h"
#include "profiler/measured_options.h"
#include "profiler/repeat_policy.h"
#include "runtime/comm/comm.h"
#include "runtime/compute/compute.h"

namespace trident {

struct LayerBenchSetup {
  LayerKind kind = LayerKind::kGptBlock;
  int64_t seq_len = 1;
  Compute* compute = nullptr;  // REQUIRES: not null
  Comm* tp_comm = nullptr;     // the tp group; nullptr for tp 1
  // The whole job, when several tp groups measure at once (see above). nullptr: no job.
  Comm* world = nullptr;
  TimingClock clock = TimingClock::kWall;
  // Megatron's sequence parallelism in the tp group. REQUIRES: the group's size divides
  // seq_len / cp.
  bool sequence_parallel = false;
  // The cp group (nullptr for cp 1): each rank runs its S/cp tokens of each sequence.
  // REQUIRES: 2·cp divides seq_len; the world is set (the job measures together).
  Comm* cp_comm = nullptr;
  // The layers' values and activations (LayerContext::dtype): fp32 or bf16.
  ElementType dtype = ElementType::kFp32;
};

struct LayerMeasurement {
  // Times: the lowest of the turns' medians (each Measure call is a turn; a repeat's forward
  // is the median of its recompute modes', which all run the same forward); the spread of
  // every repeat; the memory figures.
  ProfileEntry entry;
  int repeats = 0;       // repeats the figures come from (warm-up left out: repeat_policy.h)
  double repeat_ms = 0;  // the median time of one repeat, every recompute mode's pass included
  // The median F + B + W of every repeat over the entry's (its quietest turns'), >= 1: how
  // much slower than at its quietest the machine ran while this layer and size were measured.
  double load = 1;
};

// One layer of setup.kind, built once (a copy per recompute mode), measured at any micro-batch
// size any number of times: each Measure adds repeats to that size's samples and Result
// summarizes all of them. Measurements of several layers and sizes can so take turns (a
// profile does, in passes), and each one's samples span the same stretch of time: on a shared
// machine whose speed drifts over seconds, the figures stay consistent with one another.
class LayerBench {
 public:
  // REQUIRES: model.Validate() ok; model.dropout == 0; the tp group's size shards the model
  // (ModelSpec::TensorParallelProblem); 1 <= seq_len <= model.max_seq_len. Fails with
  // Internal when building the layer allocates other than its parameters and gradients.
  static StatusOr<std::unique_ptr<LayerBench>> Create(const ModelSpec& model,
                                                      const LayerBenchSetup& setup);
  ~LayerBench();
  LayerBench(const LayerBench&) = delete;
  LayerBench& operator=(const LayerBench&) = delete;

  // Repeats a micro-batch of `micro_batch` (>= 1) sequences as `policy` (Validate() ok) says,
  // its warm-up left out, and adds them to that size's samples. A new size, and a size whose
  // one repeat outlasts the policy's budget (its warm-up is its sample), first runs the
  // untimed micro-batch of Prime: the first forward of a gpt2-small LM head after the other
  // sizes had run took 30-60% longer than the next. Every rank of the setup's
  // world (or tp group) calls it with the same arguments. Fails with Internal when the
  // allocator's figures disagree with the layer's, and with the Comm's error.
  Status Measure(int micro_batch, const RepeatPolicy& policy);
  // The figures of every sample of `micro_batch` so far. REQUIRES: Measure(micro_batch) ran.
  LayerMeasurement Result(int micro_batch) const;

 private:
  struct Impl;
  explicit LayerBench(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trident
