#include "tests/launcher/megatron_plans.h"

#include <gtest/gtest.h>

namespace trident::testing {

ModelSpec Gpt(int blocks) {
  ModelSpec m;
  m.name = "gpt-test";
  m.vocab_size = 50257;
  m.max_seq_len = 2048;
  m.hidden = 2048;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn_hidden = 8192;
  m.tied_embeddings = true;
  m.layers = {{LayerKind::kEmbedding, 1},
              {LayerKind::kGptBlock, blocks},
              {LayerKind::kFinalNorm, 1},
              {LayerKind::kLmHead, 1}};
  return m;
}

ModelSpec Llama(int blocks) {
  ModelSpec m = Gpt(blocks);
  m.name = "llama-test";
  m.vocab_size = 128256;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.norm = NormKind::kRmsNorm;
  m.positions = PositionKind::kRope;
  m.tied_embeddings = false;
  m.norm_eps = 1e-5;
  m.rope_theta = 500000;
  m.layers[1].kind = LayerKind::kLlamaBlock;
  return m;
}

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

}  // namespace trident::testing
