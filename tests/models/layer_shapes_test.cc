#include "models/layer_shapes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/models/model_fixtures.h"

namespace trident {
namespace {

using Dims = std::vector<int64_t>;

TEST(LayerShapesTest, GptBlockPerRankByHand) {
  // gpt2-small at tp 2: 6 heads of 64 per rank, qkv 3·384 wide, ffn 1536.
  LayerShapes s = MakeLayerShapes(Gpt2SmallSpec(), LayerKind::kGptBlock, {2, 1});
  EXPECT_EQ(s.heads, 6);
  EXPECT_EQ(s.kv_heads, 6);
  EXPECT_EQ(s.head_dim, 64);
  EXPECT_EQ(s.group, 1);
  EXPECT_EQ(s.q_width, 384);
  EXPECT_EQ(s.qkv_width, 1152);
  EXPECT_EQ(s.qkv_head_stride, 192);
  EXPECT_EQ(s.ffn, 1536);
  EXPECT_EQ(s.Param("attn.qkv.weight").full, (Dims{2304, 768}));
  EXPECT_EQ(s.Param("attn.qkv.weight").local, (Dims{1152, 768}));
  EXPECT_EQ(s.Param("attn.proj.weight").local, (Dims{768, 384}));
  EXPECT_EQ(s.Param("attn.proj.bias").local, (Dims{768}));
  EXPECT_EQ(s.Param("mlp.fc2.weight").axis, ShardAxis::kColumns);
  TokenBlock tb{2, 16};
  EXPECT_EQ(s.Qkv(tb), (Dims{2, 16, 1152}));
  EXPECT_EQ(s.Scores(tb), (Dims{2, 6, 16, 16}));
  EXPECT_EQ(s.Ffn(tb), (Dims{2, 16, 1536}));
  EXPECT_EQ(s.NormStat(tb), (Dims{32}));
}

TEST(LayerShapesTest, LlamaBlockGroupsQueryHeads) {
  // llama3-8b at tp 8: 4 query heads and 1 kv head of 128 per rank.
  LayerShapes s = MakeLayerShapes(Llama3Spec8b(), LayerKind::kLlamaBlock, {8, 3});
  EXPECT_EQ(s.heads, 4);
  EXPECT_EQ(s.kv_heads, 1);
  EXPECT_EQ(s.group, 4);
  EXPECT_EQ(s.kv_width, 128);
  EXPECT_EQ(s.qkv_width, 512 + 2 * 128);
  EXPECT_EQ(s.ffn, 1792);
  EXPECT_EQ(s.Param("attn.k.weight").local, (Dims{128, 4096}));
  std::vector<std::string> names;
  for (const ParamShape& p : s.params) names.push_back(p.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"norm1.weight", "attn.q.weight", "attn.k.weight",
                                      "attn.v.weight", "attn.o.weight", "norm2.weight",
                                      "mlp.gate.weight", "mlp.up.weight", "mlp.down.weight"}));
}

// The vocabulary shards tile [0, V) in rank order; rank 0 holds ceil(V/t) rows.
TEST(LayerShapesTest, VocabularyShardsTileTheVocabulary) {
  for (int64_t vocab : {10, 11, 12, 50257}) {
    for (int tp : {1, 2, 3, 4}) {
      ModelSpec model = TinyGptSpec();
      model.vocab_size = vocab;
      model.heads = 12;
      model.kv_heads = 12;
      model.hidden = 24;
      model.ffn_hidden = 96;
      int64_t next = 0;
      for (int rank = 0; rank < tp; ++rank) {
        LayerShapes s = MakeLayerShapes(model, LayerKind::kEmbedding, {tp, rank});
        EXPECT_EQ(s.vocab_shard.begin, next) << "V " << vocab << " tp " << tp;
        EXPECT_EQ(s.Param("token.weight").local, (Dims{s.vocab_shard.Rows(), 24}));
        if (rank == 0) {
          EXPECT_EQ(s.vocab_shard.Rows(), (vocab + tp - 1) / tp);
        }
        next = s.vocab_shard.end;
      }
      EXPECT_EQ(next, vocab);
    }
  }
}

// Sharded parameters' parts add up to the whole over the ranks; replicated ones are whole.
TEST(LayerShapesTest, RanksAddUpToTheWholeParameters) {
  for (LayerKind kind : {LayerKind::kGptBlock, LayerKind::kMlpBlock}) {
    const ModelSpec model = Gpt2SmallSpec();
    const std::vector<ParamShape> whole = MakeLayerShapes(model, kind, {1, 0}).params;
    std::vector<int64_t> sum(whole.size(), 0);
    for (int rank = 0; rank < 4; ++rank) {
      const LayerShapes s = MakeLayerShapes(model, kind, {4, rank});
      ASSERT_EQ(s.params.size(), whole.size());
      for (size_t k = 0; k < whole.size(); ++k) {
        sum[k] += s.params[k].LocalElements();
        if (s.params[k].axis == ShardAxis::kReplicated) {
          EXPECT_EQ(s.params[k].local, whole[k].full) << whole[k].name;
        }
      }
    }
    for (size_t k = 0; k < whole.size(); ++k) {
      const int copies = whole[k].axis == ShardAxis::kReplicated ? 4 : 1;
      EXPECT_EQ(sum[k], copies * whole[k].FullElements()) << whole[k].name;
    }
  }
}

std::vector<std::string> KeptNames(const LayerShapes& s, RecomputeMode mode) {
  std::vector<std::string> names;
  for (const StashTensor& t : s.ForwardStash({1, 4})) {
    if (t.KeptUnder(mode)) names.push_back(t.name);
  }
  return names;
}

TEST(LayerShapesTest, RecomputeDropsWhatItRebuilds) {
  LayerShapes gpt = MakeLayerShapes(TinyGptSpec(), LayerKind::kGptBlock, {1, 0});
  EXPECT_EQ(KeptNames(gpt, RecomputeMode::kFull), (std::vector<std::string>{"x"}));
  std::vector<std::string> selective = KeptNames(gpt, RecomputeMode::kSelective);
  std::vector<std::string> none = KeptNames(gpt, RecomputeMode::kNone);
  EXPECT_EQ(none.size(), selective.size() + 1);
  EXPECT_EQ(std::count(selective.begin(), selective.end(), "attn.probs"), 0);
  LayerShapes head = MakeLayerShapes(TinyGptSpec(), LayerKind::kLmHead, {1, 0});
  EXPECT_EQ(KeptNames(head, RecomputeMode::kFull), (std::vector<std::string>{"x", "probs"}));
}

TEST(LayerShapesTest, DropoutAddsMasksToTheGptStash) {
  ModelSpec model = TinyGptSpec();
  model.dropout = 0.1;
  int masks = 0;
  for (const StashTensor& t :
       MakeLayerShapes(model, LayerKind::kGptBlock, {1, 0}).ForwardStash({1, 4})) {
    masks += t.element == StashElement::kDropoutMask ? 1 : 0;
  }
  EXPECT_EQ(masks, 3);  // after proj, after FC2, on the attention probabilities
}

TEST(LayerShapesDeathTest, ChecksTheSplitOnce) {
  EXPECT_DEATH(MakeLayerShapes(Gpt2SmallSpec(), LayerKind::kGptBlock, {5, 0}),
               "tp 5 does not divide 12 heads");
  EXPECT_DEATH(MakeLayerShapes(Gpt2SmallSpec(), LayerKind::kGptBlock, {2, 2}), "tp rank 2 of 2");
}

}  // namespace
}  // namespace trident
