// JobLayout: who runs what in a launched plan — each rank's coordinates, its stages and their
// layers, its ordered list of actions for a step, and which rank holds the other end of every
// pipeline transfer.
//
// Micro-batches. A step has M = plan.num_micro_batches micro-batches, numbered globally
// 0..M-1; micro-batch j of a stage whose position has r replicas runs on replica j mod r, and
// each rank's list is its lane of core/replica_lanes.h (the rule the planner simulates):
// replica d runs its position's list of the plan's schedule generated for its
// ceil((M - d) / r) micro-batches (under 1F1B and ZB-H1 with fewer warm-up forwards where the
// positions before cannot feed more, which keeps every layout free of deadlock), its local
// micro-batch i being global micro-batch i·r + d.
// Worked example: M = 4, replicas {3, 1}, 1F1B, pp 2: position 0 replica 0 runs local
// "0F0 0F1 0B0 0B1" = global 0F0 0F3 0B0 0B3, replica 1 runs 0F1 0B1, replica 2 runs 0F2 0B2;
// position 1 runs 1F0 1B0 1F1 1B1 1F2 1B2 1F3 1B3.
//
// Several steps (PipeDream, which never flushes): global micro-batch j of step k is k·M + j,
// and a rank's list is its lane's UnrollSteps list mapped the same way.
//
// Tensor parallelism: every rank of a tp group runs the same list; a pipeline transfer goes
// from tp rank t of one stage's replica to tp rank t of the next stage's replica (activations
// are whole on every tp rank).
//
// CheckNoDeadlock replays every rank's list at unit time (as ValidateSchedule does for one
// pipeline; under PipeDream each B is also a barrier of the position's replicas, which sum the
// update's gradients) and names the rank, its list index and the action that can never run.
// Thread-safety: immutable after Create.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/mesh.h"
#include "core/plan.h"
#include "core/rank_map.h"
#include "core/schedule.h"
#include "core/status.h"

namespace trident {

// The transfers of one sender, receiver, stage boundary and direction (the activations or the
// gradients crossing the boundary after stage `boundary`): what one NCCL link carries.
struct PipelineChannel {
  int from = 0;
  int to = 0;
  int boundary = 0;
  bool forward = true;
  auto operator<=>(const PipelineChannel&) const = default;
  // "activations across boundary 1 from rank 2 to rank 3".
  std::string ToString() const;
};

// One pipeline transfer: the activation (forward) or gradient of `micro_batch` on `channel`.
struct PipelineTransfer {
  PipelineChannel channel;
  int micro_batch = 0;
  bool operator==(const PipelineTransfer&) const = default;
  // "activation of micro-batch 2 across boundary 1".
  std::string ToString() const;
};

class JobLayout {
 public:
  // InvalidArgument when the plan fails Validate, its model does not start with an embedding
  // and end with an lm_head, or the schedule cannot be generated for some lane's micro-batch
  // count (the generator's message, naming the position and the replica).
  static StatusOr<JobLayout> Create(const Plan& plan, int steps = 1);

  const Plan& plan() const { return plan_; }
  const RankMap& rank_map() const { return rank_map_; }
  int NumRanks() const { return rank_map_.NumRanks(); }
  int NumStages() const { return static_cast<int>(plan_.stages.size()); }
  int Steps() const { return steps_; }
  // Micro-batches in the whole list: num_micro_batches · steps.
  int TotalMicroBatches() const { return plan_.num_micro_batches * steps_; }
  bool SplitBackward() const { return split_backward_; }

  int PositionOf(int stage) const { return stage % plan_.mesh.pp; }
  int ReplicasOf(int stage) const { return plan_.stages[stage].replicas; }
  // The global rank that runs `stage` for global micro-batch `micro_batch` as tp rank `tp` of
  // cp rank `cp`.
  int RankOf(int stage, int micro_batch, int tp, int cp) const;
  // The stages rank `rank` runs, in increasing order (v of them).
  std::vector<int> StagesOf(int rank) const;
  // Rank `rank`'s actions for all Steps(), in order, with global micro-batch ids.
  const std::vector<Action>& ProgramOf(int rank) const;

  // The first layer index past the stage.
  int EndLayer(int stage) const {
    return plan_.stages[stage].first_layer + plan_.stages[stage].num_layers;
  }
  int LastStage() const { return NumStages() - 1; }

  // See the file comment.
  Status CheckNoDeadlock() const;
  // Whether every channel meets its transfers in one order: the k-th transfer rank a sends on
  // it (in a's list) is the k-th one its receiver takes from it (in the receiver's list). A
  // backend that matches messages by order instead of by tag (NCCL, one communicator per
  // channel) needs it; the error names the channel and the first transfer the lists disagree on.
  Status CheckInOrderTransfers() const;

  // The transfer action `a` of rank `rank` sends or receives; nullopt when it sends or receives
  // none, or only to itself (virtual stages of one rank).
  std::optional<PipelineTransfer> SendOf(int rank, const Action& a) const;
  std::optional<PipelineTransfer> ReceiveOf(int rank, const Action& a) const;
  // Every channel rank `rank` sends or receives on, in increasing order (the same order on the
  // channel's two ranks).
  std::vector<PipelineChannel> ChannelsOf(int rank) const;

 private:
  JobLayout(Plan plan, RankMap rank_map, int steps)
      : plan_(std::move(plan)), rank_map_(std::move(rank_map)), steps_(steps) {}
  Status BuildPrograms();
  std::optional<std::string> WaitsForReplica(int rank, size_t next,
                                             const std::vector<int>& backwards) const;

  Plan plan_;
  RankMap rank_map_;
  int steps_ = 1;
  bool split_backward_ = false;
  std::vector<std::vector<Action>> programs_;  // by rank
};

// Ok when the runtime can build `model`: no generic layers (FailedPrecondition), an embedding
// first and an lm_head last (InvalidArgument).
Status CheckTrainableModel(const ModelSpec& model);

}  // namespace trident
