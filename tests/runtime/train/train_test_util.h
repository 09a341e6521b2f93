// Helpers for the runtime/train tests: a gpt-tiny-like model, plans built in code for any
// schedule, pipeline depth, tensor parallelism and per-position replication, and a runner of
// the Trainer over in-process ranks (one thread, one CpuCompute per rank).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"
#include "runtime/train/trainer.h"

namespace trident {

// gpt-tiny's shape: embedding, `blocks` gpt_blocks, final_norm, lm_head; V 256, max_seq 64,
// h 64, a 4, f 256, dropout 0.
ModelSpec TinyGpt(int blocks = 2, bool tied = true);

struct PlanShape {
  ScheduleKind schedule = ScheduleKind::k1F1B;
  int tp = 1;
  std::vector<int> replicas = {1};  // per pipeline position: its size is pp
  int virtual_stages = 1;
  int num_micro_batches = 4;
  int micro_batch_size = 1;
  int64_t seq_len = 8;
};

// A valid-by-construction plan of `model` (stages cut as evenly as possible, the first ones
// one layer longer), unless the shape itself is impossible for the schedule.
Plan MakePlan(const ModelSpec& model, const PlanShape& shape);

// What one rank saw of a run.
struct RankRun {
  std::vector<StepSummary> steps;   // from on_step, in order
  std::vector<size_t> stats_sizes;  // StepResult::ranks.size() of each step
  int64_t start_step = -1;
  int64_t peak_bytes =
      0;  // the highest RankStepStats::peak_memory_bytes of any rank and step (rank 0)
};

struct TrainRun {
  Status status;               // of RunInProcess (the first failing rank, prefixed "rank R")
  std::vector<RankRun> ranks;  // by world rank
  // Rank 0's losses, step by step.
  std::vector<double> Losses() const;
};

// Runs plan.devices ranks of Trainer::Create + Run with `options`. With `nccl_order`, every
// rank's world is a StreamComm (runtime/comm/stream_comm.h: NCCL's matching by order and its
// streams), and options.backend should be the cuda one, as a GPU job's.
TrainRun TrainInProcess(const Plan& plan, const TrainOptions& options, bool nccl_order = false);

// Options for short quiet runs on synthetic data, writing no files.
TrainOptions QuietOptions(int64_t steps);

// |a − b| / |b|.
double RelativeError(double a, double b);

// A fresh folder under /tmp, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace trident
