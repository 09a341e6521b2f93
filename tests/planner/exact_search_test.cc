// The search with `exact` against brute force on the simulated step: random chains of up to 10
// generic layers (random times, sizes and memory limits) on up to 8 devices in nodes of 1 to 8,
// each instance one schedule (GPipe, 1F1B, ZB-H1 or PipeDream), micro-batch size and recompute
// mode. The brute force simulates every mesh, every cut and every replica vector (uniform
// meshes whose dp divides the micro-batches, unsharded and with the optimizer sharded over each
// of the search's shard groups, and per-stage replication over two or more stages summing to
// the devices) with EvaluatePlan; the search must return its best step within 1e-9
// relative, never a plan that breaks the memory limit, and no plan where it finds none.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "brute_force_partition.h"
#include "core/cluster.h"
#include "core/model_spec.h"
#include "core/profile.h"
#include "planner/cost_model.h"
#include "planner/evaluate.h"
#include "planner/plan_request.h"
#include "planner/search.h"

namespace trident {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Instance {
  ClusterSpec cluster;
  Profile profile;
  SearchRequest request;
  int micro_batches = 1;
};

double Real(std::mt19937& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

int Int(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

int64_t Bytes(std::mt19937& rng, double lo_gib, double hi_gib) {
  return static_cast<int64_t>(Real(rng, lo_gib, hi_gib) * (1 << 30));
}

ProfileEntry RandomEntry(std::mt19937& rng, int micro_batch) {
  ProfileEntry e;
  e.micro_batch = micro_batch;
  e.fwd_ms = Real(rng, 0.2, 5);
  e.bwd_input_ms = Real(rng, 0.2, 5);
  e.bwd_weight_ms = Real(rng, 0.1, 5);
  e.recompute_selective_ms = Real(rng, 0, 0.5 * e.fwd_ms);
  e.recompute_full_ms = e.fwd_ms;
  e.param_bytes = Bytes(rng, 0.01, 3);
  e.grad_bytes = e.param_bytes;
  e.optimizer_bytes = 2 * e.param_bytes;
  e.output_bytes = Bytes(rng, 0.001, 0.5);
  e.stashed_none_bytes = Bytes(rng, 0.01, 4);
  e.stashed_selective_bytes = e.stashed_none_bytes / 2;
  e.stashed_full_bytes = e.output_bytes;
  e.workspace_none_bytes = Bytes(rng, 0, 0.5);
  e.workspace_selective_bytes = e.workspace_none_bytes;
  e.workspace_full_bytes = e.workspace_none_bytes + e.stashed_none_bytes;
  return e;
}

Instance RandomInstance(std::mt19937& rng) {
  Instance x;
  const int layers = Int(rng, 1, 10);
  const int devices = Int(rng, 1, 8);
  x.cluster = *LoadClusterSpec(TRIDENT_SOURCE_DIR "/configs/clusters/dgx-a100-80gb.yaml");
  x.cluster.devices_per_node = std::vector<int>{1, 2, 4, 8}[Int(rng, 0, 3)];
  x.cluster.nodes = (devices + x.cluster.devices_per_node - 1) / x.cluster.devices_per_node;
  x.cluster.intra_node.bw_gb_per_s = Real(rng, 1, 300);
  x.cluster.inter_node.bw_gb_per_s = Real(rng, 0.1, 50);
  const int micro_batch = Int(rng, 1, 2);
  x.micro_batches = Int(rng, 1, 12);

  ModelSpec model;
  model.name = "random";
  model.max_seq_len = 1;
  model.layers = {{LayerKind::kGeneric, layers}};
  x.profile.model = model.name;
  x.profile.num_layers = layers;
  x.profile.seq_len = 1;
  x.profile.dtype = DType::kFp32;
  x.profile.method.source = ProfileSource::kMeasured;
  for (int l = 0; l < layers; ++l) {
    x.profile.layers.push_back({l, 1, LayerKind::kGeneric, {RandomEntry(rng, micro_batch)}});
  }

  SearchRequest& r = x.request;
  r.model = model;
  r.cluster_name = x.cluster.name;
  r.devices = devices;
  r.global_batch = int64_t{micro_batch} * x.micro_batches;
  r.seq_len = 1;
  r.dtype = DType::kFp32;
  r.runners_up = 0;
  SearchConstraints& c = r.constraints;
  c.exact = true;
  c.micro_batch = micro_batch;
  c.schedules = {std::vector<ScheduleKind>{ScheduleKind::kGpipe, ScheduleKind::k1F1B,
                                           ScheduleKind::kZbH1,
                                           ScheduleKind::kPipeDream}[Int(rng, 0, 3)]};
  c.recompute = {std::vector<RecomputeMode>{RecomputeMode::kNone, RecomputeMode::kSelective,
                                            RecomputeMode::kFull}[Int(rng, 0, 2)]};
  c.dp_sharding = {DpSharding::kNone, DpSharding::kOptimizer};
  c.max_memory_bytes = Bytes(rng, 6, 60);
  return x;
}

// The simulated step of one fully specified layout, +inf when it cannot run or does not fit.
double StepMs(const CostModel& costs, const Instance& x, const std::vector<int>& layer_counts,
              const std::vector<int>& replicas, DpSharding level = DpSharding::kNone,
              int shard = 0) {
  const SearchConstraints& c = x.request.constraints;
  Plan plan;
  CopyJobToPlan(x.request, &plan);
  plan.devices_per_node = x.cluster.devices_per_node;
  const int pp = static_cast<int>(replicas.size());
  plan.mesh = {*std::max_element(replicas.begin(), replicas.end()), pp, 1, 1};
  plan.micro_batch_size = *c.micro_batch;
  plan.num_micro_batches = x.micro_batches;
  plan.schedule = c.schedules.front();
  plan.dp_sharding = level;
  plan.dp_shard = shard;
  for (const Stage& s : MakeStages(layer_counts, replicas)) {
    plan.stages.push_back(
        {s.first_layer, s.last_layer - s.first_layer + 1, s.replicas, c.recompute.front(), 0, 0});
  }
  if (plan.Check()) return kInf;
  EvaluateOptions options;
  options.memory_limit_bytes = c.max_memory_bytes;
  options.timeline = false;
  StatusOr<Evaluation> ev = EvaluatePlan(costs, plan, options);
  if (!ev.ok()) {
    EXPECT_EQ(ev.status().code(), StatusCode::kInvalidArgument) << ev.status().ToString();
    return kInf;
  }
  return ev->Fits() ? ev->step_ms : kInf;
}

// The search's shard groups of a uniform mesh (search.cc's ShardGroups): the whole dp (0), and
// the largest divisor d >= 2 of dp whose ranks fit in a node when it is below dp.
std::vector<int> ShardGroups(int dp, int devices_per_node) {
  std::vector<int> groups = {0};
  for (int d = dp; d >= 2; --d) {
    if (dp % d != 0 || d > devices_per_node) continue;
    if (d < dp) groups.push_back(d);
    break;
  }
  return groups;
}

// Optimizer sharding of every uniform mesh with dp > 1 (not PipeDream), each shard group.
double ShardedBruteForceMs(const CostModel& costs, const Instance& x, int pp,
                           const std::vector<int>& any_count) {
  const int devices = x.request.devices;
  const int dp = devices / pp;
  if (devices % pp != 0 || dp == 1 || x.micro_batches % dp != 0 ||
      x.request.constraints.schedules.front() == ScheduleKind::kPipeDream) {
    return kInf;
  }
  double best = kInf;
  for (int shard : ShardGroups(dp, x.cluster.devices_per_node)) {
    for (const std::vector<int>& cuts : Compositions(x.profile.num_layers, pp, any_count)) {
      best = std::min(
          best, StepMs(costs, x, cuts, std::vector<int>(pp, dp), DpSharding::kOptimizer, shard));
    }
  }
  return best;
}

// Every mesh, sharding level, cut and replica vector of the search's space.
double BruteForceMs(const CostModel& costs, const Instance& x) {
  const int devices = x.request.devices;
  const int layers = x.profile.num_layers;
  std::vector<int> any_count;
  for (int n = 1; n <= std::max(layers, devices); ++n) any_count.push_back(n);
  double best = kInf;
  for (int pp = 1; pp <= std::min(devices, layers); ++pp) {
    std::vector<std::vector<int>> vectors;
    if (pp >= 2) {
      for (const std::vector<int>& r : Compositions(devices, pp, any_count)) vectors.push_back(r);
    } else if (x.micro_batches % devices == 0) {
      vectors.push_back({devices});
    }
    for (const std::vector<int>& replicas : vectors) {
      for (const std::vector<int>& cuts : Compositions(layers, pp, any_count)) {
        best = std::min(best, StepMs(costs, x, cuts, replicas));
      }
    }
    best = std::min(best, ShardedBruteForceMs(costs, x, pp, any_count));
  }
  return best;
}

void CheckInstances(std::uint32_t first_seed, int count) {
  int feasible = 0, replicated = 0, sharded = 0;
  std::vector<int> by_schedule(8, 0);
  for (int n = 0; n < count; ++n) {
    const std::uint32_t seed = first_seed + static_cast<std::uint32_t>(n);
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    const Instance x = RandomInstance(rng);
    ASSERT_TRUE(x.profile.Validate().ok()) << x.profile.Validate().ToString();
    ASSERT_TRUE(x.cluster.Validate().ok()) << x.cluster.Validate().ToString();
    const ProfileCostModel costs(x.profile, x.cluster);
    const double expected = BruteForceMs(costs, x);
    StatusOr<SearchResult> result = SearchPlans(costs, x.request);
    ++by_schedule[static_cast<int>(x.request.constraints.schedules.front())];
    if (expected == kInf) {
      EXPECT_FALSE(result.ok()) << result->ranked.front().plan.stages.size();
      continue;
    }
    ASSERT_TRUE(result.ok()) << result.status().ToString() << "; brute force " << expected;
    const Candidate& best = result->ranked.front();
    EXPECT_TRUE(best.evaluation.Fits());
    EXPECT_LE(std::abs(best.evaluation.step_ms - expected), 1e-9 * expected)
        << "search " << best.evaluation.step_ms << " ms, brute force " << expected << " ms";
    ++feasible;
    replicated += UniformReplication(best.plan.stages) ? 0 : 1;
    sharded += best.plan.dp_sharding == DpSharding::kNone ? 0 : 1;
    if (testing::Test::HasFailure()) break;
  }
  // Both outcomes, per-stage replication and optimizer sharding among the optima; every
  // schedule drawn.
  EXPECT_GT(feasible, count / 2);
  EXPECT_LT(feasible, count);
  EXPECT_GT(replicated, 0);
  EXPECT_GT(sharded, 0);
  for (ScheduleKind kind :
       {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbH1, ScheduleKind::kPipeDream}) {
    EXPECT_GT(by_schedule[static_cast<int>(kind)], count / 8);
  }
}

// 2,000 instances (200 under the sanitizers, which run them ten times slower).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kInstances = 200;
#else
constexpr int kInstances = 2000;
#endif

TEST(ExactSearch, MatchesBruteForceOnTheSimulatedStep) { CheckInstances(7000, kInstances); }

}  // namespace
}  // namespace trident
