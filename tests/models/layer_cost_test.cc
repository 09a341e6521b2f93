// Hand-computed costs of each layer kind at tiny shapes, Korthikanti's activation formula, and
// the tensor-parallel invariants (ranks add up to the whole layer).
#include "models/layer_cost.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <tuple>

#include "tests/models/model_fixtures.h"

namespace trident {
namespace {

// b 2, s 4: 8 tokens; with h 8, bsh = 64 elements.
LayerShape TinyShape(DType dtype, int tp = 1, RecomputeMode recompute = RecomputeMode::kNone) {
  return LayerShape{
      .micro_batch = 2, .seq_len = 4, .tp = tp, .dtype = dtype, .recompute = recompute};
}

TEST(LayerCostTest, TinyModelsAreValid) {
  EXPECT_TRUE(TinyGptSpec().Validate().ok());
  EXPECT_TRUE(TinyLlamaSpec().Validate().ok());
}

// GPT block, h 8, a 2, f 32, b 2, s 4, fp32 (e 4), no dropout, t 1:
//   params   12h² + 13h = 768 + 104 = 872; bytes 4·872 = 3,488
//   linear   2bs·(4h² + 2hf) = 16·(256 + 512) = 12,288
//   attn     4bs²h = 4·2·16·8 = 1,024
//   fwd 12,288 + 1,024 = 13,312; bwd_input 12,288 + 2,048 = 14,336; bwd_weight 12,288
//   stash    replicated 4e·bsh = 1,024; sharded 4e·bsh + 2e·bsf = 1,024 + 2,048;
//            softmax e·abs² = 4·2·2·16 = 256; total 4,352
//   output   e·bsh = 256
TEST(LayerCostTest, GptBlockByHand) {
  LayerCost cost = AnalyticLayerCost(TinyGptSpec(), LayerKind::kGptBlock, TinyShape(DType::kFp32));
  LayerCost expected{.fwd_flops = 13312,
                     .bwd_input_flops = 14336,
                     .bwd_weight_flops = 12288,
                     .recompute_flops = 0,
                     .params = 872,
                     .total_params = 872,
                     .param_bytes = 3488,
                     .output_bytes = 256,
                     .stashed_bytes = 4352,
                     .tp_fwd = {},
                     .tp_bwd = {},
                     .tp_wgrad = {},
                     .cp_fwd = {},
                     .cp_bwd = {}};
  EXPECT_EQ(cost, expected);
}

// The same block with recompute: selective drops the 256 softmax bytes and redoes the 1,024
// attention FLOPs; full keeps the 256-byte input and redoes the 13,312 forward FLOPs.
TEST(LayerCostTest, GptBlockRecomputeByHand) {
  ModelSpec model = TinyGptSpec();
  LayerCost selective = AnalyticLayerCost(model, LayerKind::kGptBlock,
                                          TinyShape(DType::kFp32, 1, RecomputeMode::kSelective));
  EXPECT_EQ(selective.stashed_bytes, 4096);
  EXPECT_EQ(selective.recompute_flops, 1024);
  LayerCost full = AnalyticLayerCost(model, LayerKind::kGptBlock,
                                     TinyShape(DType::kFp32, 1, RecomputeMode::kFull));
  EXPECT_EQ(full.stashed_bytes, 256);
  EXPECT_EQ(full.recompute_flops, 13312);
  EXPECT_EQ(full.fwd_flops, 13312);  // recompute adds work; it does not change the passes
  EXPECT_EQ(full.TotalFlops(), 13312 + 14336 + 12288 + 13312);
}

// GPT block at t 2: params 6h + (4h² + 2hf + 3h + f)/2 = 48 + (256 + 512 + 24 + 32)/2 = 460;
// FLOPs halve; stash 4e·bsh + (4e·bsh + 2e·bsf)/2 + e·abs²/2 = 1,024 + 1,536 + 128 = 2,688;
// 2 + 2 all-reduces of e·bsh = 256 bytes.
TEST(LayerCostTest, GptBlockTensorParallelByHand) {
  LayerCost cost =
      AnalyticLayerCost(TinyGptSpec(), LayerKind::kGptBlock, TinyShape(DType::kFp32, 2));
  LayerCost expected{.fwd_flops = 6656,
                     .bwd_input_flops = 7168,
                     .bwd_weight_flops = 6144,
                     .recompute_flops = 0,
                     .params = 460,
                     .total_params = 872,
                     .param_bytes = 1840,
                     .output_bytes = 256,
                     .stashed_bytes = 2688,
                     .tp_fwd = AllReduces(2, 512),
                     .tp_bwd = AllReduces(2, 512),
                     .tp_wgrad = {},
                     .cp_fwd = {},
                     .cp_bwd = {}};
  EXPECT_EQ(cost, expected);
}

// Llama block, h 8, a 2, kv 1 (kvd 4), f 16, b 2, s 4, bf16 (e 2), t 1:
//   params   2h + 2h² + 2h·kvd + 3hf = 16 + 128 + 64 + 384 = 592; bytes 1,184
//   linear   2bs·(2h² + 2h·kvd + 3hf) = 16·576 = 9,216; attn 4bs²h = 1,024
//   stash    per token 4h + 2h + 2kvd + 3f = 32 + 16 + 8 + 48 = 104 elements;
//            2·8·104 = 1,664 + softmax e·abs² = 2·2·2·16 = 128 -> 1,792
TEST(LayerCostTest, LlamaBlockByHand) {
  LayerCost cost =
      AnalyticLayerCost(TinyLlamaSpec(), LayerKind::kLlamaBlock, TinyShape(DType::kBf16));
  LayerCost expected{.fwd_flops = 10240,
                     .bwd_input_flops = 11264,
                     .bwd_weight_flops = 9216,
                     .recompute_flops = 0,
                     .params = 592,
                     .total_params = 592,
                     .param_bytes = 1184,
                     .output_bytes = 128,
                     .stashed_bytes = 1792,
                     .tp_fwd = {},
                     .tp_bwd = {},
                     .tp_wgrad = {},
                     .cp_fwd = {},
                     .cp_bwd = {}};
  EXPECT_EQ(cost, expected);
  LayerCost selective = AnalyticLayerCost(TinyLlamaSpec(), LayerKind::kLlamaBlock,
                                          TinyShape(DType::kBf16, 1, RecomputeMode::kSelective));
  EXPECT_EQ(selective.stashed_bytes, 1664);
  EXPECT_EQ(selective.recompute_flops, 1024);
}

// llama3-8b block: 218,112,000 parameters; with t 8, 8,192 + 218,103,808/8 = 27,271,168.
TEST(LayerCostTest, Llama3BlockParams) {
  ModelSpec model = Llama3Spec8b();
  LayerShape shape{.micro_batch = 1, .seq_len = 8192, .tp = 8, .dtype = DType::kBf16};
  LayerCost cost = AnalyticLayerCost(model, LayerKind::kLlamaBlock, shape);
  EXPECT_EQ(cost.total_params, 218112000);
  EXPECT_EQ(cost.params, 27271168);
}

// MLP block, h 8, f 32, b 2, s 4, fp32:
//   params   2hf + f + h = 552; t 2: h + (2hf + f)/2 = 8 + 272 = 280
//   FLOPs    4bshf = 4·8·8·32 = 8,192 per pass
//   stash    e·bsh + 2e·bsf = 256 + 2,048 = 2,304; t 2: 256 + 1,024 = 1,280
TEST(LayerCostTest, MlpBlockByHand) {
  ModelSpec model = TinyGptSpec();
  LayerCost cost = AnalyticLayerCost(model, LayerKind::kMlpBlock, TinyShape(DType::kFp32));
  LayerCost expected{.fwd_flops = 8192,
                     .bwd_input_flops = 8192,
                     .bwd_weight_flops = 8192,
                     .recompute_flops = 0,
                     .params = 552,
                     .total_params = 552,
                     .param_bytes = 2208,
                     .output_bytes = 256,
                     .stashed_bytes = 2304,
                     .tp_fwd = {},
                     .tp_bwd = {},
                     .tp_wgrad = {},
                     .cp_fwd = {},
                     .cp_bwd = {}};
  EXPECT_EQ(cost, expected);

  LayerCost tp2 = AnalyticLayerCost(model, LayerKind::kMlpBlock, TinyShape(DType::kFp32, 2));
  EXPECT_EQ(tp2.params, 280);
  EXPECT_EQ(tp2.fwd_flops, 4096);
  EXPECT_EQ(tp2.stashed_bytes, 1280);
  EXPECT_EQ(tp2.tp_fwd.all_reduce, (GroupCalls{1, 256}));
  EXPECT_EQ(tp2.tp_bwd.all_reduce, (GroupCalls{1, 256}));

  // No attention: selective changes nothing; full keeps the 256-byte input.
  EXPECT_EQ(AnalyticLayerCost(model, LayerKind::kMlpBlock,
                              TinyShape(DType::kFp32, 1, RecomputeMode::kSelective)),
            cost);
  LayerCost full = AnalyticLayerCost(model, LayerKind::kMlpBlock,
                                     TinyShape(DType::kFp32, 1, RecomputeMode::kFull));
  EXPECT_EQ(full.stashed_bytes, 256);
  EXPECT_EQ(full.recompute_flops, 8192);
}

// Embedding, V 10, max_seq 6, h 8, learned positions, fp32, b 2, s 4:
//   params 10·8 + 6·8 = 128; no FLOPs; stash 4·b·s = 32 bytes of ids; output e·bsh = 256.
TEST(LayerCostTest, EmbeddingByHand) {
  ModelSpec model = TinyGptSpec();
  LayerCost cost = AnalyticLayerCost(model, LayerKind::kEmbedding, TinyShape(DType::kFp32));
  LayerCost expected{.fwd_flops = 0,
                     .bwd_input_flops = 0,
                     .bwd_weight_flops = 0,
                     .recompute_flops = 0,
                     .params = 128,
                     .total_params = 128,
                     .param_bytes = 512,
                     .output_bytes = 256,
                     .stashed_bytes = 32,
                     .tp_fwd = {},
                     .tp_bwd = {},
                     .tp_wgrad = {},
                     .cp_fwd = {},
                     .cp_bwd = {}};
  EXPECT_EQ(cost, expected);

  model.positions = PositionKind::kRope;  // no position table
  EXPECT_EQ(AnalyticLayerCost(model, LayerKind::kEmbedding, TinyShape(DType::kFp32)).params, 80);
}

// V 11 does not divide over t 2: each rank holds ceil(11/2) = 6 rows, 6·8 + 48 = 96 params of
// 11·8 + 48 = 136; one forward all-reduce of e·bsh = 256 bytes, none backward.
TEST(LayerCostTest, EmbeddingPadsVocabularyOverTensorParallel) {
  ModelSpec model = TinyGptSpec();
  model.vocab_size = 11;
  LayerCost cost = AnalyticLayerCost(model, LayerKind::kEmbedding, TinyShape(DType::kFp32, 2));
  EXPECT_EQ(cost.params, 96);
  EXPECT_EQ(cost.total_params, 136);
  EXPECT_EQ(cost.tp_fwd, AllReduces(1, 256));
  EXPECT_EQ(cost.tp_bwd, GroupTraffic{});
}

// Final norm: LayerNorm 2h = 16 params, RMSNorm h = 8; stash and output e·bsh = 256.
TEST(LayerCostTest, FinalNormByHand) {
  LayerCost layer_norm =
      AnalyticLayerCost(TinyGptSpec(), LayerKind::kFinalNorm, TinyShape(DType::kFp32, 2));
  EXPECT_EQ(layer_norm.params, 16);  // replicated: whole on every rank
  EXPECT_EQ(layer_norm.total_params, 16);
  EXPECT_EQ(layer_norm.stashed_bytes, 256);
  EXPECT_EQ(layer_norm.output_bytes, 256);
  EXPECT_EQ(layer_norm.TotalFlops(), 0);
  EXPECT_EQ(layer_norm.tp_fwd, GroupTraffic{});
  EXPECT_EQ(layer_norm.tp_bwd, GroupTraffic{});
  LayerCost rms_norm =
      AnalyticLayerCost(TinyLlamaSpec(), LayerKind::kFinalNorm, TinyShape(DType::kFp32));
  EXPECT_EQ(rms_norm.params, 8);
}

// LM head, V 10, h 8, fp32, b 2, s 4, untied:
//   params V·h = 80; FLOPs 2bshV = 2·8·8·10 = 1,280 per pass
//   stash e·bsh + e·bsV = 256 + 320 = 576; output the 4-byte loss
TEST(LayerCostTest, LmHeadByHand) {
  LayerCost cost = AnalyticLayerCost(TinyGptSpec(), LayerKind::kLmHead, TinyShape(DType::kFp32));
  LayerCost expected{.fwd_flops = 1280,
                     .bwd_input_flops = 1280,
                     .bwd_weight_flops = 1280,
                     .recompute_flops = 0,
                     .params = 80,
                     .total_params = 80,
                     .param_bytes = 320,
                     .output_bytes = 4,
                     .stashed_bytes = 576,
                     .tp_fwd = {},
                     .tp_bwd = {},
                     .tp_wgrad = {},
                     .cp_fwd = {},
                     .cp_bwd = {}};
  EXPECT_EQ(cost, expected);
}

// At t 2 with V 11: 6 rows per rank -> 48 params; FLOPs 2bshV/t = 1,408/2 = 704 (unpadded);
// stash 256 + e·bs·6 = 256 + 192 = 448; 3 forward all-reduces of 4·bs = 32 bytes and 1
// backward of e·bsh = 256 bytes.
TEST(LayerCostTest, LmHeadTensorParallelByHand) {
  ModelSpec model = TinyGptSpec();
  model.vocab_size = 11;
  LayerCost cost = AnalyticLayerCost(model, LayerKind::kLmHead, TinyShape(DType::kFp32, 2));
  LayerCost expected{.fwd_flops = 704,
                     .bwd_input_flops = 704,
                     .bwd_weight_flops = 704,
                     .recompute_flops = 0,
                     .params = 48,
                     .total_params = 88,
                     .param_bytes = 192,
                     .output_bytes = 4,
                     .stashed_bytes = 448,
                     .tp_fwd = AllReduces(3, 96),
                     .tp_bwd = AllReduces(1, 256),
                     .tp_wgrad = {},
                     .cp_fwd = {},
                     .cp_bwd = {}};
  EXPECT_EQ(cost, expected);
}

TEST(LayerCostTest, TiedLmHeadOwnsNoParameters) {
  ModelSpec model = TinyGptSpec();
  model.tied_embeddings = true;
  LayerCost cost = AnalyticLayerCost(model, LayerKind::kLmHead, TinyShape(DType::kFp32));
  EXPECT_EQ(cost.params, 0);
  EXPECT_EQ(cost.total_params, 0);
  EXPECT_EQ(cost.param_bytes, 0);
  EXPECT_EQ(cost.bwd_weight_flops, 1280);  // the shared matrix still gets its gradient
}

TEST(LayerCostTest, RecomputeDoesNotChangeTheHead) {
  ModelSpec model = TinyGptSpec();
  LayerCost none = AnalyticLayerCost(model, LayerKind::kLmHead, TinyShape(DType::kFp32));
  for (RecomputeMode mode : {RecomputeMode::kSelective, RecomputeMode::kFull}) {
    EXPECT_EQ(AnalyticLayerCost(model, LayerKind::kLmHead, TinyShape(DType::kFp32, 1, mode)), none);
  }
}

// The GPT of the Korthikanti checks: hidden h, a heads, ffn 4h, the given dropout.
ModelSpec KorthikantiGpt(int64_t h, int64_t a, double dropout) {
  ModelSpec model = TinyGptSpec();
  model.hidden = h;
  model.heads = a;
  model.kv_heads = a;
  model.ffn_hidden = 4 * h;
  model.dropout = dropout;
  return model;
}

// Korthikanti et al. (2022): a GPT block with bf16 and dropout stashes 34bsh + 5abs² bytes,
// bsh(10 + 24/t) + 5abs²/t with tp t; selective recompute leaves bsh(10 + 24/t); full 2bsh.
class KorthikantiTest : public ::testing::TestWithParam<int> {};

TEST_P(KorthikantiTest, GptBlockStashMatchesThePaper) {
  const int64_t b = 2, s = 16, h = 64, a = 4, t = GetParam();
  const ModelSpec model = KorthikantiGpt(h, a, 0.1);
  LayerShape shape{
      .micro_batch = b, .seq_len = s, .tp = static_cast<int>(t), .dtype = DType::kBf16};
  auto stash = [&](RecomputeMode mode) {
    shape.recompute = mode;
    return AnalyticLayerCost(model, LayerKind::kGptBlock, shape).stashed_bytes;
  };
  EXPECT_EQ(stash(RecomputeMode::kNone), b * s * h * (10 + 24 / t) + 5 * a * b * s * s / t);
  EXPECT_EQ(stash(RecomputeMode::kSelective), b * s * h * (10 + 24 / t));
  EXPECT_EQ(stash(RecomputeMode::kFull), 2 * b * s * h);
  if (t == 1) {
    EXPECT_EQ(stash(RecomputeMode::kNone), 34 * b * s * h + 5 * a * b * s * s);
  }
}

// Flash attention keeps no scores: the stash loses the 5abs²/t term under every mode but
// full, selective recompute has nothing left to drop, and the FLOPs stay the same.
TEST_P(KorthikantiTest, FlashAttentionKeepsNoScores) {
  const int64_t b = 2, s = 16, h = 64, a = 4, t = GetParam();
  ModelSpec model = KorthikantiGpt(h, a, 0.1);
  model.attention = AttentionKind::kFlash;
  LayerShape shape{
      .micro_batch = b, .seq_len = s, .tp = static_cast<int>(t), .dtype = DType::kBf16};
  auto cost = [&](RecomputeMode mode) {
    shape.recompute = mode;
    return AnalyticLayerCost(model, LayerKind::kGptBlock, shape);
  };
  EXPECT_EQ(cost(RecomputeMode::kNone).stashed_bytes, b * s * h * (10 + 24 / t));
  EXPECT_EQ(cost(RecomputeMode::kSelective).stashed_bytes, b * s * h * (10 + 24 / t));
  EXPECT_EQ(cost(RecomputeMode::kFull).stashed_bytes, 2 * b * s * h);
  model.attention = AttentionKind::kUnfused;
  EXPECT_EQ(cost(RecomputeMode::kNone).fwd_flops,
            AnalyticLayerCost(model, LayerKind::kGptBlock, shape).fwd_flops);
}

// With sequence parallelism (Korthikanti et al. Table 2) everything divides by t:
// (34bsh + 5abs²)/t, 34bsh/t with selective recompute, 2bsh/t with full.
class KorthikantiSequenceParallelTest : public ::testing::TestWithParam<int> {};

TEST_P(KorthikantiSequenceParallelTest, DividesEveryTermByTp) {
  const int64_t b = 2, s = 16, h = 64, a = 4, t = GetParam();
  const ModelSpec model = KorthikantiGpt(h, a, 0.1);
  LayerShape shape{.micro_batch = b,
                   .seq_len = s,
                   .tp = static_cast<int>(t),
                   .dtype = DType::kBf16,
                   .sequence_parallel = true};
  auto cost = [&](RecomputeMode mode) {
    shape.recompute = mode;
    return AnalyticLayerCost(model, LayerKind::kGptBlock, shape);
  };
  EXPECT_EQ(cost(RecomputeMode::kNone).stashed_bytes, (34 * b * s * h + 5 * a * b * s * s) / t);
  EXPECT_EQ(cost(RecomputeMode::kSelective).stashed_bytes, 34 * b * s * h / t);
  EXPECT_EQ(cost(RecomputeMode::kFull).stashed_bytes, 2 * b * s * h / t);
  // Each of the two tp regions: an all-gather in and a reduce-scatter out forward; the input
  // gradient gathers the output gradient and reduce-scatters the input's; the weight gradient
  // gathers the sharded input again. Every call moves the whole e·bsh; the output handed on is
  // e·bsh/t.
  const LayerCost none = cost(RecomputeMode::kNone);
  const int64_t act = 2 * b * s * h;
  EXPECT_EQ(none.output_bytes, act / t);
  EXPECT_EQ(none.tp_fwd.all_reduce, GroupCalls{});
  EXPECT_EQ(none.tp_fwd.all_gather, (GroupCalls{2, 2 * act}));
  EXPECT_EQ(none.tp_fwd.reduce_scatter, (GroupCalls{2, 2 * act}));
  EXPECT_EQ(none.tp_bwd.all_gather, (GroupCalls{2, 2 * act}));
  EXPECT_EQ(none.tp_bwd.reduce_scatter, (GroupCalls{2, 2 * act}));
  EXPECT_EQ(none.tp_wgrad.all_gather, (GroupCalls{2, 2 * act}));
}

INSTANTIATE_TEST_SUITE_P(Tp, KorthikantiTest, ::testing::Values(1, 2, 4));
INSTANTIATE_TEST_SUITE_P(Tp, KorthikantiSequenceParallelTest, ::testing::Values(2, 4));

// Context parallelism over c ranks: each holds s/c tokens of every sequence and scores them
// against all s keys, so the Korthikanti terms, the FLOPs and the tp payloads divide by c:
// (34bsh + 5abs²)/c at t 1. Attention gathers the fused qkv, [b, s, 3h/t], once forward and once
// in the input gradient, which also reduce-scatters its gradient.
class KorthikantiContextParallelTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(KorthikantiContextParallelTest, DividesTheBlockByCp) {
  const auto [t, c] = GetParam();
  const int64_t b = 2, s = 16, h = 64, a = 4;
  const ModelSpec model = KorthikantiGpt(h, a, 0.1);
  LayerShape shape{.micro_batch = b, .seq_len = s, .tp = t, .dtype = DType::kBf16};
  const LayerCost whole = AnalyticLayerCost(model, LayerKind::kGptBlock, shape);
  shape.cp = c;
  const LayerCost split = AnalyticLayerCost(model, LayerKind::kGptBlock, shape);
  EXPECT_EQ(split.stashed_bytes, b * s * h * (10 + 24 / t) / c + 5 * a * b * s * s / t / c);
  EXPECT_EQ(split.stashed_bytes * c, whole.stashed_bytes);
  EXPECT_DOUBLE_EQ(split.fwd_flops * c, whole.fwd_flops);
  EXPECT_DOUBLE_EQ(split.bwd_input_flops * c, whole.bwd_input_flops);
  EXPECT_DOUBLE_EQ(split.bwd_weight_flops * c, whole.bwd_weight_flops);
  EXPECT_EQ(split.output_bytes * c, whole.output_bytes);
  EXPECT_EQ(split.param_bytes, whole.param_bytes);
  EXPECT_EQ(split.tp_fwd.all_reduce.bytes * c, whole.tp_fwd.all_reduce.bytes);
  const int64_t qkv = 2 * b * s * 3 * h / t;  // the fused qkv, bf16, the whole sequence
  EXPECT_EQ(split.cp_fwd, (GroupTraffic{{}, {1, qkv}, {}}));
  EXPECT_EQ(split.cp_bwd, (GroupTraffic{{}, {1, qkv}, {1, qkv}}));
  EXPECT_EQ(whole.cp_fwd, GroupTraffic{});
  EXPECT_EQ(whole.cp_bwd, GroupTraffic{});
}

INSTANTIATE_TEST_SUITE_P(TpCp, KorthikantiContextParallelTest,
                         ::testing::Combine(::testing::Values(1, 2), ::testing::Values(2, 4)));

// Sequence parallelism on top of cp 2: the residual stream holds s/(c·t) tokens, so with
// selective recompute the whole stash is 34bsh/(c·t).
TEST(LayerCostTest, ContextAndSequenceParallelDivideTheResidualStream) {
  const int64_t b = 2, s = 16, h = 64, a = 4, t = 2, c = 2;
  LayerShape shape{.micro_batch = b,
                   .seq_len = s,
                   .tp = t,
                   .dtype = DType::kBf16,
                   .recompute = RecomputeMode::kSelective,
                   .sequence_parallel = true,
                   .cp = c};
  LayerCost cost = AnalyticLayerCost(KorthikantiGpt(h, a, 0.1), LayerKind::kGptBlock, shape);
  EXPECT_EQ(cost.stashed_bytes, 34 * b * s * h / (c * t));
  EXPECT_EQ(cost.output_bytes, 2 * b * s * h / (c * t));
}

// Llama's grouped K and V by hand: h 8, a 2, kv 1 (kvd 4), b 2, s 4, bf16, cp 2: two gathers,
// K and V of the whole sequence, 2 bytes · 2 · 4 · 4 = 64 bytes each. The MLP block, the
// embedding and the head issue none; the head's FLOPs halve with its tokens.
TEST(LayerCostTest, ContextParallelTrafficByHand) {
  LayerShape shape = TinyShape(DType::kBf16);
  shape.cp = 2;
  LayerCost block = AnalyticLayerCost(TinyLlamaSpec(), LayerKind::kLlamaBlock, shape);
  EXPECT_EQ(block.cp_fwd, (GroupTraffic{{}, {2, 128}, {}}));
  EXPECT_EQ(block.cp_bwd, (GroupTraffic{{}, {2, 128}, {2, 128}}));
  for (LayerKind kind : {LayerKind::kEmbedding, LayerKind::kFinalNorm, LayerKind::kLmHead}) {
    LayerCost cost = AnalyticLayerCost(TinyLlamaSpec(), kind, shape);
    EXPECT_EQ(cost.cp_fwd, GroupTraffic{});
    EXPECT_EQ(cost.cp_bwd, GroupTraffic{});
  }
  EXPECT_DOUBLE_EQ(
      AnalyticLayerCost(TinyLlamaSpec(), LayerKind::kLmHead, shape).fwd_flops * 2,
      AnalyticLayerCost(TinyLlamaSpec(), LayerKind::kLmHead, TinyShape(DType::kBf16)).fwd_flops);
  EXPECT_EQ(AnalyticLayerCost(TinyGptSpec(), LayerKind::kMlpBlock, shape).cp_fwd, GroupTraffic{});
}

// Without dropout the two bsh masks and the abs² mask and dropout output go:
// 34 - 2 = 32 bsh and 5 - 3 = 2 abs² (bf16, t 1).
TEST(LayerCostTest, GptBlockStashWithoutDropout) {
  const int64_t b = 2, s = 16, h = 64, a = 4;
  const ModelSpec model = KorthikantiGpt(h, a, 0);
  LayerShape shape{.micro_batch = b, .seq_len = s, .tp = 1, .dtype = DType::kBf16};
  EXPECT_EQ(AnalyticLayerCost(model, LayerKind::kGptBlock, shape).stashed_bytes,
            32 * b * s * h + 2 * a * b * s * s);
}

// gpt2-small block, b 1, s 1024, bf16, dropout 0.1 (the worked example in block_cost.cc):
// 34·786,432 + 5·12·1024² = 89,653,248 bytes; 7,087,872 parameters.
TEST(LayerCostTest, Gpt2SmallBlock) {
  ModelSpec model = Gpt2SmallSpec();
  model.dropout = 0.1;
  LayerShape shape{.micro_batch = 1, .seq_len = 1024, .tp = 1, .dtype = DType::kBf16};
  LayerCost cost = AnalyticLayerCost(model, LayerKind::kGptBlock, shape);
  EXPECT_EQ(cost.stashed_bytes, 89653248);
  EXPECT_EQ(cost.total_params, 7087872);
  EXPECT_EQ(cost.fwd_flops, 14495514624.0 + 3221225472.0);
  shape.tp = 2;
  shape.sequence_parallel = true;
  EXPECT_EQ(AnalyticLayerCost(model, LayerKind::kGptBlock, shape).stashed_bytes, 44826624);
}

// Per-rank figures over a tp group: params · t − (t − 1) · replicated = total_params (the
// replicated part is held by every rank), and each rank does 1/t of the FLOPs.
struct TpCase {
  const char* name;  // test name, e.g. "GptBlock"
  LayerKind kind;
  bool llama;                 // the tiny Llama model, else the tiny GPT
  int64_t replicated_params;  // held whole by every rank
};

// Stable test names such as "GptBlock_Tp2" and printed values, so ctest discovers the same
// tests every run.
void PrintTo(const TpCase& c, std::ostream* os) { *os << c.name; }

std::string TpCaseName(const ::testing::TestParamInfo<std::tuple<TpCase, int>>& info) {
  return std::string(std::get<0>(info.param).name) + "_Tp" +
         std::to_string(std::get<1>(info.param));
}

class TensorParallelTest : public ::testing::TestWithParam<std::tuple<TpCase, int>> {};

// A model every tp in {1, 2, 4} shards: h 32, a 8 (head size 4), kv 8 (GPT) or 4 (Llama),
// f 64, V 128.
ModelSpec TpModel(bool llama) {
  ModelSpec model = llama ? TinyLlamaSpec() : TinyGptSpec();
  model.hidden = 32;
  model.heads = 8;
  model.kv_heads = llama ? 4 : 8;
  model.ffn_hidden = 64;
  model.vocab_size = 128;
  return model;
}

TEST_P(TensorParallelTest, RanksAddUpToTheWholeLayer) {
  const auto& [c, t] = GetParam();
  ModelSpec model = TpModel(c.llama);
  LayerShape shape{.micro_batch = 2, .seq_len = 8, .tp = 1, .dtype = DType::kBf16};
  LayerCost whole = AnalyticLayerCost(model, c.kind, shape);
  shape.tp = t;
  LayerCost rank = AnalyticLayerCost(model, c.kind, shape);
  EXPECT_EQ(rank.params * t - (t - 1) * c.replicated_params, whole.total_params);
  EXPECT_EQ(rank.total_params, whole.total_params);
  EXPECT_EQ(whole.params, whole.total_params);
  EXPECT_EQ(rank.fwd_flops * t, whole.fwd_flops);
  EXPECT_EQ(rank.bwd_input_flops * t, whole.bwd_input_flops);
  EXPECT_EQ(rank.bwd_weight_flops * t, whole.bwd_weight_flops);
  EXPECT_EQ(rank.output_bytes, whole.output_bytes);
  EXPECT_EQ(whole.tp_fwd, GroupTraffic{});
  EXPECT_EQ(whole.tp_bwd, GroupTraffic{});
}

// h 32: GPT replicates 2 LayerNorms (4h) and 2 row-parallel biases (2h) = 6h = 192; Llama its
// 2 RMSNorms, 2h = 64; MLP the FC2 bias, h = 32; the learned position table 6·32 = 192; the
// final LayerNorm 2h = 64; the head nothing.
INSTANTIATE_TEST_SUITE_P(
    Layers, TensorParallelTest,
    ::testing::Combine(::testing::Values(TpCase{"GptBlock", LayerKind::kGptBlock, false, 192},
                                         TpCase{"LlamaBlock", LayerKind::kLlamaBlock, true, 64},
                                         TpCase{"MlpBlock", LayerKind::kMlpBlock, false, 32},
                                         TpCase{"LearnedEmbedding", LayerKind::kEmbedding, false,
                                                192},
                                         TpCase{"RopeEmbedding", LayerKind::kEmbedding, true, 0},
                                         TpCase{"FinalNorm", LayerKind::kFinalNorm, false, 64},
                                         TpCase{"LmHead", LayerKind::kLmHead, false, 0}),
                       ::testing::Values(2, 4)),
    TpCaseName);

TEST(TensorParallelProblemTest, NamesTheDimensionThatDoesNotDivide) {
  EXPECT_EQ(Gpt2SmallSpec().TensorParallelProblem(5), "tp 5 does not divide 12 heads");
  EXPECT_EQ(Gpt2SmallSpec().TensorParallelProblem(8), "tp 8 does not divide 12 heads");
  EXPECT_EQ(Gpt2SmallSpec().TensorParallelProblem(0), "tp must be >= 1, got 0");
  EXPECT_EQ(Llama3Spec8b().TensorParallelProblem(16), "tp 16 does not divide 8 kv_heads");
  ModelSpec odd_ffn = TinyGptSpec();
  odd_ffn.ffn_hidden = 33;
  EXPECT_EQ(odd_ffn.TensorParallelProblem(2), "tp 2 does not divide 33 ffn_hidden");
}

TEST(TensorParallelProblemTest, AcceptsDivisors) {
  for (int tp : {1, 2, 3, 4, 6, 12}) EXPECT_EQ(Gpt2SmallSpec().TensorParallelProblem(tp), "");
  for (int tp : {1, 2, 4, 8}) EXPECT_EQ(Llama3Spec8b().TensorParallelProblem(tp), "");
}

TEST(LayerCostDeathTest, TensorParallelThatDoesNotDivideAborts) {
  LayerShape shape{.micro_batch = 1, .seq_len = 8, .tp = 5};
  EXPECT_DEATH(AnalyticLayerCost(Gpt2SmallSpec(), LayerKind::kGptBlock, shape),
               "tp 5 does not divide 12 heads");
}

}  // namespace
}  // namespace trident
