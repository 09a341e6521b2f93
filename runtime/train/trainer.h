// Trainer: one rank of a training job — checks the world against the plan, builds the
// communicators from the one rank map, its share of the model, the optimizer and the data, and
// runs steps: the schedule interpreter, gradient synchronization, global-norm clipping, the
// optimizer, metrics, traces and checkpoints (DESIGN.md §6).
//
// Every rank constructs a Trainer with the same plan and options and calls Run; all of them
// return the same status (a failure on one rank is seen by the others as a timeout unless the
// caller aborts the job, which the worker does).
//
// Loss: the mean over the step's global batch (the last stage's micro-batch losses, summed
// over the job and divided by M). Gradient norm: the 2-norm over every parameter of the model,
// each counted once (tp-replicated tensors on tp rank 0, replicas on dp rank 0, a tied table
// once). A non-finite loss ends the run with the step and the first stage whose output was not
// finite. PipeDream plans (asynchronous, weight stashing) follow pipedream.cc's update rule.
// Thread-safety: one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/plan.h"
#include "runtime/comm/comm.h"
#include "runtime/compute/compute.h"
#include "runtime/data/dataset.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/plan_contract.h"
#include "runtime/train/run_report.h"

namespace trident {

struct TrainOptions {
  int64_t steps = 10;    // train until this many optimizer steps (a resumed run counts its own)
  uint64_t seed = 1234;  // initialization and data order
  std::string data;      // text file or folder; "" the default corpus; "synthetic" random tokens
  OptimizerOptions optimizer;
  int64_t bucket_bytes = int64_t{25} << 20;  // gradient all-reduce buckets (PyTorch DDP's 25 MiB)
  std::chrono::milliseconds comm_timeout{std::chrono::minutes(5)};
  std::string metrics_path;          // metrics.jsonl ("" none); written by rank 0
  std::string trace_path;            // Chrome trace ("" none); written by rank 0
  std::string summary_path;          // measured against predicted, JSON ("" none); rank 0
  std::vector<int64_t> trace_steps;  // steps to trace (1-based)
  std::string save_dir;              // checkpoints ("" none): DIR/step-{k}.safetensors
  int64_t save_every = 0;            // also every k steps (0: only at the end)
  std::string load_path;             // resume from this checkpoint ("" start afresh)
  bool quiet = false;  // no per-step line on stdout (the end-of-run summary still prints)
  // The backend the ranks run on: Create refuses a plan it would not carry out as written
  // (plan_contract.h), e.g. on NCCL, which matches a pair's transfers by order, a layout whose
  // ranks would post them in different orders.
  RuntimeBackend backend;

  // InvalidArgument naming the worker flag.
  Status Validate() const;
};

// What every rank learns of a finished step.
struct StepResult {
  StepSummary summary;
  std::vector<RankStepStats> ranks;  // every rank's figures (on rank 0; empty elsewhere)
};

class Trainer {
 public:
  // Fails (the same way on every rank) when the world size differs from the plan's devices,
  // the schedule cannot run, the data cannot be read or the checkpoint does not fit.
  static StatusOr<std::unique_ptr<Trainer>> Create(const Plan& plan, const TrainOptions& options,
                                                   Comm* world, Compute* compute);
  ~Trainer();

  // Runs steps start_step() + 1 .. options.steps; `on_step` (may be empty) sees each result.
  Status Run(const std::function<void(const StepResult&)>& on_step = {});
  // Optimizer steps already taken (from a loaded checkpoint, else 0).
  int64_t start_step() const;

  struct State;

 private:
  explicit Trainer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace trident
