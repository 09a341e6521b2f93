#include "planner/evaluate.h"

#include <algorithm>
#include <map>
#include <memory>

#include "core/replica_lanes.h"
#include "core/schedule.h"
#include "planner/schedule_cache.h"
#include "planner/sharding_comm.h"
#include "planner/stage_costs.h"

namespace trident {
namespace {

// One StageCosts per recompute mode the plan uses: the caller's, or made here.
class CostsByMode {
 public:
  const StageCosts& at(RecomputeMode mode) const { return *by_mode_.at(mode); }
  const StageCosts& any() const { return *by_mode_.begin()->second; }

  Status Fill(const CostModel& costs, const Plan& plan, const EvaluateOptions& options) {
    for (const PlanStage& stage : plan.stages) {
      const RecomputeMode mode = stage.recompute;
      if (by_mode_.count(mode)) continue;
      const StageCosts* given = options.stage_costs ? options.stage_costs(mode) : nullptr;
      if (given == nullptr) {
        TRIDENT_ASSIGN_OR_RETURN(StageCosts made,
                                 StageCosts::Create(costs, plan.micro_batch_size, plan.mesh.tp,
                                                    plan.sequence_parallel, plan.mesh.cp, mode));
        given = &owned_.emplace(mode, std::move(made)).first->second;
      }
      by_mode_[mode] = given;
    }
    return Status::Ok();
  }

 private:
  std::map<RecomputeMode, StageCosts> owned_;
  std::map<RecomputeMode, const StageCosts*> by_mode_;
};

// The cluster level a pair of ranks spans (core/cluster.h).
int LevelBetween(const CostModel& costs, int rank_a, int rank_b) {
  return costs.LevelSpanning(std::min(rank_a, rank_b), std::max(rank_a, rank_b));
}

// The level of a group of ranks: the one its lowest and highest ranks span (a level's units
// are runs of consecutive ranks, so every rank between them lies in the same unit).
int GroupLevel(const CostModel& costs, const std::vector<int>& ranks) {
  auto [low, high] = std::minmax_element(ranks.begin(), ranks.end());
  return costs.LevelSpanning(*low, *high);
}

bool SplitsBackward(ScheduleKind kind) { return kind == ScheduleKind::kZbH1; }

std::vector<StageTimes> StageTimesOf(const Plan& plan, const CostsByMode& by_mode) {
  std::vector<StageTimes> times;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PlanStage& stage = plan.stages[s];
    RangeTimes t = by_mode.at(stage.recompute)
                       .Times(stage.first_layer, stage.first_layer + stage.num_layers - 1);
    StageTimes st{t.fwd_ms, t.bwd_input_ms, t.bwd_weight_ms};
    if (!SplitsBackward(plan.schedule)) {
      st.bwd_ms += st.weight_ms;
      st.weight_ms = 0;
    }
    times.push_back(st);
  }
  return times;
}

// One boundary's transfer (EvaluateOptions::pipeline_transfers): `link_ms` over the link between
// the positions, `gather_ms` the receiver's all-gather over its tp group (Megatron's
// scatter/gather; 0 otherwise).
struct BoundaryTransfer {
  double link_ms = 0;
  double gather_ms = 0;
};

// Megatron-LM's scatter/gather splits the tensor over the t ranks when sequence parallelism
// does not already shard it and t divides it.
bool ScattersOverTp(const Plan& plan, PipelineTransfers transfers, int64_t bytes) {
  return transfers == PipelineTransfers::kMegatronBlocking && !plan.sequence_parallel &&
         plan.mesh.tp > 1 && bytes % plan.mesh.tp == 0;
}

// Boundary s -> s+1 on the link joining the last rank of s's position to the first rank of
// s+1's (each position's ranks are contiguous; the last stage of a chunk wraps to position 0).
std::vector<BoundaryTransfer> BoundaryTransfers(const CostModel& costs, const Plan& plan,
                                                const RankMap& ranks, const CostsByMode& by_mode,
                                                PipelineTransfers transfers) {
  std::vector<BoundaryTransfer> out;
  for (size_t s = 0; s + 1 < plan.stages.size(); ++s) {
    const PlanStage& stage = plan.stages[s];
    int64_t bytes =
        by_mode.at(stage.recompute).OutputBytes(stage.first_layer + stage.num_layers - 1);
    const int p = static_cast<int>(s) % plan.mesh.pp;
    int from = ranks.Rank(
        {.dp = ranks.Replicas(p) - 1, .pp = p, .tp = plan.mesh.tp - 1, .cp = plan.mesh.cp - 1});
    const int q = static_cast<int>(s + 1) % plan.mesh.pp;
    int to = ranks.Rank({.pp = q});
    BoundaryTransfer t;
    const bool scatter = ScattersOverTp(plan, transfers, bytes);
    const int64_t sent = scatter ? bytes / plan.mesh.tp : bytes;
    t.link_ms = costs.CollectiveMsAtLevel(Collective::kP2p, static_cast<double>(sent), 2,
                                          LevelBetween(costs, from, to));
    if (scatter) {
      int last_tp = ranks.Rank({.pp = q, .tp = plan.mesh.tp - 1});
      t.gather_ms = costs.CollectiveMsAtLevel(Collective::kAllGather, static_cast<double>(bytes),
                                              plan.mesh.tp, LevelBetween(costs, to, last_tp));
    }
    out.push_back(t);
  }
  return out;
}

// The simulator's inputs for the boundaries: asynchronous sends delay the receiver by the
// transfer; blocking ones (kMegatronBlocking) occupy both ranks instead, so each transfer joins
// the actions around it (evaluate.h, PipelineTransfers) and no delay is left between them.
void SetTransfers(const std::vector<BoundaryTransfer>& transfers, PipelineTransfers kind,
                  SimulationInput* input) {
  input->send_activation_ms.assign(transfers.size(), 0);
  for (size_t s = 0; s < transfers.size(); ++s) {
    const BoundaryTransfer& t = transfers[s];
    if (kind == PipelineTransfers::kAsync) {
      input->send_activation_ms[s] = t.link_ms;
      continue;
    }
    StageTimes& sender = input->stages[s];
    StageTimes& receiver = input->stages[s + 1];
    sender.fwd_ms += t.link_ms;      // sends its output
    sender.bwd_ms += t.gather_ms;    // gathers the output's gradient
    receiver.fwd_ms += t.gather_ms;  // gathers its input
    receiver.bwd_ms += t.link_ms;    // sends the input's gradient back
  }
}

// Sum of a position's chunks (virtual stages p, p + pp, ...).
PositionFootprint PositionFootprintOf(const Plan& plan, const CostsByMode& by_mode, int p) {
  PositionFootprint total;
  for (size_t s = p; s < plan.stages.size(); s += plan.mesh.pp) {
    const PlanStage& stage = plan.stages[s];
    total = AddChunk(total,
                     by_mode.at(stage.recompute)
                         .Footprint(stage.first_layer, stage.first_layer + stage.num_layers - 1));
  }
  return total;
}

// A tied LM head on another position than the embedding keeps its own copy of the matrix
// (and its gradient and optimizer state), and the two gradients are all-reduced each step.
bool TiedAcrossPositions(const Plan& plan) {
  return plan.model.tied_embeddings && plan.mesh.pp > 1;
}

MemoryContext MemoryContextOf(const CostModel& costs, const Plan& plan, int p) {
  const int replicas = plan.stages[p].replicas;
  MemoryContext context{plan.schedule,
                        plan.mesh.pp,
                        plan.virtual_stages,
                        LaneMicroBatches(plan.num_micro_batches, replicas, 0),
                        replicas,
                        plan.dp_sharding,
                        costs.ReservedBytes(),
                        plan.mesh.cp,
                        costs.ActivationFragmentation()};
  context.shard_replicas = plan.ShardReplicas(p);
  context.master_weights = plan.dtype != DType::kFp32;
  return context;
}

void AddMemory(const CostModel& costs, const Plan& plan, const CostsByMode& by_mode,
               Evaluation* ev) {
  const StageCosts& first = by_mode.at(plan.stages.front().recompute);
  PositionFootprint embedding = first.Footprint(0, 0);
  for (int p = 0; p < plan.mesh.pp; ++p) {
    PositionFootprint f = PositionFootprintOf(plan, by_mode, p);
    bool holds_head = (static_cast<int>(plan.stages.size()) - 1) % plan.mesh.pp == p;
    if (TiedAcrossPositions(plan) && holds_head && p != 0) {
      f.param_bytes += embedding.param_bytes;
      f.grad_bytes += embedding.grad_bytes;
      f.optimizer_bytes += embedding.optimizer_bytes;
    }
    if (TiedAcrossPositions(plan) && (holds_head || p == 0)) {
      f.tied_grad_bytes = embedding.grad_bytes;
      f.tied_param_bytes = embedding.param_bytes;
    }
    ev->memory.push_back(PositionMemory(f, p, MemoryContextOf(costs, plan, p)));
    ev->peak_memory_bytes = std::max(ev->peak_memory_bytes, ev->memory.back().Total());
  }
}

// Per position: when its last lane ended and its busiest lane's compute time per step.
struct PositionLanes {
  double end_ms = 0;
  double busy_ms = 0;
};

std::vector<PositionLanes> ByPosition(const SimulationResult& sim, int pp, int steps) {
  std::vector<PositionLanes> out(pp);
  for (const LaneStats& lane : sim.lanes) {
    PositionLanes& p = out[lane.position];
    p.end_ms = std::max(p.end_ms, lane.end_ms);
    p.busy_ms = std::max(p.busy_ms, lane.busy_ms / steps);
  }
  return out;
}

// Position p's grad group and its first shard group (Plan::ShardReplicas replicas, each with
// its cp ranks; RankMap::GradGroup lists them replica by replica).
ShardGroupLinks LinksOf(const CostModel& costs, const Plan& plan, const RankMap& ranks, int p) {
  std::vector<int> group = ranks.GradGroup(ranks.Rank({.pp = p}));
  ShardGroupLinks links;
  links.ranks = static_cast<int>(group.size());
  links.level = GroupLevel(costs, group);
  links.shard_ranks =
      plan.dp_sharding == DpSharding::kNone ? links.ranks : plan.ShardReplicas(p) * plan.mesh.cp;
  group.resize(links.shard_ranks);
  links.shard_level = GroupLevel(costs, group);
  return links;
}

// The compute of one micro-batch on position p: its chunks' forward and backward.
double PositionMicroBatchMs(const Plan& plan, const std::vector<double>& stage_ms, int p) {
  double ms = 0;
  for (size_t s = p; s < stage_ms.size(); s += plan.mesh.pp) ms += stage_ms[s];
  return ms;
}

// Exposed gradient synchronization, sharding communication and the optimizer step (see the
// header).
void AddSync(const CostModel& costs, const Plan& plan, const RankMap& ranks,
             const CostsByMode& by_mode, const SimulationInput& input, Evaluation* ev) {
  const SimulationResult& sim = ev->simulation;
  const bool async = plan.schedule == ScheduleKind::kPipeDream;
  std::vector<PositionLanes> lanes = ByPosition(sim, plan.mesh.pp, input.steps);
  for (int p = 0; p < plan.mesh.pp; ++p) {
    PositionFootprint f = PositionFootprintOf(plan, by_mode, p);
    const ShardingComm comm =
        ShardingCommOf(costs, plan.dp_sharding, f, LinksOf(costs, plan, ranks, p));
    ev->param_gather_ms = std::max(ev->param_gather_ms, comm.gather_ms);
    const int lane = LaneMicroBatches(plan.num_micro_batches, plan.stages[p].replicas, 0);
    const double per_micro_batch = ExposedMicroBatchCommMs(
        plan.dp_sharding, comm, lane, PositionMicroBatchMs(plan, ev->stage_ms, p));
    double& term = plan.dp_sharding == DpSharding::kFull ? ev->layer_comm_ms : ev->grad_scatter_ms;
    term = std::max(term, per_micro_batch);
    const int updates = async ? lane : 1;
    const double sync = comm.sync_ms;
    double exposed =
        async ? updates * sync : std::max(0.0, sync - (sim.makespan_ms - lanes[p].end_ms));
    ev->exposed_sync_ms = std::max(ev->exposed_sync_ms, exposed);
    ev->sync_ms = std::max(ev->sync_ms, updates * sync);
    // Each rank steps its share of the state (memory_model.h).
    const MemoryContext context = MemoryContextOf(costs, plan, p);
    const MemoryBreakdown share = PositionMemory(f, p, context);
    ev->optimizer_ms = std::max(ev->optimizer_ms,
                                updates * costs.OptimizerMs(OptimizerStepBytes(f, share, context)));
    ev->busy_ms = std::max(ev->busy_ms, lanes[p].busy_ms);
  }
  if (TiedAcrossPositions(plan)) {
    double bytes = static_cast<double>(by_mode.any().Footprint(0, 0).grad_bytes);
    int head = ranks.Rank({.pp = (static_cast<int>(plan.stages.size()) - 1) % plan.mesh.pp});
    ev->exposed_sync_ms +=
        costs.CollectiveMsAtLevel(Collective::kAllReduce, bytes, 2, LevelBetween(costs, 0, head));
  }
  ev->makespan_ms = async ? std::max(sim.steady_step_ms, ev->busy_ms) : sim.makespan_ms;
  ev->bubble_ms = std::max(0.0, ev->makespan_ms - ev->busy_ms);
  ev->bubble_fraction = sim.bubble_fraction;
  ev->step_ms = ev->makespan_ms + ev->exposed_sync_ms + ev->optimizer_ms + ev->param_gather_ms +
                ev->grad_scatter_ms + ev->layer_comm_ms;
}

// The step's schedule over all M micro-batches: its lists without replication, else only its
// kind and shape (the simulator builds the replicas' round-robin lanes).
StatusOr<Schedule> StepSchedule(const Plan& plan) {
  std::vector<int> replicas = plan.PositionReplicas();
  if (std::all_of(replicas.begin(), replicas.end(), [](int r) { return r == 1; })) {
    return GenerateSchedule(plan.schedule, plan.mesh.pp, plan.virtual_stages,
                            plan.num_micro_batches);
  }
  return Schedule{plan.schedule,
                  plan.mesh.pp,
                  plan.virtual_stages,
                  plan.num_micro_batches,
                  SplitsBackward(plan.schedule),
                  {}};
}

// StepSchedule(plan), from `cache` where there is one and the plan is not replicated (a
// generated schedule's shape is all it depends on).
StatusOr<std::shared_ptr<const Schedule>> StepScheduleOf(const Plan& plan, ScheduleCache* cache) {
  std::vector<int> replicas = plan.PositionReplicas();
  const bool replicated =
      !std::all_of(replicas.begin(), replicas.end(), [](int r) { return r == 1; });
  if (cache != nullptr && !replicated) {
    return cache->Generated(plan.schedule, plan.mesh.pp, plan.virtual_stages,
                            plan.num_micro_batches);
  }
  TRIDENT_ASSIGN_OR_RETURN(Schedule made, StepSchedule(plan));
  return std::make_shared<const Schedule>(std::move(made));
}

// The stage whose busiest lane computes longest in a step.
int BottleneckStage(const Plan& plan, const std::vector<double>& stage_ms) {
  int best = 0;
  double best_ms = -1;
  for (size_t s = 0; s < stage_ms.size(); ++s) {
    double ms = stage_ms[s] * LaneMicroBatches(plan.num_micro_batches, plan.stages[s].replicas, 0);
    if (ms > best_ms) {
      best = static_cast<int>(s);
      best_ms = ms;
    }
  }
  return best;
}

}  // namespace

void RecordPredictions(const Evaluation& ev, Plan* plan) {
  for (size_t s = 0; s < plan->stages.size(); ++s) {
    plan->stages[s].predicted_time_ms = ev.stage_ms[s];
    plan->stages[s].predicted_memory_bytes = ev.memory[s % plan->mesh.pp].Total();
  }
  plan->predicted.step_time_ms = ev.step_ms;
  plan->predicted.tokens_per_s =
      ev.step_ms > 0 ? static_cast<double>(plan->global_batch * plan->seq_len) / (ev.step_ms * 1e-3)
                     : 0;
  plan->predicted.bubble_fraction = ev.bubble_fraction;
  plan->predicted.peak_memory_bytes = ev.peak_memory_bytes;
}

StatusOr<Evaluation> EvaluatePlan(const CostModel& costs, const Plan& plan,
                                  const EvaluateOptions& options) {
  if (plan.mesh.tp > costs.DevicesPerNode() || plan.devices > costs.TotalDevices()) {
    return InvalidArgument("the plan needs " + std::to_string(plan.devices) + " devices (tp " +
                           std::to_string(plan.mesh.tp) + ") but the cluster has " +
                           std::to_string(costs.TotalDevices()) + " with " +
                           std::to_string(costs.DevicesPerNode()) + " per node");
  }
  CostsByMode by_mode;
  TRIDENT_RETURN_IF_ERROR(by_mode.Fill(costs, plan, options));
  RankMap ranks = plan.MakeRankMap();
  std::shared_ptr<const Schedule> schedule;
  TRIDENT_ASSIGN_OR_RETURN(schedule, StepScheduleOf(plan, options.schedules));
  Evaluation ev;
  ev.memory_limit_bytes =
      options.memory_limit_bytes > 0 ? options.memory_limit_bytes : costs.DeviceMemoryBytes();
  SimulationInput input;
  input.schedule = schedule.get();
  input.cache = options.schedules;
  input.stages = StageTimesOf(plan, by_mode);
  SetTransfers(BoundaryTransfers(costs, plan, ranks, by_mode, options.pipeline_transfers),
               options.pipeline_transfers, &input);
  input.replicas = plan.PositionReplicas();
  if (plan.schedule == ScheduleKind::kPipeDream) input.steps = options.pipedream_steps;
  input.timeline = options.timeline;
  TRIDENT_ASSIGN_OR_RETURN(ev.simulation, Simulate(input));
  for (const StageTimes& t : input.stages) ev.stage_ms.push_back(t.fwd_ms + t.bwd_ms + t.weight_ms);
  ev.bottleneck_stage = BottleneckStage(plan, ev.stage_ms);
  AddSync(costs, plan, ranks, by_mode, input, &ev);
  AddMemory(costs, plan, by_mode, &ev);
  return ev;
}

}  // namespace trident
