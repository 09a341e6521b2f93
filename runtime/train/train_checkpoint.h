// Checkpoints of a running job: the plan-independent file of runtime/checkpoint/ written from
// and read into one rank's StageModel and Optimizer.
//
// Saving gathers at world rank 0: every rank of replica 0 (dp rank 0) sends its parameter
// shards and their optimizer state, and rank 0 joins the tp shards into full tensors
// (ConcatenateShards along each parameter's slice axis) and writes the file atomically. The
// shards travel as a float message with exactly representable headers (names as character
// codes, integers as 16-bit pieces), so no byte transport is needed. Rank 0 holds the whole
// model and optimizer state while it writes.
//
// With optimizer sharding the ranks of each shard group first all-gather the optimizer state
// of their chunks (and with parameter sharding the parameters too), so the file holds whole
// tensors whatever the sharding; loading takes this rank's chunk of the state, and whole
// parameters (the trainer loads before it releases them). A file written under one sharding,
// dp or mesh loads under any other.
//
// Loading: every rank reads its own slices from the file (so every host needs the file, on a
// shared file system or copied), whatever plan wrote it: other tp, pp, dp or cuts.
// The head's copy of a tied table reads the table's key.
// Thread-safety: one thread at a time; collective over `world` (every rank calls it).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "runtime/comm/comm.h"
#include "runtime/compute/compute.h"
#include "runtime/train/grad_sync.h"
#include "runtime/train/job_layout.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/stage_model.h"

namespace trident {

struct TrainState {
  const JobLayout* layout = nullptr;
  int rank = 0;
  Compute* compute = nullptr;
  Comm* world = nullptr;
  StageModel* model = nullptr;
  Optimizer* optimizer = nullptr;
  // Its value chunks, for parameters released between uses (dp_sharding full); may be null
  // before any is released.
  GradSync* grad_sync = nullptr;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

// Writes the state after `step` optimizer steps to `path` (rank 0 writes; the others send).
Status SaveTrainCheckpoint(const TrainState& state, int64_t step, const std::string& path);

// Ok when the checkpoint at `path` (its header alone) was written for `plan`'s model by
// `optimizer`: what the worker checks of --load before any rank connects. NotFound for a
// missing file; InvalidArgument naming both models or optimizers otherwise.
Status CheckResumable(const std::string& path, const Plan& plan, OptimizerKind optimizer);

// Reads parameters and optimizer state from `path`; returns the step it was written at.
// InvalidArgument when the file's model or optimizer differs from this run's (naming both).
StatusOr<int64_t> LoadTrainCheckpoint(const TrainState& state, const std::string& path);

}  // namespace trident
