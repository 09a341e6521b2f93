#include "runtime/train/job_layout.h"

#include <map>
#include <set>
#include <utility>

#include "core/check.h"
#include "core/replica_lanes.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

std::string RankName(const RankMap& map, int rank) {
  return "rank " + Str(rank) + " (" + map.Describe(rank) + ")";
}

// Done flags of every (kind, stage, micro-batch) of a layout, for the dry run.
class DoneSet {
 public:
  DoneSet(int stages, int micro_batches)
      : stages_(stages), micro_batches_(micro_batches), done_(3 * stages * micro_batches, 0) {}
  bool Has(const Action& a) const { return done_[Index(a)] != 0; }
  void Add(const Action& a) { done_[Index(a)] = 1; }

 private:
  size_t Index(const Action& a) const {
    return (static_cast<size_t>(a.kind) * stages_ + a.stage) * micro_batches_ + a.micro_batch;
  }
  int stages_;
  int micro_batches_;
  std::vector<char> done_;
};

// The prerequisites of `a` (schedule.h's table) that have not run yet; at most one is named.
std::optional<Action> MissingPrerequisite(const Action& a, int last_stage, const DoneSet& done) {
  std::vector<Action> needs;
  if (a.kind == ActionKind::kForward && a.stage > 0) {
    needs.push_back({ActionKind::kForward, a.stage - 1, a.micro_batch});
  }
  if (a.kind == ActionKind::kBackward) {
    needs.push_back({ActionKind::kForward, a.stage, a.micro_batch});
    if (a.stage < last_stage) needs.push_back({ActionKind::kBackward, a.stage + 1, a.micro_batch});
  }
  if (a.kind == ActionKind::kWeight)
    needs.push_back({ActionKind::kBackward, a.stage, a.micro_batch});
  for (const Action& need : needs) {
    if (!done.Has(need)) return need;
  }
  return std::nullopt;
}

}  // namespace

Status CheckTrainableModel(const ModelSpec& model) {
  TRIDENT_RETURN_IF_ERROR(
      CheckNotGeneric(model, "the runtime cannot execute it",
                      "plan, simulate and explain it; train a model of Trident's layer kinds"));
  std::vector<LayerKind> kinds = model.ExpandLayers();
  if (kinds.empty() || kinds.front() != LayerKind::kEmbedding ||
      kinds.back() != LayerKind::kLmHead) {
    return InvalidArgument("model " + model.name +
                           ": the runtime trains language models whose first layer is an "
                           "embedding and whose last is an lm_head");
  }
  return Status::Ok();
}

StatusOr<JobLayout> JobLayout::Create(const Plan& plan, int steps) {
  TRIDENT_RETURN_IF_ERROR(plan.Validate());
  TRIDENT_RETURN_IF_ERROR(CheckTrainableModel(plan.model));
  if (steps < 1) return InvalidArgument("steps must be >= 1, got " + Str(steps));
  JobLayout layout(plan, plan.MakeRankMap(), steps);
  TRIDENT_RETURN_IF_ERROR(layout.BuildPrograms());
  return layout;
}

int JobLayout::RankOf(int stage, int micro_batch, int tp, int cp) const {
  int position = PositionOf(stage);
  int replica = (micro_batch % plan_.num_micro_batches) % ReplicasOf(stage);
  return rank_map_.Rank({.dp = replica, .pp = position, .tp = tp, .cp = cp});
}

std::vector<int> JobLayout::StagesOf(int rank) const {
  std::vector<int> stages;
  int position = rank_map_.Coords(rank).pp;
  for (int s = position; s < NumStages(); s += plan_.mesh.pp) stages.push_back(s);
  return stages;
}

const std::vector<Action>& JobLayout::ProgramOf(int rank) const {
  TRIDENT_CHECK(rank >= 0 && rank < NumRanks()) << "rank " << rank << " of " << NumRanks();
  return programs_[rank];
}

// Each rank runs its lane (core/replica_lanes.h); a schedule splits the backward exactly when
// its lists hold W actions.
Status JobLayout::BuildPrograms() {
  TRIDENT_ASSIGN_OR_RETURN(std::vector<Lane> lanes,
                           ReplicaLanes(plan_.schedule, plan_.mesh.pp, plan_.virtual_stages,
                                        plan_.num_micro_batches, plan_.PositionReplicas(), steps_));
  programs_.assign(NumRanks(), {});
  for (Lane& lane : lanes) {
    for (const Action& a : lane.actions) {
      split_backward_ = split_backward_ || a.kind == ActionKind::kWeight;
    }
    for (int c = 0; c < plan_.mesh.cp; ++c) {
      for (int t = 0; t < plan_.mesh.tp; ++t) {
        programs_[rank_map_.Rank({.dp = lane.replica, .pp = lane.position, .tp = t, .cp = c})] =
            lane.actions;
      }
    }
  }
  return Status::Ok();
}

// PipeDream's replicas (each with its cp ranks) sum each update's gradients (a blocking
// all-reduce after every B), so the dry run holds a rank after its n-th B until every rank of
// its grad group has run its n-th.
std::optional<std::string> JobLayout::WaitsForReplica(int rank, size_t next,
                                                      const std::vector<int>& backwards) const {
  const std::vector<Action>& program = programs_[rank];
  if (plan_.schedule != ScheduleKind::kPipeDream || next == 0 ||
      program[next - 1].kind != ActionKind::kBackward) {
    return std::nullopt;
  }
  for (int other : rank_map_.GradGroup(rank)) {
    if (backwards[other] < backwards[rank]) {
      return "the gradient sum of update " + Str(backwards[rank]) + " with " +
             RankName(rank_map_, other);
    }
  }
  return std::nullopt;
}

Status JobLayout::CheckNoDeadlock() const {
  DoneSet done(NumStages(), TotalMicroBatches());
  std::vector<size_t> next(NumRanks(), 0);
  std::vector<int> backwards(NumRanks(), 0);
  auto ready = [&](int rank) {
    const std::vector<Action>& program = programs_[rank];
    return next[rank] < program.size() &&
           !MissingPrerequisite(program[next[rank]], LastStage(), done) &&
           !WaitsForReplica(rank, next[rank], backwards);
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int rank = 0; rank < NumRanks(); ++rank) {
      while (ready(rank)) {
        const Action& a = programs_[rank][next[rank]++];
        done.Add(a);
        if (a.kind == ActionKind::kBackward) ++backwards[rank];
        progress = true;
      }
    }
  }
  for (int rank = 0; rank < NumRanks(); ++rank) {
    if (next[rank] == programs_[rank].size()) continue;
    const Action& a = programs_[rank][next[rank]];
    std::optional<Action> missing = MissingPrerequisite(a, LastStage(), done);
    std::string what =
        missing ? ActionToString(*missing) : *WaitsForReplica(rank, next[rank], backwards);
    return InvalidArgument(RankName(rank_map_, rank) + ", action " + Str(next[rank]) + " (" +
                           ActionToString(a) + "): waits for " + what +
                           ", which never runs (deadlock)");
  }
  return Status::Ok();
}

std::string PipelineChannel::ToString() const {
  return std::string(forward ? "activations" : "gradients") + " across boundary " + Str(boundary) +
         " from rank " + Str(from) + " to rank " + Str(to);
}

std::string PipelineTransfer::ToString() const {
  return std::string(channel.forward ? "activation" : "gradient") + " of micro-batch " +
         Str(micro_batch) + " across boundary " + Str(channel.boundary);
}

std::optional<PipelineTransfer> JobLayout::SendOf(int rank, const Action& a) const {
  const MeshCoords c = rank_map_.Coords(rank);
  std::optional<PipelineTransfer> t;
  if (a.kind == ActionKind::kForward && a.stage < LastStage()) {
    t = PipelineTransfer{{rank, RankOf(a.stage + 1, a.micro_batch, c.tp, c.cp), a.stage, true},
                         a.micro_batch};
  } else if (a.kind == ActionKind::kBackward && a.stage > 0) {
    t = PipelineTransfer{{rank, RankOf(a.stage - 1, a.micro_batch, c.tp, c.cp), a.stage - 1, false},
                         a.micro_batch};
  }
  if (t && t->channel.to == rank) return std::nullopt;
  return t;
}

std::optional<PipelineTransfer> JobLayout::ReceiveOf(int rank, const Action& a) const {
  const MeshCoords c = rank_map_.Coords(rank);
  std::optional<PipelineTransfer> t;
  if (a.kind == ActionKind::kForward && a.stage > 0) {
    t = PipelineTransfer{{RankOf(a.stage - 1, a.micro_batch, c.tp, c.cp), rank, a.stage - 1, true},
                         a.micro_batch};
  } else if (a.kind == ActionKind::kBackward && a.stage < LastStage()) {
    t = PipelineTransfer{{RankOf(a.stage + 1, a.micro_batch, c.tp, c.cp), rank, a.stage, false},
                         a.micro_batch};
  }
  if (t && t->channel.from == rank) return std::nullopt;
  return t;
}

std::vector<PipelineChannel> JobLayout::ChannelsOf(int rank) const {
  std::set<PipelineChannel> channels;
  for (const Action& a : ProgramOf(rank)) {
    if (std::optional<PipelineTransfer> t = SendOf(rank, a)) channels.insert(t->channel);
    if (std::optional<PipelineTransfer> t = ReceiveOf(rank, a)) channels.insert(t->channel);
  }
  return {channels.begin(), channels.end()};
}

Status JobLayout::CheckInOrderTransfers() const {
  std::map<PipelineChannel, std::vector<PipelineTransfer>> sent;
  std::map<PipelineChannel, std::vector<PipelineTransfer>> received;
  for (int rank = 0; rank < NumRanks(); ++rank) {
    for (const Action& a : programs_[rank]) {
      if (std::optional<PipelineTransfer> t = SendOf(rank, a)) sent[t->channel].push_back(*t);
      if (std::optional<PipelineTransfer> t = ReceiveOf(rank, a)) {
        received[t->channel].push_back(*t);
      }
    }
  }
  for (const auto& [channel, sends] : sent) {
    const std::vector<PipelineTransfer>& receives = received[channel];
    for (size_t k = 0; k < sends.size() && k < receives.size(); ++k) {
      if (sends[k] == receives[k]) continue;
      return InvalidArgument(
          RankName(rank_map_, channel.from) + " sends the " + sends[k].ToString() + " to " +
          RankName(rank_map_, channel.to) + " as its transfer " + Str(k) + " of that kind, " +
          "but the receiver expects the " + receives[k].ToString() +
          " there; hint: this schedule needs a backend that matches messages by tag (MPI: "
          "--device cpu)");
    }
  }
  return Status::Ok();
}

}  // namespace trident
