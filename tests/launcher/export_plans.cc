#include "tests/launcher/export_plans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/file_util.h"

namespace trident::testing {

namespace {

// The preset `name` with `blocks` transformer blocks.
ModelSpec Preset(const std::string& name, int blocks) {
  StatusOr<ModelSpec> model = LoadModelSpec(TRIDENT_SOURCE_DIR "/configs/models/" + name + ".yaml");
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  model->layers[1].repeat = blocks;
  return *model;
}

}  // namespace

ModelSpec Gpt(int blocks) { return Preset("gpt3-1.3b", blocks); }

ModelSpec Llama(int blocks) { return Preset("llama3-8b", blocks); }

Plan MakePlan(const ModelSpec& model, int tp, int dp, std::vector<int> blocks, int v,
              ScheduleKind schedule) {
  Plan p;
  p.model = model;
  p.cluster = "test";
  const int stages = static_cast<int>(blocks.size());
  p.mesh = {dp, stages / v, tp};
  p.devices = dp * tp * (stages / v);
  p.devices_per_node = 8;
  p.virtual_stages = v;
  p.micro_batch_size = 1;
  p.num_micro_batches = 4 * dp * (stages / v);
  p.global_batch = p.num_micro_batches;
  p.seq_len = 2048;
  p.dtype = DType::kBf16;
  p.schedule = schedule;
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    const int layers = blocks[s] + (s == 0) + 2 * (s == stages - 1);
    p.stages.push_back({first, layers, dp, RecomputeMode::kNone, 10.0, 1 << 30});
    first += layers;
  }
  p.predicted = {1234.5, 1e6, 0.1, int64_t{60} << 30};
  p.provenance = {"test", "", ""};
  EXPECT_FALSE(p.Check().has_value()) << FormatFieldError(*p.Check());
  return p;
}

Plan WithContextParallel(Plan plan, int cp) {
  plan.mesh.cp = cp;
  plan.devices *= cp;
  EXPECT_FALSE(plan.Check().has_value()) << FormatFieldError(*plan.Check());
  return plan;
}

Plan Sharded(Plan plan, DpSharding level, int dp_shard) {
  plan.dp_sharding = level;
  plan.dp_shard = dp_shard;
  EXPECT_FALSE(plan.Check().has_value()) << FormatFieldError(*plan.Check());
  return plan;
}

std::vector<std::string> KeyPaths(const std::vector<FieldError>& errors) {
  std::vector<std::string> paths;
  for (const FieldError& e : errors) paths.push_back(e.key_path);
  return paths;
}

Plan AsImported(Plan plan) {
  plan.model.dtype = plan.dtype;
  plan.devices_per_node = std::min(plan.devices, plan.devices_per_node);
  plan.predicted = {};
  plan.provenance = {};
  for (PlanStage& s : plan.stages) s.predicted_time_ms = 0, s.predicted_memory_bytes = 0;
  return plan;
}

std::vector<int> StageLayerCounts(const Plan& plan) {
  std::vector<int> counts;
  for (const PlanStage& s : plan.stages) counts.push_back(s.num_layers);
  return counts;
}

std::vector<int> StageFirstLayers(const Plan& plan) {
  std::vector<int> firsts;
  for (const PlanStage& s : plan.stages) firsts.push_back(s.first_layer);
  return firsts;
}

void ExpectGolden(const std::string& path, const std::string& text) {
  if (std::getenv("TRIDENT_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(WriteFileAtomic(path, text).ok()) << path;
  }
  StatusOr<std::string> expected = ReadFile(path);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  EXPECT_EQ(text, *expected) << path << ": regenerate with TRIDENT_UPDATE_GOLDEN=1";
}

}  // namespace trident::testing
