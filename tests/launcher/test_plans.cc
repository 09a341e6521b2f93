#include "tests/launcher/test_plans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/check.h"
#include "core/file_util.h"

namespace trident::testing {

Plan LaunchPlan(int tp, std::vector<int> replicas, int devices_per_node) {
  Plan p;
  p.model.name = "tiny";
  p.model.vocab_size = 256;
  p.model.max_seq_len = 64;
  p.model.hidden = 64;
  p.model.heads = 4;
  p.model.kv_heads = 4;
  p.model.ffn_hidden = 256;
  p.model.tied_embeddings = true;
  p.model.layers = {{LayerKind::kEmbedding, 1},
                    {LayerKind::kGptBlock, 2},
                    {LayerKind::kFinalNorm, 1},
                    {LayerKind::kLmHead, 1}};
  p.cluster = "test";
  int pp = static_cast<int>(replicas.size());
  p.devices = 0;
  for (int r : replicas) p.devices += tp * r;
  p.devices_per_node = devices_per_node;
  p.mesh = {*std::max_element(replicas.begin(), replicas.end()), pp, tp};
  p.micro_batch_size = 1;
  p.num_micro_batches = 8;
  p.global_batch = 8;
  p.seq_len = 32;
  p.schedule = ScheduleKind::k1F1B;
  for (int s = 0; s < pp; ++s) {
    int last = s == pp - 1;
    p.stages.push_back({s, last ? 5 - s : 1, replicas[s], RecomputeMode::kNone, 1.0, 1 << 20});
  }
  p.predicted = {10, 1000, 0.1, 1 << 20};
  p.provenance = {"test", "", ""};
  Status status = p.Validate();
  TRIDENT_CHECK(status.ok()) << status.ToString();
  return p;
}

std::string WritePlanFile(const Plan& plan, const std::string& name) {
  std::string path =
      (std::filesystem::path(::testing::TempDir()) / name).lexically_normal().string();
  Status status = WriteFileAtomic(path, PlanToYaml(plan));
  TRIDENT_CHECK(status.ok()) << status.ToString();
  return path;
}

}  // namespace trident::testing
