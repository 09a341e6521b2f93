#include "tests/core/test_values.h"

namespace trident::testing {

ModelSpec TinyGpt() {
  ModelSpec m;
  m.name = "tiny";
  m.vocab_size = 256;
  m.max_seq_len = 64;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 256;
  m.tied_embeddings = true;
  m.dropout = 0.1;
  m.layers = {{LayerKind::kEmbedding, 1},
              {LayerKind::kGptBlock, 2},
              {LayerKind::kFinalNorm, 1},
              {LayerKind::kLmHead, 1}};
  return m;
}

ClusterSpec TwoNodes() {
  ClusterSpec c;
  c.name = "two-nodes";
  c.nodes = 2;
  c.devices_per_node = 4;
  c.device = {
      "Test GPU", DeviceKind::kGpu, 80, {{DType::kFp32, 19.5}, {DType::kBf16, 312}}, 2039, {}, {}};
  c.intra_node = {300, 2.5, 1};
  c.inter_node = {25, 5, 1};
  c.measured = {{Collective::kAllReduce, LinkClass::kInterNode, 2, 7.25, 23.5}};
  return c;
}

Profile TinyProfile() {
  Profile p;
  p.model = "tiny";
  p.num_layers = 5;
  p.seq_len = 64;
  p.device = "test cpu (1 thread)";
  p.build = "trident 0.1.0";
  p.date = "2026-11-21T00:00:00Z";
  p.method = {ProfileSource::kMeasured, 3, 20, 1.25};
  ProfileEntry e{1,   1,    false, 1,    0.125, 0.25,  0.1875, 0.0625, 0.125,
                 2.5, 4096, 4096,  8192, 16384, 65536, 32768,  16384,  1024};
  ProfileEntry context = e;  // cp 2: written with its key, read back
  context.cp = 2;
  p.layers = {{0, 1, LayerKind::kEmbedding, {e}},
              {1, 2, LayerKind::kGptBlock, {e, ProfileEntry{e.micro_batch * 2, 2}, context}},
              {3, 1, LayerKind::kFinalNorm, {e}},
              {4, 1, LayerKind::kLmHead, {e}}};
  return p;
}

Plan TinyPlan() {
  Plan p;
  p.model = TinyGpt();
  p.cluster = "local-cpu";
  p.devices = 4;
  p.devices_per_node = 4;
  p.mesh = {2, 2, 1};
  p.micro_batch_size = 2;
  p.num_micro_batches = 8;
  p.global_batch = 16;
  p.seq_len = 32;
  p.schedule = ScheduleKind::k1F1B;
  p.stages = {{0, 2, 2, RecomputeMode::kNone, 1.5, 1 << 20},
              {2, 3, 2, RecomputeMode::kFull, 1.25, 1 << 21}};
  p.predicted = {12.5, 40960, 0.2, 1 << 21};
  p.provenance = {"trident 0.1.0", "", ""};
  return p;
}

}  // namespace trident::testing
