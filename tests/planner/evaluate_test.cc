// Evaluation of replicated plans: every round-robin lane is simulated at its stage's own
// per-micro-batch time, memory counts the busiest lane's micro-batches, and uniform
// replication predicts what one replica's pipeline alone does.
#include "planner/evaluate.h"

#include <gtest/gtest.h>

#include "planner/schedule_cache.h"
#include "planner/search.h"
#include "planner/stage_costs.h"
#include "planner_fixture.h"

namespace trident {
namespace {

// A two-stage GPipe plan of gpt3-1.3b on one replica per stage, M micro-batches of 1.
Plan TwoStagePlan(const PlannerFixture& f, int num_micro_batches) {
  SearchRequest r = f.Request(2, num_micro_batches);
  r.constraints.tp = 1;
  r.constraints.pp = 2;
  r.constraints.dp = 1;
  r.constraints.micro_batch = 1;
  r.constraints.schedules = {ScheduleKind::kGpipe};
  r.constraints.recompute = {RecomputeMode::kFull};
  r.constraints.dp_sharding = {DpSharding::kNone};
  StatusOr<SearchResult> result = SearchPlans(*f.costs, r);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return result.ok() ? result->ranked.front().plan : Plan{};
}

Plan Replicated(Plan plan, std::vector<int> replicas) {
  int devices = 0;
  for (size_t p = 0; p < replicas.size(); ++p) {
    plan.stages[p].replicas = replicas[p];
    plan.mesh.dp = std::max(plan.mesh.dp, replicas[p]);
    devices += replicas[p];
  }
  plan.devices = devices;
  return plan;
}

Evaluation Evaluated(const PlannerFixture& f, const Plan& plan) {
  EXPECT_TRUE(plan.Validate().ok()) << plan.Validate().ToString();
  StatusOr<Evaluation> ev = EvaluatePlan(*f.costs, plan, {});
  EXPECT_TRUE(ev.ok()) << ev.status().ToString();
  return ev.ok() ? *ev : Evaluation{};
}

// Replicas {3, 1} of M = 6: position 0's three lanes take 2 micro-batches each, position 1's
// one lane all 6, each at the unreplicated stage time.
TEST(Evaluate, ReplicatedStagesRunEveryLaneAtTheirOwnTime) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  Plan single = TwoStagePlan(*f, 6);
  Evaluation one = Evaluated(*f, single);
  Evaluation three_one = Evaluated(*f, Replicated(single, {3, 1}));
  EXPECT_EQ(three_one.stage_ms, one.stage_ms);  // no stage time is scaled

  const std::vector<LaneStats>& lanes = three_one.simulation.lanes;
  ASSERT_EQ(lanes.size(), 4u);
  const int want_micro_batches[] = {2, 2, 2, 6};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(lanes[i].micro_batches, want_micro_batches[i]);
  const double busy_ms = std::max(2 * one.stage_ms[0], 6 * one.stage_ms[1]);
  EXPECT_NEAR(three_one.busy_ms, busy_ms, 1e-9 * busy_ms);
  EXPECT_LE(three_one.makespan_ms, one.makespan_ms);
  EXPECT_GE(three_one.makespan_ms, three_one.busy_ms);

  // GPipe keeps all of a lane's micro-batches alive: 2 on position 0's ranks, 6 on position 1.
  ASSERT_EQ(three_one.memory.size(), 2u);
  EXPECT_GT(one.memory[0].activations, 0);
  EXPECT_EQ(3 * three_one.memory[0].activations, one.memory[0].activations);
  EXPECT_EQ(three_one.memory[1].activations, one.memory[1].activations);
}

// Uniform replication r: each replica's lanes are a pipeline of M / r micro-batches on their
// own, so the prediction is that of one pipeline of M / r (the boundary crosses the same link).
TEST(Evaluate, UniformReplicationIsOnePipelineOfItsShare) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  Plan single = TwoStagePlan(*f, 6);
  Evaluation two_two = Evaluated(*f, Replicated(single, {2, 2}));
  Plan share = single;
  share.num_micro_batches = 3;
  share.global_batch = 3;
  Evaluation alone = Evaluated(*f, share);
  EXPECT_EQ(two_two.makespan_ms, alone.makespan_ms);
  EXPECT_EQ(two_two.busy_ms, alone.busy_ms);
  EXPECT_EQ(two_two.simulation.lanes.size(), 4u);
  for (const LaneStats& lane : two_two.simulation.lanes) EXPECT_EQ(lane.micro_batches, 3);
  EXPECT_EQ(two_two.memory[0].activations, alone.memory[0].activations);
}

// PipeDream's steady step cannot beat its busiest lane, which runs one action at a time.
TEST(Evaluate, PipeDreamStepIsAtLeastTheBusiestLane) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  Plan plan = Replicated(TwoStagePlan(*f, 6), {3, 1});
  plan.schedule = ScheduleKind::kPipeDream;
  plan.model.tied_embeddings = false;
  Evaluation ev = Evaluated(*f, plan);
  EXPECT_GE(ev.makespan_ms, ev.busy_ms);
  EXPECT_GE(ev.makespan_ms, ev.simulation.steady_step_ms);
  EXPECT_NEAR(ev.busy_ms, std::max(2 * ev.stage_ms[0], 6 * ev.stage_ms[1]), 1e-9 * ev.busy_ms);
  EXPECT_EQ(ev.step_ms, ev.makespan_ms + ev.exposed_sync_ms + ev.optimizer_ms);
}

}  // namespace
}  // namespace trident

namespace trident {
namespace {

// The fixture's whole model in one stage on tp 8 (a DGX node), seq 8,192, `replicas` replicas
// of one micro-batch each.
Plan OneStageTp8(const PlannerFixture& f, int replicas) {
  Plan plan;
  plan.model = f.model;
  plan.cluster = f.cluster.name;
  plan.devices_per_node = 8;
  plan.seq_len = 8192;
  plan.dtype = DType::kBf16;
  plan.micro_batch_size = 1;
  plan.num_micro_batches = replicas;
  plan.global_batch = replicas;
  plan.stages = {{0, f.model.NumLayers(), replicas, RecomputeMode::kNone, 0, 0}};
  plan.mesh = {replicas, 1, 8, 1};
  plan.devices = 8 * replicas;
  return plan;
}

// Context parallelism: each cp rank saw part of every sequence, so a stage's gradients are
// summed over dp · cp ranks (RankMap::GradGroup). Llama 3 8B, tp 8 × cp 2 on two nodes, one
// replica: the all-reduce runs over the 2 cp ranks on the inter-node link, and its 4 GB of fp32
// gradients (per tp rank) outlast the one micro-batch's backward; with cp 1 there is none.
TEST(Evaluate, GradientsAreSummedOverTheContextParallelRanks) {
  auto f = LoadPlannerFixture("llama3-8b", "dgx-h100", 8192, DType::kBf16);
  Plan plan = OneStageTp8(*f, 1);
  EXPECT_EQ(Evaluated(*f, plan).exposed_sync_ms, 0);
  plan.mesh.cp = 2;
  plan.devices = 16;
  const Evaluation ev = Evaluated(*f, plan);
  const StageCosts costs = *StageCosts::Create(*f->costs, 1, 8, false, 2, RecomputeMode::kNone);
  const double grads = static_cast<double>(costs.GradBytes(0, f->model.NumLayers() - 1));
  const double sync = f->costs->CollectiveMsAtLevel(Collective::kAllReduce, grads, 2, 1);
  EXPECT_GT(ev.exposed_sync_ms, 0);
  EXPECT_LE(ev.exposed_sync_ms, sync);
  EXPECT_GT(grads, 3e9);
}

// ZeRO-1 over two replicas: the gradients are reduce-scattered (each replica steps its half of
// the optimizer state) and the updated parameters all-gathered after the step, which nothing
// hides; without ZeRO-1 there is no gather.
TEST(Evaluate, ZeroOneGathersTheUpdatedParameters) {
  auto f = LoadPlannerFixture("llama3-8b", "dgx-h100", 8192, DType::kBf16);
  Plan plan = OneStageTp8(*f, 2);
  const Evaluation replicated = Evaluated(*f, plan);
  EXPECT_EQ(replicated.param_gather_ms, 0);
  plan.dp_sharding = DpSharding::kOptimizer;
  const Evaluation sharded = Evaluated(*f, plan);
  const StageCosts costs = *StageCosts::Create(*f->costs, 1, 8, false, 1, RecomputeMode::kNone);
  const int last = f->model.NumLayers() - 1;
  const double params = static_cast<double>(costs.Footprint(0, last).param_bytes);
  const double grads = static_cast<double>(costs.GradBytes(0, last));
  EXPECT_DOUBLE_EQ(sharded.param_gather_ms,
                   f->costs->CollectiveMsAtLevel(Collective::kAllGather, params, 2, 1));
  EXPECT_DOUBLE_EQ(sharded.sync_ms,
                   f->costs->CollectiveMsAtLevel(Collective::kReduceScatter, grads, 2, 1));
  EXPECT_DOUBLE_EQ(sharded.step_ms, sharded.makespan_ms + sharded.exposed_sync_ms +
                                        sharded.optimizer_ms + sharded.param_gather_ms);
  EXPECT_LT(sharded.sync_ms, replicated.sync_ms);
}

// Megatron-LM's pipeline transfers (PipelineTransfers::kMegatronBlocking): Llama 3 8B in two
// positions of one DGX H100 node each (tp 8), GPipe, one micro-batch. Without sequence
// parallelism each of the 8 ranks sends 1/8 of the boundary activation B over its own
// InfiniBand adapter, X(B/8), and the receiver all-gathers the pieces over NVLink, AG(B, 8);
// both block, so each stage's time grows by X(B/8) + AG(B, 8) and the makespan F0 F1 B1 B0
// runs back to back: async F0 + X(B) + F1 + B1 + X(B) + B0 becomes F0' + F1' + B1' + B0'.
// With sequence parallelism each rank's B is already its own 1/8 and nothing is gathered.
TEST(Evaluate, MegatronTransfersBlockAndScatterOverTheTpRanks) {
  auto f = LoadPlannerFixture("llama3-8b", "dgx-h100", 8192, DType::kBf16);
  Plan plan = OneStageTp8(*f, 1);
  const int layers = f->model.NumLayers();
  plan.stages = {{0, layers / 2, 1, RecomputeMode::kNone, 0, 0},
                 {layers / 2, layers - layers / 2, 1, RecomputeMode::kNone, 0, 0}};
  plan.mesh = {1, 2, 8, 1};
  plan.devices = 16;
  plan.schedule = ScheduleKind::kGpipe;
  const StageCosts costs = *StageCosts::Create(*f->costs, 1, 8, false, 1, RecomputeMode::kNone);
  const double bytes = static_cast<double>(costs.OutputBytes(layers / 2 - 1));
  EXPECT_EQ(bytes, 2.0 * 8192 * 4096);  // the whole activation, bf16
  const double whole = f->costs->CollectiveMsAtLevel(Collective::kP2p, bytes, 2, 1);
  const double piece = f->costs->CollectiveMsAtLevel(Collective::kP2p, bytes / 8, 2, 1);
  const double gather = f->costs->CollectiveMsAtLevel(Collective::kAllGather, bytes, 8, 0);
  const Evaluation async = Evaluated(*f, plan);
  EvaluateOptions options;
  options.pipeline_transfers = PipelineTransfers::kMegatronBlocking;
  const Evaluation blocking = *EvaluatePlan(*f->costs, plan, options);
  for (int s = 0; s < 2; ++s) {
    EXPECT_NEAR(blocking.stage_ms[s], async.stage_ms[s] + piece + gather, 1e-9);
  }
  EXPECT_NEAR(async.makespan_ms, async.stage_ms[0] + async.stage_ms[1] + 2 * whole, 1e-9);
  EXPECT_NEAR(blocking.makespan_ms, blocking.stage_ms[0] + blocking.stage_ms[1], 1e-9);
  // Hand check of the pieces on dgx-h100: InfiniBand 50 GB/s · 0.9, α 5 µs; NVLink 450 GB/s ·
  // 0.82, α 3.4 µs, a collective's base latency α0 8.4 µs: B = 67,108,864 bytes, X(B/8) =
  // 0.005 + 8,388,608 / 45e6 = 0.19141 ms, AG = 0.0084 + 7 · 0.0034 + 7/8 · 67,108,864 / 369e6
  // = 0.19133 ms.
  EXPECT_NEAR(piece, 0.005 + 8388608 / 45e6, 1e-9);
  EXPECT_NEAR(gather, 0.0322 + 0.875 * 67108864 / 369e6, 1e-9);

  plan.sequence_parallel = true;
  const StageCosts sp = *StageCosts::Create(*f->costs, 1, 8, true, 1, RecomputeMode::kNone);
  const double shard = static_cast<double>(sp.OutputBytes(layers / 2 - 1));
  EXPECT_EQ(shard, bytes / 8);
  const Evaluation sp_async = Evaluated(*f, plan);
  const Evaluation sp_blocking = *EvaluatePlan(*f->costs, plan, options);
  const double sent = f->costs->CollectiveMsAtLevel(Collective::kP2p, shard, 2, 1);
  for (int s = 0; s < 2; ++s) {
    EXPECT_NEAR(sp_blocking.stage_ms[s], sp_async.stage_ms[s] + sent, 1e-9);
  }
}

// A ScheduleCache and the caller's stage costs change nothing: plans of a few shapes (1F1B,
// PipeDream, replicated round robin) evaluated through one cache, more of them than it keeps,
// give a fresh evaluation's figures bit for bit.
TEST(Evaluate, CachesGiveTheFreshEvaluation) {
  auto f = LoadPlannerFixture("gpt3-1.3b", "dgx-a100-80gb", 2048, DType::kBf16);
  const Plan gpipe = TwoStagePlan(*f, 6);
  std::vector<Plan> plans;
  for (ScheduleKind kind : {ScheduleKind::k1F1B, ScheduleKind::kPipeDream, ScheduleKind::kZbH1}) {
    for (const std::vector<int>& replicas :
         std::vector<std::vector<int>>{{1, 1}, {3, 1}, {2, 2}, {1, 4}}) {
      for (int cut : {5, 9, 13}) {
        Plan p = Replicated(gpipe, replicas);
        p.schedule = kind;
        p.stages[1].first_layer = cut;
        p.stages[1].num_layers = p.stages[0].num_layers + p.stages[1].num_layers - cut;
        p.stages[0].num_layers = cut;
        if (p.Validate().ok()) plans.push_back(p);
      }
    }
  }
  ASSERT_GT(plans.size(), ScheduleCache::kCapacity);
  StatusOr<StageCosts> costs = StageCosts::Create(*f->costs, 1, 1, false, 1, RecomputeMode::kFull);
  ASSERT_TRUE(costs.ok()) << costs.status().ToString();
  ScheduleCache cache;
  EvaluateOptions cached;
  cached.schedules = &cache;
  cached.stage_costs = [&](RecomputeMode) { return &*costs; };
  for (int round = 0; round < 2; ++round) {
    for (const Plan& p : plans) {
      StatusOr<Evaluation> fresh = EvaluatePlan(*f->costs, p, {});
      StatusOr<Evaluation> reused = EvaluatePlan(*f->costs, p, cached);
      ASSERT_EQ(fresh.ok(), reused.ok()) << p.ToString();
      if (!fresh.ok()) continue;
      EXPECT_EQ(reused->step_ms, fresh->step_ms) << p.ToString();
      EXPECT_EQ(reused->simulation.makespan_ms, fresh->simulation.makespan_ms) << p.ToString();
      EXPECT_EQ(reused->peak_memory_bytes, fresh->peak_memory_bytes) << p.ToString();
      EXPECT_EQ(reused->simulation.events.size(), fresh->simulation.events.size());
    }
  }
}

}  // namespace
}  // namespace trident
