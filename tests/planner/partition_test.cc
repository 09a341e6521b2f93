#include "planner/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/planner/brute_force_partition.h"
#include "tests/planner/table_partition_costs.h"

namespace trident {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Layers with compute only: StageMs = sum / replicas, BoundaryMs = 0.
TablePartitionCosts ComputeOnly(const std::vector<double>& compute_ms) {
  std::vector<LayerCosts> layers;
  for (double ms : compute_ms) layers.push_back(LayerCosts{.compute_ms = ms});
  return TablePartitionCosts(layers, NetworkCosts{});
}

std::vector<int> OneTo(int n) {
  std::vector<int> values;
  for (int v = 1; v <= n; ++v) values.push_back(v);
  return values;
}

std::vector<int> PowersOfTwoUpTo(int n) {
  std::vector<int> values;
  for (int v = 1; v <= n; v *= 2) values.push_back(v);
  return values;
}

// Contiguous, non-empty stages covering [0, L), laid out from unit 0, replicas summing to units.
testing::AssertionResult IsWellFormed(const Partition& p, int num_layers, int num_stages,
                                      int units) {
  if (static_cast<int>(p.stages.size()) != num_stages) {
    return testing::AssertionFailure() << p.stages.size() << " stages, want " << num_stages;
  }
  int layer = 0;
  int unit = 0;
  for (const Stage& s : p.stages) {
    if (s.first_layer != layer || s.last_layer < s.first_layer || s.replicas < 1 ||
        s.first_unit != unit) {
      return testing::AssertionFailure() << "bad stage in " << p.ToString();
    }
    layer = s.last_layer + 1;
    unit += s.replicas;
  }
  if (layer != num_layers || unit != units) {
    return testing::AssertionFailure()
           << p.ToString() << " covers " << layer << " layers and " << unit << " units";
  }
  return testing::AssertionSuccess();
}

// The DP's answer `dp` against the brute-force optimum `bf`. Both use only max and min on the
// same cost answers, so the optimum and the tie-break must agree exactly.
void ExpectSameOptimum(const PartitionCosts& costs, const Partition& dp, const Partition& bf,
                       int num_stages, int units) {
  ASSERT_EQ(dp.feasible(), bf.feasible()) << dp.ToString() << " vs " << bf.ToString();
  if (!dp.feasible()) {
    EXPECT_EQ(dp.bottleneck_ms, kInf);
    return;
  }
  EXPECT_LE(std::abs(dp.bottleneck_ms - bf.bottleneck_ms), 1e-9 * std::max(1.0, bf.bottleneck_ms));
  EXPECT_TRUE(IsWellFormed(dp, costs.NumLayers(), num_stages, units));
  EXPECT_EQ(EvaluateBottleneckMs(costs, dp.stages), dp.bottleneck_ms);
  EXPECT_EQ(dp.stages, bf.stages) << dp.ToString() << " vs " << bf.ToString();
}

// The same costs with StageMsGrowsWithLayers() false: the DP's exhaustive scan.
class ExhaustiveScan : public PartitionCosts {
 public:
  explicit ExhaustiveScan(const PartitionCosts& costs) : costs_(costs) {}
  int NumLayers() const override { return costs_.NumLayers(); }
  double StageMs(int first, int last, int replicas, int first_unit, int stage_index,
                 int num_stages) const override {
    return costs_.StageMs(first, last, replicas, first_unit, stage_index, num_stages);
  }
  double BoundaryMs(int last_of_left, int boundary_unit) const override {
    return costs_.BoundaryMs(last_of_left, boundary_unit);
  }
  bool StageMsGrowsWithLayers() const override { return false; }

 private:
  const PartitionCosts& costs_;
};

// Costs with no structure at all: a hash of the arguments, a small integer (many ties) or, one
// time in eight, infinity. Adding a layer may make a stage cheaper.
class HashedCosts : public PartitionCosts {
 public:
  HashedCosts(int num_layers, std::uint64_t seed) : num_layers_(num_layers), seed_(seed) {}
  int NumLayers() const override { return num_layers_; }
  double StageMs(int first, int last, int replicas, int first_unit, int stage_index,
                 int num_stages) const override {
    std::uint64_t h = Mix({first, last, replicas, first_unit, stage_index, num_stages});
    return h % 8 == 0 ? kInf : static_cast<double>(h % 16);
  }
  double BoundaryMs(int last_of_left, int boundary_unit) const override {
    return static_cast<double>(Mix({-1, last_of_left, boundary_unit}) % 12);
  }
  bool StageMsGrowsWithLayers() const override { return false; }

 private:
  std::uint64_t Mix(std::initializer_list<int> values) const {
    std::uint64_t h = seed_;
    for (int v : values) {  // splitmix64 steps
      h += 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(v + 1000);
      h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
      h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
      h ^= h >> 31;
    }
    return h;
  }

  int num_layers_;
  std::uint64_t seed_;
};

// Costs at least `base`'s everywhere: one stage in `1 / rarity` infeasible, one in as many
// raised by a hashed amount, the others and every boundary as they are.
class RaisedCosts : public PartitionCosts {
 public:
  RaisedCosts(const PartitionCosts& base, int rarity, std::uint64_t seed)
      : base_(base), rarity_(rarity), hashed_(base.NumLayers(), seed) {}
  int NumLayers() const override { return base_.NumLayers(); }
  double StageMs(int first, int last, int replicas, int first_unit, int stage_index,
                 int num_stages) const override {
    const double base = base_.StageMs(first, last, replicas, first_unit, stage_index, num_stages);
    const double h = hashed_.StageMs(first, last, replicas, first_unit, stage_index, num_stages);
    const int pick = h == kInf ? 0 : static_cast<int>(h) % (2 * rarity_) + 1;
    if (pick == 1) return kInf;
    return pick == 2 ? base + h / 4 : base;
  }
  double BoundaryMs(int last_of_left, int boundary_unit) const override {
    return base_.BoundaryMs(last_of_left, boundary_unit);
  }
  bool StageMsGrowsWithLayers() const override { return false; }

 private:
  const PartitionCosts& base_;
  int rarity_;
  HashedCosts hashed_;
};

// The same costs answering StageMsBelow loosely: at or above the limit, the limit, the stage's
// own cost or infinity, as a hash of the arguments picks.
class LooseAboveLimit : public PartitionCosts {
 public:
  LooseAboveLimit(const PartitionCosts& costs, std::uint64_t seed)
      : costs_(costs), hashed_(costs.NumLayers(), seed) {}
  int NumLayers() const override { return costs_.NumLayers(); }
  double StageMs(int first, int last, int replicas, int first_unit, int stage_index,
                 int num_stages) const override {
    return costs_.StageMs(first, last, replicas, first_unit, stage_index, num_stages);
  }
  double StageMsBelow(int first, int last, int replicas, int first_unit, int stage_index,
                      int num_stages, double limit_ms) const override {
    const double ms = StageMs(first, last, replicas, first_unit, stage_index, num_stages);
    if (ms < limit_ms) return ms;
    const double h = hashed_.StageMs(first, last, replicas, first_unit, stage_index, num_stages);
    const int pick = h == kInf ? 0 : static_cast<int>(h) % 3;
    return pick == 0 ? kInf : pick == 1 ? limit_ms : ms;
  }
  double BoundaryMs(int last_of_left, int boundary_unit) const override {
    return costs_.BoundaryMs(last_of_left, boundary_unit);
  }
  bool StageMsGrowsWithLayers() const override { return costs_.StageMsGrowsWithLayers(); }

 private:
  const PartitionCosts& costs_;
  HashedCosts hashed_;
};

// ---- Seeded random instances against the brute force ----

struct RandomShape {
  bool two_level = false;      // units_per_node 2 or 4, else >= units
  bool integer_costs = false;  // small integers: many exact ties
};

struct Tally {
  int instances = 0;
  int replicated_runs = 0;
  int infeasible = 0;  // replicated runs with no feasible partition
  int above_runs = 0;  // PartitionUniformAbove runs (three per instance)
  int kept = 0;        // of which the lower costs' partition was the answer
};

int Uniform(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

double Value(std::mt19937& rng, const RandomShape& shape, double scale) {
  if (shape.integer_costs) return Uniform(rng, 0, 4) * scale;
  return std::uniform_real_distribution<double>(0.0, 4.0)(rng) * scale;
}

TablePartitionCosts RandomCosts(std::mt19937& rng, int num_layers, int units, int num_stages,
                                const RandomShape& shape) {
  std::vector<LayerCosts> layers;
  double demand_bytes = 0;  // the whole chain as one stage with num_stages micro-batches
  for (int l = 0; l < num_layers; ++l) {
    LayerCosts layer{.compute_ms = 0.5 + Value(rng, shape, 1.0),
                     .param_bytes = Value(rng, shape, 2.5e6),
                     .activation_bytes = Value(rng, shape, 1e6),
                     .memory_bytes = Value(rng, shape, 1e6)};
    demand_bytes += layer.memory_bytes + layer.activation_bytes * num_stages;
    layers.push_back(layer);
  }
  NetworkCosts network{
      .units_per_node = shape.two_level ? 2 * Uniform(rng, 1, 2) : units + Uniform(rng, 0, 3),
      .intra_gbps = 4.0,
      .inter_gbps = 1.0};
  double limit_bytes = Uniform(rng, 0, 3) == 0
                           ? kInf
                           : demand_bytes * std::uniform_real_distribution<double>(0.2, 1.0)(rng);
  return TablePartitionCosts(layers, network, limit_bytes);
}

// Layers split as evenly as they go, `replicas` per stage: a layout whose BottleneckOf bounds
// the optimum.
std::vector<Stage> EvenStages(int num_layers, int num_stages, int replicas) {
  std::vector<Stage> stages;
  for (int s = 0; s < num_stages; ++s) {
    stages.push_back({s * num_layers / num_stages, (s + 1) * num_layers / num_stages - 1, replicas,
                      s * replicas});
  }
  return stages;
}

// PartitionUniform with a bound gives the unbounded result exactly, whatever the bound: the
// optimum itself, a layout's bottleneck, a bound below the optimum, zero, +inf.
void ExpectBoundsKeepTheResult(const PartitionCosts& costs, int num_stages, int replicas) {
  const Partition exact = PartitionUniform(costs, num_stages, replicas);
  const double even = num_stages <= costs.NumLayers()
                          ? BottleneckOf(costs, EvenStages(costs.NumLayers(), num_stages, replicas))
                          : kInf;
  if (exact.feasible()) {
    EXPECT_EQ(BottleneckOf(costs, exact.stages), exact.bottleneck_ms);
    EXPECT_LE(exact.bottleneck_ms, even);
  }
  for (double bound : {exact.bottleneck_ms, even, exact.bottleneck_ms / 2, 0.0, kInf}) {
    EXPECT_EQ(PartitionUniform(costs, num_stages, replicas, bound), exact)
        << "bound " << bound << ", exact " << exact.ToString();
  }
}

// PartitionUniformAbove under costs raised from `costs` gives their DP's result, and the brute
// force's optimum. Counts in `kept` the runs where the lower costs' partition was the answer.
void ExpectAboveKeepsTheResult(const PartitionCosts& costs, int num_stages, int replicas,
                               std::uint64_t seed, int* kept) {
  const Partition below = PartitionUniform(costs, num_stages, replicas);
  for (int rarity : {2, 6, 30}) {
    const RaisedCosts raised(costs, rarity, seed);
    const Partition exact = PartitionUniform(raised, num_stages, replicas);
    const Partition above = PartitionUniformAbove(raised, below, num_stages, replicas);
    EXPECT_EQ(above, exact) << "rarity " << rarity << ", below " << below.ToString();
    ExpectSameOptimum(raised, above,
                      BruteForcePartition(raised, num_stages, num_stages * replicas, {replicas}),
                      num_stages, num_stages * replicas);
    if (below.feasible() && above == below) ++*kept;
  }
}

// Uniform replication (`replicas` per stage) and per-stage replication from {1..U} and from
// the powers of two, each against the brute force; uniform replication also with bounds.
void CheckVariants(const PartitionCosts& costs, int num_stages, int units, int replicas,
                   Tally& tally) {
  ExpectSameOptimum(costs, PartitionUniform(costs, num_stages, replicas),
                    BruteForcePartition(costs, num_stages, num_stages * replicas, {replicas}),
                    num_stages, num_stages * replicas);
  ExpectBoundsKeepTheResult(costs, num_stages, replicas);
  for (const std::vector<int>& allowed : {OneTo(units), PowersOfTwoUpTo(units)}) {
    Partition bf = BruteForcePartition(costs, num_stages, units, allowed);
    ExpectSameOptimum(costs, PartitionReplicated(costs, num_stages, units, allowed), bf, num_stages,
                      units);
    tally.infeasible += bf.feasible() ? 0 : 1;
    ++tally.replicated_runs;
  }
}

// A table-cost instance, solved with and without the StageMsGrowsWithLayers pruning.
void CheckRandomInstance(std::uint32_t seed, const RandomShape& shape, Tally& tally) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  int num_layers = Uniform(rng, 1, 10);
  int units = Uniform(rng, 1, 16);
  int num_stages = Uniform(rng, 1, std::min(num_layers, units));
  TablePartitionCosts costs = RandomCosts(rng, num_layers, units, num_stages, shape);
  int replicas = Uniform(rng, 1, units / num_stages);
  // Replica counts fixed per stage (trident plan --replicas): any vector summing to the units.
  std::vector<int> fixed(static_cast<std::size_t>(num_stages), 1);
  for (int extra = units - num_stages; extra > 0; --extra) ++fixed[Uniform(rng, 0, num_stages - 1)];
  ExpectSameOptimum(costs, PartitionWithReplicas(costs, fixed),
                    BruteForceWithReplicas(costs, fixed), num_stages, units);
  CheckVariants(costs, num_stages, units, replicas, tally);
  CheckVariants(ExhaustiveScan(costs), num_stages, units, replicas, tally);
  // Costs that skip work at or above the DP's limit (StageMsBelow) give the same partitions.
  const LooseAboveLimit loose(costs, seed);
  CheckVariants(loose, num_stages, units, replicas, tally);
  CheckVariants(LooseAboveLimit(ExhaustiveScan(costs), seed), num_stages, units, replicas, tally);
  ExpectAboveKeepsTheResult(loose, num_stages, replicas, seed, &tally.kept);
  tally.above_runs += 3;
  ExpectAboveKeepsTheResult(costs, num_stages, replicas, seed, &tally.kept);
  tally.above_runs += 3;
  ++tally.instances;
}

Tally CheckRandomInstances(std::uint32_t first_seed, int count, const RandomShape& shape) {
  Tally tally;
  for (int n = 0; n < count; ++n) {
    CheckRandomInstance(first_seed + static_cast<std::uint32_t>(n), shape, tally);
    if (testing::Test::HasFatalFailure()) break;
  }
  // Both outcomes must be exercised: some runs infeasible, most not.
  EXPECT_GT(tally.infeasible, tally.replicated_runs / 10);
  EXPECT_LT(tally.infeasible, tally.replicated_runs / 2);
  // Both outcomes of PartitionUniformAbove: the lower partition kept, and the DP run.
  EXPECT_GT(tally.kept, tally.above_runs / 10);
  EXPECT_LT(tally.kept, tally.above_runs * 9 / 10);
  return tally;
}

// 4 x 600 = 2,400 table-cost instances (+ 400 hashed below), each checked for uniform, {1..U}
// and powers-of-two replication, with and without pruning, with exact and loose StageMsBelow.
TEST(PartitionRandom, OneLevelNetworkMatchesBruteForce) {
  EXPECT_EQ(CheckRandomInstances(1000, 600, {.two_level = false}).instances, 600);
}

TEST(PartitionRandom, TwoLevelNetworkMatchesBruteForce) {
  EXPECT_EQ(CheckRandomInstances(2000, 600, {.two_level = true}).instances, 600);
}

TEST(PartitionRandom, IntegerCostsWithTiesMatchBruteForceOneLevel) {
  RandomShape shape{.two_level = false, .integer_costs = true};
  EXPECT_EQ(CheckRandomInstances(3000, 600, shape).instances, 600);
}

TEST(PartitionRandom, IntegerCostsWithTiesMatchBruteForceTwoLevel) {
  RandomShape shape{.two_level = true, .integer_costs = true};
  EXPECT_EQ(CheckRandomInstances(4000, 600, shape).instances, 600);
}

// Arbitrary costs: the exhaustive scan is exact without any structure in the costs.
TEST(PartitionRandom, HashedCostsMatchBruteForce) {
  Tally tally;
  for (std::uint32_t seed = 5000; seed < 5400; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    int num_layers = Uniform(rng, 1, 8);
    int units = Uniform(rng, 1, 12);
    int num_stages = Uniform(rng, 1, std::min(num_layers, units));
    const HashedCosts hashed(num_layers, seed);
    const int replicas = Uniform(rng, 1, units / num_stages);
    CheckVariants(hashed, num_stages, units, replicas, tally);
    CheckVariants(LooseAboveLimit(hashed, seed + 1), num_stages, units, replicas, tally);
    ++tally.instances;
  }
  EXPECT_GT(tally.infeasible, 0);
  EXPECT_EQ(tally.instances, 400);
}

// ---- Hand-picked tables with known optima ----

TEST(PartitionTable, FourEqualLayersOnTwoStagesCutInTheMiddle) {
  TablePartitionCosts costs = ComputeOnly({1, 1, 1, 1});
  Partition p = PartitionUniform(costs, 2, 1);
  EXPECT_EQ(p.stages, (std::vector<Stage>{{0, 1, 1, 0}, {2, 3, 1, 1}}));
  EXPECT_EQ(p.bottleneck_ms, 2.0);
  EXPECT_EQ(p.ToString(), "[0-1]x1@0 [2-3]x1@1 bottleneck 2 ms");
}

TEST(PartitionTable, HeavyLayerGetsItsOwnStage) {
  TablePartitionCosts costs = ComputeOnly({1, 1, 8, 1, 1});
  Partition p = PartitionUniform(costs, 3, 2);
  EXPECT_EQ(p.stages, (std::vector<Stage>{{0, 1, 2, 0}, {2, 2, 2, 2}, {3, 4, 2, 4}}));
  EXPECT_EQ(p.bottleneck_ms, 4.0);
}

TEST(PartitionTable, HeavyLayerGetsMoreReplicas) {
  TablePartitionCosts costs = ComputeOnly({2, 8, 2});
  Partition p = PartitionReplicated(costs, 3, 6, OneTo(6));
  EXPECT_EQ(p.stages, (std::vector<Stage>{{0, 0, 1, 0}, {1, 1, 4, 1}, {2, 2, 1, 5}}));
  EXPECT_EQ(p.bottleneck_ms, 2.0);
}

// The worked example in partition.cc: 4, 2, 2 ms, 3 units, 1 ms boundaries.
TEST(PartitionTable, WorkedExampleFromTheRecurrenceComment) {
  std::vector<LayerCosts> layers;
  for (double ms : {4.0, 2.0, 2.0}) {
    layers.push_back(LayerCosts{.compute_ms = ms, .activation_bytes = 1e6});
  }
  TablePartitionCosts costs(layers, NetworkCosts{.intra_gbps = 1, .inter_gbps = 1});
  Partition p = PartitionReplicated(costs, 2, 3, {1, 2});
  EXPECT_EQ(p.stages, (std::vector<Stage>{{0, 1, 2, 0}, {2, 2, 1, 2}}));
  EXPECT_EQ(p.bottleneck_ms, 3.0);
}

// Two layers of 6 ms on 4 units; the activation costs 0.1 ms inside a node, 10 ms across.
TEST(PartitionTable, TwoLevelNetworkKeepsTheCutInsideANode) {
  std::vector<LayerCosts> layers(2, LayerCosts{.compute_ms = 6, .activation_bytes = 1e7});
  NetworkCosts one_level{.units_per_node = 4, .intra_gbps = 100, .inter_gbps = 1};
  Partition flat = PartitionReplicated(TablePartitionCosts(layers, one_level), 2, 4, {1, 2, 3});
  EXPECT_EQ(flat.stages, (std::vector<Stage>{{0, 0, 2, 0}, {1, 1, 2, 2}}));
  EXPECT_EQ(flat.bottleneck_ms, 3.0);

  NetworkCosts two_level = one_level;
  two_level.units_per_node = 2;  // a 2 + 2 split would cut at unit 2, across nodes: 10 ms
  Partition p = PartitionReplicated(TablePartitionCosts(layers, two_level), 2, 4, {1, 2, 3});
  // 3 + 1 and 1 + 3 both give 6 ms; the tie rule gives the last stage the fewest replicas.
  EXPECT_EQ(p.stages, (std::vector<Stage>{{0, 0, 3, 0}, {1, 1, 1, 3}}));
  EXPECT_EQ(p.bottleneck_ms, 6.0);
}

// Under 1F1B stage 0 of 2 holds 2 micro-batches, stage 1 holds 1.
TEST(PartitionTable, MemoryPushesLayersToTheLastStage) {
  std::vector<LayerCosts> layers;
  for (double ms : {1.0, 1.0, 3.0}) {
    layers.push_back(LayerCosts{.compute_ms = ms, .activation_bytes = 1, .memory_bytes = 1});
  }
  Partition free = PartitionUniform(TablePartitionCosts(layers, NetworkCosts{}), 2, 1);
  EXPECT_EQ(free.stages, (std::vector<Stage>{{0, 1, 1, 0}, {2, 2, 1, 1}}));
  // 4.5 bytes: stage 0 fits one layer (1 + 2 * 1), stage 1 two (2 + 1 * 2).
  Partition tight = PartitionUniform(TablePartitionCosts(layers, NetworkCosts{}, 4.5), 2, 1);
  EXPECT_EQ(tight.stages, (std::vector<Stage>{{0, 0, 1, 0}, {1, 2, 1, 1}}));
  EXPECT_EQ(tight.bottleneck_ms, 4.0);
  Partition none = PartitionUniform(TablePartitionCosts(layers, NetworkCosts{}, 2.5), 2, 1);
  EXPECT_FALSE(none.feasible());
  EXPECT_EQ(none.bottleneck_ms, kInf);
  EXPECT_EQ(none.ToString(), "infeasible");
}

// ---- Edge cases ----

TEST(PartitionEdge, OneStageTakesEverything) {
  TablePartitionCosts costs = ComputeOnly({1, 2, 3});
  Partition uniform = PartitionUniform(costs, 1, 2);
  EXPECT_EQ(uniform.stages, (std::vector<Stage>{{0, 2, 2, 0}}));
  EXPECT_EQ(uniform.bottleneck_ms, 3.0);
  Partition replicated = PartitionReplicated(costs, 1, 3, OneTo(3));
  EXPECT_EQ(replicated.stages, (std::vector<Stage>{{0, 2, 3, 0}}));
  EXPECT_EQ(replicated.bottleneck_ms, 2.0);
  EXPECT_FALSE(PartitionReplicated(costs, 1, 3, PowersOfTwoUpTo(3)).feasible());  // 3 is no power
}

TEST(PartitionEdge, AsManyStagesAsLayers) {
  TablePartitionCosts costs = ComputeOnly({1, 2, 3});
  Partition p = PartitionUniform(costs, 3, 1);
  EXPECT_EQ(p.stages, (std::vector<Stage>{{0, 0, 1, 0}, {1, 1, 1, 1}, {2, 2, 1, 2}}));
  EXPECT_EQ(p.bottleneck_ms, 3.0);
}

TEST(PartitionEdge, MoreStagesThanLayersIsInfeasible) {
  TablePartitionCosts costs = ComputeOnly({1, 2});
  EXPECT_EQ(PartitionUniform(costs, 3, 1), Partition{});
  EXPECT_EQ(PartitionReplicated(costs, 3, 8, OneTo(8)), Partition{});
}

TEST(PartitionEdge, FewerUnitsThanStagesIsInfeasible) {
  TablePartitionCosts costs = ComputeOnly({1, 2, 3, 4});
  EXPECT_FALSE(PartitionReplicated(costs, 3, 2, OneTo(2)).feasible());
  EXPECT_FALSE(PartitionReplicated(costs, 1, 0, OneTo(2)).feasible());
  EXPECT_FALSE(PartitionReplicated(costs, 2, 4, {}).feasible());
  EXPECT_FALSE(PartitionReplicated(costs, 2, 4, {3}).feasible());  // 3 + 3 != 4
}

// The memo is indexed by the unit counts in use (here 0, 4096, ..., 8 * 4096), not by units.
TEST(PartitionEdge, UniformWithManyReplicasPerStage) {
  TablePartitionCosts costs = ComputeOnly({1, 1, 1, 1, 1, 1, 1, 1, 4096});
  Partition p = PartitionUniform(costs, 2, 4096);
  EXPECT_EQ(p.stages, (std::vector<Stage>{{0, 7, 4096, 0}, {8, 8, 4096, 4096}}));
  EXPECT_EQ(p.bottleneck_ms, 1.0);
}

TEST(PartitionEdge, AllowedReplicasMayBeUnsortedWithDuplicates) {
  TablePartitionCosts costs = ComputeOnly({5, 1, 1, 1});
  EXPECT_EQ(PartitionReplicated(costs, 2, 6, {4, 1, 1, 2, 16}),
            PartitionReplicated(costs, 2, 6, {1, 2, 4}));
}

// The size the outer search asks for; replication per stage can only beat the uniform layout.
TEST(PartitionLarge, HundredLayersOnSixtyFourUnits) {
  std::mt19937 rng(7);
  TablePartitionCosts costs = RandomCosts(rng, 100, 64, 16, RandomShape{.two_level = true});
  Partition uniform = PartitionUniform(costs, 16, 4);
  Partition replicated = PartitionReplicated(costs, 16, 64, OneTo(64));
  ASSERT_TRUE(replicated.feasible());
  EXPECT_TRUE(IsWellFormed(replicated, 100, 16, 64));
  EXPECT_EQ(EvaluateBottleneckMs(costs, replicated.stages), replicated.bottleneck_ms);
  EXPECT_LE(replicated.bottleneck_ms, uniform.bottleneck_ms);
}

TEST(PartitionLarge, PruningKeepsTheExactAnswer) {
  std::mt19937 rng(8);
  TablePartitionCosts costs = RandomCosts(rng, 40, 24, 6, RandomShape{.two_level = true});
  for (int num_stages : {2, 6}) {
    Partition pruned = PartitionReplicated(costs, num_stages, 24, OneTo(24));
    ASSERT_TRUE(pruned.feasible());
    EXPECT_EQ(pruned, PartitionReplicated(ExhaustiveScan(costs), num_stages, 24, OneTo(24)));
  }
}

}  // namespace
}  // namespace trident
