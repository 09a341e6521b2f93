// The inside of a Trainer (trainer.h), shared by its two step loops: trainer.cc (schedules that
// flush: one optimizer step per training step) and pipedream.cc (PipeDream: an update per
// micro-batch group, weight stashing, no flush). Not part of the library's interface.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/data/dataset.h"
#include "runtime/train/dp_shard.h"
#include "runtime/train/grad_sync.h"
#include "runtime/train/interpreter.h"
#include "runtime/train/job_layout.h"
#include "runtime/train/pipeline_links.h"
#include "runtime/train/stage_model.h"
#include "runtime/train/train_checkpoint.h"
#include "runtime/train/trainer.h"

namespace trident {

// InvalidArgument when a PipeDream plan asks for what asynchronous updates cannot give: a
// global-norm clip, or a tied table split over two positions (each side updates on its own
// clock, so the copies could not stay equal). Ok for other schedules.
Status CheckPipeDream(const Plan& plan, const TrainOptions& options);

struct Trainer::State {
  using StepCallback = std::function<void(const StepResult&)>;

  Plan plan;
  TrainOptions options;
  std::optional<JobLayout> layout;
  int rank = 0;
  MeshCoords coords;
  Comm* world = nullptr;
  Compute* compute = nullptr;
  std::unique_ptr<Comm> tp_comm, cp_comm, grad_comm, tie_comm, ctl_comm;
  std::unique_ptr<Comm> shard_comm, replicate_comm;
  std::optional<PipelineLinks> links;  // the pipeline transfers' communicators
  DpShard shard;  // this rank's place in optimizer sharding (runtime/train/dp_shard.h)
  std::unique_ptr<Dataset> data;
  std::unique_ptr<StageModel> model;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<GradSync> grad_sync;
  std::unique_ptr<Interpreter> interpreter;  // flushing schedules only
  int64_t start_step = 0;
  std::vector<TraceEvent> trace;
  double trace_cursor_ms = 0;

  Status Build();
  Status SplitComms();
  Status SplitShardComms(const std::vector<int>& grad_group);
  Status InitializeWeights();
  TrainState CheckpointState() const {
    return {&*layout,        rank,
            compute,         ctl_comm.get(),
            model.get(),     optimizer.get(),
            grad_sync.get(), options.comm_timeout};
  }
  InterpreterOptions MakeInterpreterOptions() const;

  // One step of a flushing schedule.
  StatusOr<StepResult> RunStep(int64_t step);
  // Steps start_step + 1 .. options.steps of a PipeDream plan (pipedream.cc).
  Status RunPipeDream(const StepCallback& on_step);

  // The values a step sums over the job: [loss sum, gradient norm², one non-finite flag per
  // stage]; SummarizeStep reads the sums into `summary` (whose step is set) and fails for a
  // non-finite loss.
  std::vector<float> StepValues(double loss_sum, double norm_squared,
                                int first_nonfinite_stage) const;
  Status SummarizeStep(const float* sums, StepSummary* summary) const;
  StepSummary NewSummary(int64_t step) const;
  Status ReduceStep(const StepRecord& record, StepSummary* summary);
  double LocalNormSquared();
  void ZeroGrads();
  // Rank 0: decodes every rank's figures (kStatsFloats each) into result->ranks and writes the
  // metrics lines and the step line.
  Status Publish(const float* all_stats, StepResult* result);
  bool Traced(int64_t step) const;
  Status Trace(const std::vector<ActionRecord>& actions, int64_t first_step, int64_t steps);
  Status Checkpoint(int64_t step);
};

}  // namespace trident
