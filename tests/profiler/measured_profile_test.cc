#include "profiler/measured_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "models/layer_cost.h"
#include "runtime/comm/inprocess_comm.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ModelSpec LoadPreset(const std::string& name) {
  StatusOr<ModelSpec> model = LoadModelSpec(TRIDENT_SOURCE_DIR "/configs/models/" + name + ".yaml");
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return *model;
}

// Short measurements: the tests check what is measured, not how fast.
MeasuredProfileOptions QuickOptions() {
  MeasuredProfileOptions options;
  options.micro_batches = {1, 2};
  options.seq_len = 16;
  options.repeats.min_repeats = 2;
  options.repeats.max_repeats = 3;
  options.repeats.budget_ms = 200;
  return options;
}

Profile Measure(const ModelSpec& model, const MeasuredProfileOptions& options) {
  CpuCompute cpu;
  StatusOr<Profile> profile = MeasureProfile(model, options, cpu, nullptr);
  EXPECT_TRUE(profile.ok()) << profile.status().ToString();
  return profile.ok() ? *profile : Profile();
}

LayerCost Analytic(const ModelSpec& model, LayerKind kind, int mb, int64_t seq, int tp = 1,
                   RecomputeMode recompute = RecomputeMode::kNone) {
  return AnalyticLayerCost(model, kind, {mb, seq, tp, DType::kFp32, recompute});
}

TEST(RepeatPolicy, QuantilesInterpolateAndSpreadIsRelativeToTheMedian) {
  std::vector<double> samples = {11.0, 10.0, 10.4, 10.2};
  EXPECT_DOUBLE_EQ(Median(samples), 10.3);
  EXPECT_NEAR(Quantile(samples, 0.1), 10.06, 1e-12);
  EXPECT_NEAR(Quantile(samples, 0.9), 10.82, 1e-12);
  EXPECT_NEAR(SpreadPct(samples), 0.76 / 10.3 * 100, 1e-9);
  EXPECT_EQ(SpreadPct({5.0}), 0);
}

TEST(RepeatPolicy, StopsOnSpreadBudgetOrCount) {
  RepeatPolicy policy;
  policy.warmup = 1;
  policy.min_repeats = 3;
  policy.max_repeats = 5;
  policy.target_spread_pct = 5;
  policy.budget_ms = 100;
  EXPECT_TRUE(policy.WantsMore({}, 0, 0));
  // Under min_repeats after the warm-up: more, however steady.
  EXPECT_TRUE(policy.WantsMore({9, 1, 1}, 11, 1));
  // Steady after the warm-up (the slow warm-up does not count), but under a quarter of the
  // budget spent: more; past it: stop.
  EXPECT_TRUE(policy.WantsMore({9, 1, 1, 1}, 12, 1));
  EXPECT_FALSE(policy.WantsMore({9, 1, 1, 1}, 25, 1));
  // Noisy: more, until max_repeats after the warm-up.
  EXPECT_TRUE(policy.WantsMore({1, 1, 2, 3}, 30, 1));
  EXPECT_FALSE(policy.WantsMore({1, 1, 2, 3, 1, 2}, 30, 1));
  // The next repeat would overrun the budget: stop, even before min_repeats.
  EXPECT_FALSE(policy.WantsMore({60}, 60, 60));
  // The warm-up is dropped only when other repeats exist.
  EXPECT_EQ(policy.Skipped(1), 0);
  EXPECT_EQ(policy.Skipped(4), 1);
}

TEST(RepeatPolicy, ShareDividesTheBudgetAndTheCountsRoundingUp) {
  const RepeatPolicy policy{.warmup = 2, .min_repeats = 5, .max_repeats = 1000, .budget_ms = 3000};
  RepeatPolicy share = policy.Share(3);
  EXPECT_EQ(share.warmup, 2);
  EXPECT_EQ(share.min_repeats, 2);
  EXPECT_EQ(share.max_repeats, 334);
  EXPECT_DOUBLE_EQ(share.budget_ms, 1000);
  EXPECT_EQ(policy.Share(1).max_repeats, 1000);
}

TEST(RepeatPolicy, ValidateNamesTheFlag) {
  RepeatPolicy policy;
  policy.budget_ms = 0;
  EXPECT_THAT(policy.Validate().message(), HasSubstr("--time-budget-s"));
  policy = RepeatPolicy();
  policy.max_repeats = 0;
  EXPECT_THAT(policy.Validate().message(), HasSubstr("--max-repeats"));
}

TEST(CpuModelName, ReadsTheFirstModelName) {
  EXPECT_EQ(CpuModelName("processor\t: 0\nmodel name\t: AMD EPYC 7B13  \nflags\t: fpu\n"
                         "model name\t: other\n"),
            "AMD EPYC 7B13");
  EXPECT_EQ(CpuModelName("processor : 0\n"), "");
  EXPECT_FALSE(ThisCpuModelName().empty());
}

// The driver's file as it reads on an H100 machine (its first lines).
TEST(GpuModelName, ReadsTheDriversModelLine) {
  EXPECT_EQ(GpuModelName("Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 35\n"
                         "GPU UUID: \t GPU-5f0e\n"),
            "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(GpuModelName("IRQ: 35\n"), "");
  for (const std::string& model : ThisGpuModels()) EXPECT_FALSE(model.empty());
}

TEST(MeasuredProfile, CoversEveryLayerOnceAndIdenticalBlocksShareOneEntry) {
  ModelSpec model = LoadPreset("gpt-tiny");
  Profile profile = Measure(model, QuickOptions());
  ASSERT_TRUE(profile.Validate().ok()) << profile.Validate().ToString();
  EXPECT_EQ(profile.method.source, ProfileSource::kMeasured);
  EXPECT_EQ(profile.seq_len, 16);
  EXPECT_EQ(profile.threads, 1);
  EXPECT_THAT(profile.device, HasSubstr("(1 thread)"));
  ASSERT_EQ(profile.layers.size(), model.layers.size());
  const LayerProfile& blocks = profile.layers[1];
  EXPECT_EQ(blocks.kind, LayerKind::kGptBlock);
  EXPECT_EQ(blocks.first_layer, 1);
  EXPECT_EQ(blocks.num_layers, 2);
  EXPECT_EQ(blocks.entries.size(), 2u);  // one per micro-batch, for both blocks
  for (int layer = 0; layer < model.NumLayers(); ++layer) {
    for (int mb : {1, 2})
      EXPECT_NE(profile.Find(layer, mb, 1, false, 1), nullptr) << layer << " " << mb;
    EXPECT_EQ(profile.Find(layer, 4, 1, false, 1), nullptr);
  }
}

// "2gpt_block 4": a turn's pass, layer kind and micro-batch size.
std::string TurnName(const MeasureProgress& p) {
  return std::to_string(p.pass) + NameOf(LayerKindNames(), p.kind) + " " +
         std::to_string(p.micro_batch);
}

// Every pass measures every layer and micro-batch once; the figures count every pass's
// samples, and each time is its quietest pass's: three passes of one timed repeat each give
// three samples, and a time never rises from one pass to the next.
TEST(MeasuredProfile, PassesTakeTurnsAndKeepTheQuietest) {
  MeasuredProfileOptions options = QuickOptions();
  options.repeats.max_repeats = 3;
  options.repeats.budget_ms = 1e6;
  options.passes = 3;
  std::vector<std::string> turns;
  std::map<std::string, ProfileEntry> before;  // by layer kind and size: the previous pass's
  MeasureProgressFn progress = [&](const MeasureProgress& p) {
    EXPECT_EQ(p.total, 4 * 2 * 3);  // 4 kinds, 2 micro-batch sizes, 3 passes
    if (p.result == nullptr) return;
    EXPECT_EQ(p.result->repeats, p.pass) << "counted over the passes so far";
    turns.push_back(TurnName(p));
    const ProfileEntry& now = p.result->entry;
    const std::string key = turns.back().substr(1);
    if (p.pass == 1) {
      EXPECT_NEAR(p.result->load, 1, 1e-3) << key << ": one sample is its own quietest";
    } else {
      EXPECT_LE(now.fwd_ms, before[key].fwd_ms) << turns.back();
      EXPECT_LE(now.bwd_input_ms, before[key].bwd_input_ms) << turns.back();
      EXPECT_LE(now.bwd_weight_ms, before[key].bwd_weight_ms) << turns.back();
      EXPECT_GE(p.result->load, 1) << turns.back();
    }
    before[key] = now;
  };
  CpuCompute cpu;
  StatusOr<Profile> profile =
      MeasureProfile(LoadPreset("gpt-tiny"), options, cpu, nullptr, progress);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  EXPECT_EQ(profile->method.repeats, 3);
  EXPECT_GE(profile->method.load_factor, 1);
  ASSERT_EQ(turns.size(), 24u);
  EXPECT_EQ(turns[0], "1embedding 1");
  EXPECT_EQ(turns[1], "1embedding 2");
  EXPECT_EQ(turns[8], "2embedding 1");
  options.passes = 0;
  EXPECT_THAT(CheckMeasuredOptions(LoadPreset("gpt-tiny"), options, 1).message(),
              HasSubstr("--passes 0"));
}

// A size whose one repeat outlasts its share of the budget gets one repeat a turn (the
// warm-up is its sample) in every pass, sizes ascending: its times are the quietest pass's.
TEST(MeasuredProfile, SlowSizesTakeOneRepeatInEveryPass) {
  MeasuredProfileOptions options = QuickOptions();
  options.micro_batches = {4, 1, 2};
  options.repeats.budget_ms = 1e-3;
  options.passes = 2;
  std::vector<std::string> turns;
  MeasureProgress last;
  MeasureProgressFn progress = [&](const MeasureProgress& p) {
    last = p;
    if (p.result == nullptr) return;
    EXPECT_EQ(p.result->repeats, p.pass);
    turns.push_back(TurnName(p));
  };
  CpuCompute cpu;
  StatusOr<Profile> profile =
      MeasureProfile(LoadPreset("gpt-tiny"), options, cpu, nullptr, progress);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  ASSERT_EQ(turns.size(), 24u);
  EXPECT_THAT(std::vector<std::string>(turns.begin(), turns.begin() + 4),
              ElementsAre("1embedding 1", "1embedding 2", "1embedding 4", "1gpt_block 1"));
  EXPECT_EQ(turns[12], "2embedding 1");
  EXPECT_EQ(last.done, 24);
  EXPECT_EQ(last.total, 24);
  EXPECT_EQ(profile->method.repeats, 2);
}

TEST(MeasuredProfile, ParameterBytesAreTheParameterCountsTimesFour) {
  ModelSpec model = LoadPreset("gpt-tiny");
  Profile profile = Measure(model, QuickOptions());
  ASSERT_FALSE(profile.layers.empty());
  for (const LayerProfile& layer : profile.layers) {
    for (const ProfileEntry& e : layer.entries) {
      LayerCost cost = Analytic(model, layer.kind, e.micro_batch, 16);
      SCOPED_TRACE(NameOf(LayerKindNames(), layer.kind));
      EXPECT_EQ(e.param_bytes, cost.params * 4);
      EXPECT_EQ(e.grad_bytes, cost.params * 4);
      EXPECT_EQ(e.optimizer_bytes, cost.params * 8);  // AdamW: two fp32 moments
      EXPECT_EQ(e.output_bytes, cost.output_bytes);
    }
  }
  EXPECT_GT(profile.layers[0].entries[0].param_bytes, 0);  // the tied table is the embedding's
  EXPECT_EQ(profile.layers.back().entries[0].param_bytes, 0);
}

TEST(MeasuredProfile, RecomputeKeepsLessAndCostsExtraTime) {
  ModelSpec model = LoadPreset("gpt-tiny");
  Profile profile = Measure(model, QuickOptions());
  ASSERT_EQ(profile.layers.size(), 4u);
  for (const ProfileEntry& e : profile.layers[1].entries) {
    EXPECT_LT(e.stashed_full_bytes, e.stashed_selective_bytes);
    EXPECT_LT(e.stashed_selective_bytes, e.stashed_none_bytes);
    // Full recompute keeps the block's input alone; the stash otherwise is the cost model's
    // plus the LayerNorm statistics (16 bytes a token).
    const int64_t tokens = int64_t{e.micro_batch} * 16;
    EXPECT_EQ(e.stashed_full_bytes, tokens * model.hidden * 4);
    LayerCost cost = Analytic(model, LayerKind::kGptBlock, e.micro_batch, 16);
    EXPECT_EQ(e.stashed_none_bytes, cost.stashed_bytes + 16 * tokens);
    EXPECT_GT(e.recompute_full_ms, 0);
    // A fully recomputing backward first rebuilds the whole stash it dropped.
    EXPECT_GE(e.workspace_full_bytes, e.stashed_none_bytes - e.stashed_full_bytes);
    EXPECT_GT(e.workspace_full_bytes, e.workspace_none_bytes);
  }
  for (size_t i : {0u, 2u, 3u}) {
    for (const ProfileEntry& e : profile.layers[i].entries) {
      EXPECT_EQ(e.workspace_full_bytes, e.workspace_none_bytes);
      EXPECT_EQ(e.stashed_selective_bytes, e.stashed_none_bytes);
      EXPECT_EQ(e.stashed_full_bytes, e.stashed_none_bytes);
      EXPECT_EQ(e.recompute_full_ms, 0);
    }
  }
}

TEST(MeasuredProfile, TimesArePositiveWhereTheLayerWorks) {
  ModelSpec model = LoadPreset("gpt-tiny");
  Profile profile = Measure(model, QuickOptions());
  for (const LayerProfile& layer : profile.layers) {
    for (const ProfileEntry& e : layer.entries) {
      SCOPED_TRACE(NameOf(LayerKindNames(), layer.kind));
      EXPECT_GT(e.fwd_ms, 0);
      if (layer.kind != LayerKind::kEmbedding) {
        EXPECT_GT(e.bwd_input_ms, 0);
      }
      if (layer.kind != LayerKind::kFinalNorm) {
        EXPECT_GT(e.bwd_weight_ms, 0);
      }
      EXPECT_GE(e.spread_pct, 0);
      EXPECT_GT(e.workspace_none_bytes, 0);
    }
  }
  // Twice the tokens, more time (a wide margin: the machine may be busy).
  const LayerProfile& blocks = profile.layers[1];
  EXPECT_GT(blocks.entries[1].fwd_ms + blocks.entries[1].bwd_input_ms,
            0.8 * (blocks.entries[0].fwd_ms + blocks.entries[0].bwd_input_ms));
}

TEST(MeasuredProfile, RoundTripsThroughTheFileFormat) {
  Profile profile = Measure(LoadPreset("gpt-tiny"), QuickOptions());
  StatusOr<Profile> parsed = ParseProfile(ProfileToYaml(profile), "measured.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, profile);
}

TEST(MeasuredProfile, MlpBlocksHaveNoSelectiveRecompute) {
  ModelSpec model = LoadPreset("mlp-tiny");
  Profile profile = Measure(model, QuickOptions());
  ASSERT_EQ(profile.layers.size(), 4u);
  const LayerProfile& blocks = profile.layers[1];
  EXPECT_EQ(blocks.num_layers, 4);
  for (const ProfileEntry& e : blocks.entries) {
    EXPECT_EQ(e.stashed_selective_bytes, e.stashed_none_bytes);
    EXPECT_EQ(e.recompute_selective_ms, 0);
    EXPECT_LT(e.stashed_full_bytes, e.stashed_none_bytes);
  }
}

TEST(MeasuredProfile, DropoutModelsAreMeasuredWithoutDropout) {
  ModelSpec model = LoadPreset("gpt-tiny");
  model.dropout = 0.1;
  MeasuredProfileOptions options = QuickOptions();
  options.micro_batches = {1};
  Profile profile = Measure(model, options);
  EXPECT_TRUE(profile.Validate().ok());
}

TEST(MeasuredProfile, ThreadCpuClockIsNamedInTheDevice) {
  MeasuredProfileOptions options = QuickOptions();
  options.micro_batches = {1};
  options.clock = TimingClock::kThreadCpu;
  Profile profile = Measure(LoadPreset("gpt-tiny"), options);
  EXPECT_THAT(profile.device, HasSubstr("thread CPU time"));
  EXPECT_GT(profile.layers[1].entries[0].fwd_ms, 0);
}

// Two in-process ranks time the tp 2 shards together, and the tp 1 layers side by side: the
// same samples on both ranks (the slowest of the job), the memory of a half.
TEST(MeasuredProfile, TensorParallelShardsAreTimedAsAGroup) {
  ModelSpec model = LoadPreset("gpt-tiny");
  MeasuredProfileOptions options = QuickOptions();
  options.micro_batches = {1};
  options.tps = {1, 2};
  std::vector<Profile> profiles(2);
  std::mutex mu;
  Status status = RunInProcess(2, [&](Comm& world) -> Status {
    CpuCompute cpu;
    TRIDENT_ASSIGN_OR_RETURN(Profile p, MeasureProfile(model, options, cpu, &world));
    std::lock_guard<std::mutex> lock(mu);
    profiles[static_cast<size_t>(world.Rank())] = std::move(p);
    return Status::Ok();
  });
  ASSERT_TRUE(status.ok()) << status.ToString();
  const Profile& p = profiles[0];
  ASSERT_TRUE(p.Validate().ok()) << p.Validate().ToString();
  EXPECT_THAT(p.device, HasSubstr("2 ranks"));
  const ProfileEntry* block = p.Find(1, 1, 2, false, 1);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->param_bytes, Analytic(model, LayerKind::kGptBlock, 1, 16, 2).params * 4);
  EXPECT_LT(block->stashed_none_bytes, p.Find(1, 1, 1, false, 1)->stashed_none_bytes);
  for (size_t i = 0; i < p.layers.size(); ++i) {
    for (size_t j = 0; j < p.layers[i].entries.size(); ++j) {
      const ProfileEntry& mine = p.layers[i].entries[j];
      EXPECT_EQ(mine, profiles[1].layers[i].entries[j]) << "layer group " << i << ", entry " << j;
    }
  }
}

TEST(MeasuredProfile, OptionsAreCheckedWithTheFlagAndTheFix) {
  ModelSpec model = LoadPreset("gpt-tiny");  // 4 heads, max_seq_len 64
  MeasuredProfileOptions options;
  options.tps = {3};
  EXPECT_THAT(CheckMeasuredOptions(model, options, 3).message(), HasSubstr("--tp 3"));
  options.tps = {2};
  EXPECT_THAT(CheckMeasuredOptions(model, options, 1).message(), HasSubstr("mpirun -np 2"));
  EXPECT_THAT(CheckMeasuredOptions(model, options, 3).message(), HasSubstr("multiple of 2"));
  EXPECT_TRUE(CheckMeasuredOptions(model, options, 2).ok());
  options.tps = {1};
  options.seq_len = 65;
  EXPECT_THAT(CheckMeasuredOptions(model, options, 1).message(), HasSubstr("--seq 65"));
  options.seq_len = 0;
  options.threads = 2;
  options.clock = TimingClock::kThreadCpu;
  EXPECT_THAT(CheckMeasuredOptions(model, options, 1).message(), HasSubstr("--threads 1"));
  CpuCompute cpu;
  StatusOr<Profile> refused = MeasureProfile(model, options, cpu, nullptr);
  EXPECT_FALSE(refused.ok());
}

TEST(MeasuredProfile, MeasurableTpDegreesDivideTheJobAndShardTheModel) {
  ModelSpec model = LoadPreset("gpt-tiny");  // 4 heads, max_seq_len 64
  MeasuredProfileOptions options;
  options.tps = {3};  // ignored
  EXPECT_EQ(MeasurableTpDegrees(model, options, 1), std::vector<int>({1}));
  EXPECT_EQ(MeasurableTpDegrees(model, options, 4), std::vector<int>({1, 2, 4}));
  EXPECT_EQ(MeasurableTpDegrees(model, options, 6), std::vector<int>({1, 2}));
  options.seq_len = 65;
  EXPECT_TRUE(MeasurableTpDegrees(model, options, 2).empty());
}

}  // namespace
}  // namespace trident
