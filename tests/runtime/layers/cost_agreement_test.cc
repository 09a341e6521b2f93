// The layers agree with the analytic cost model of models/: parameter counts exactly, stash
// bytes within 5% (dropout 0, fp32). The differences are the fp32 norm statistics the cost
// model leaves out: mean and rstd of each LayerNorm (GPT block: 16 bytes a token, against
// ~4,350 counted at H 64, S 16; final LayerNorm: 8 against 256 counted, 3%; Llama block: the
// two RMSNorm rstd, 8 bytes a token).
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>

#include "models/layer_cost.h"
#include "tests/runtime/layers/layer_test_util.h"

namespace trident {
namespace {

constexpr int64_t kBatch = 2;
constexpr int64_t kSeq = 16;

LayerCost CostOf(const ModelSpec& model, const LayerCase& c) {
  LayerShape shape;
  shape.micro_batch = kBatch;
  shape.seq_len = kSeq;
  shape.recompute = c.recompute;
  return AnalyticLayerCost(model, c.kind, shape);
}

int64_t CountParams(Layer& layer) {
  int64_t n = 0;
  for (const Parameter& p : layer.Parameters()) n += p.value->numel();
  return n;
}

class CostAgreementTest : public testing::TestWithParam<LayerCase> {};

TEST_P(CostAgreementTest, ParamsAndStashMatchTheCostModel) {
  const LayerCase& c = GetParam();
  ModelSpec model = c.llama ? MediumLlama() : MediumGpt();
  if (!c.llama) model.norm = c.norm;
  ASSERT_TRUE(model.Validate().ok());
  CpuCompute compute;
  LayerContext context{&compute, nullptr, 0, 1, 1, 2, c.recompute};
  std::unique_ptr<Layer> layer = MakeLayer(model, c.kind, context);
  LayerCost cost = CostOf(model, c);
  EXPECT_EQ(CountParams(*layer), cost.params);

  Tensor targets = IdsFromHost(compute, {kBatch, kSeq}, RandomIds(kBatch * kSeq, 128, 3));
  LayerInput input = MakeInput(model, c.kind, kBatch, kSeq, 4);
  Tensor y = layer->Forward(0, ToTensor(compute, input), &targets);
  const double stash = static_cast<double>(layer->StashBytes(0));
  const double expected = static_cast<double>(cost.stashed_bytes);
  EXPECT_LE(std::abs(stash - expected), 0.05 * expected)
      << "stash " << stash << " bytes vs the cost model's " << expected;
  EXPECT_GE(stash, expected) << "the layer keeps less than the cost model says it must";
  layer->Discard(0);
  EXPECT_EQ(layer->StashBytes(0), 0);
}

// StashBytes is all a micro-batch holds: across Forward, the tracking allocator's count grows by
// the stash and the output, less the input (which Forward takes over: stashed or freed).
TEST_P(CostAgreementTest, StashBytesAreWhatTheAllocatorHolds) {
  const LayerCase& c = GetParam();
  ModelSpec model = c.llama ? MediumLlama() : MediumGpt();
  if (!c.llama) model.norm = c.norm;
  CpuCompute compute;
  LayerContext context{&compute, nullptr, 0, 1, 1, 2, c.recompute};
  std::unique_ptr<Layer> layer = MakeLayer(model, c.kind, context);
  Tensor targets = IdsFromHost(compute, {kBatch, kSeq}, RandomIds(kBatch * kSeq, 128, 3));
  Tensor x = ToTensor(compute, MakeInput(model, c.kind, kBatch, kSeq, 4));
  const int64_t input_bytes = x.bytes();
  const int64_t before = compute.memory_stats().current_bytes;
  Tensor y = layer->Forward(0, std::move(x), &targets);
  const int64_t after = compute.memory_stats().current_bytes;
  EXPECT_EQ(after - before + input_bytes, layer->StashBytes(0) + y.bytes());
  layer->Discard(0);
}

INSTANTIATE_TEST_SUITE_P(Layers, CostAgreementTest, testing::ValuesIn(AllLayerCases()),
                         [](const testing::TestParamInfo<LayerCase>& param_info) {
                           return param_info.param.name;
                         });

// A tied head owns nothing (the cost model counts the matrix at the embedding) and accumulates
// its weight gradient into the embedding's table gradient.
TEST(TiedLmHeadTest, UsesTheEmbeddingTable) {
  ModelSpec model = SmallGpt();
  model.tied_embeddings = true;
  CpuCompute compute;
  LayerContext context{&compute, nullptr, 0, 1, 1, 0, RecomputeMode::kNone};
  std::unique_ptr<Layer> embedding = MakeLayer(model, LayerKind::kEmbedding, context);
  Parameter table = embedding->Parameters()[0];
  LayerContext head_context = context;
  head_context.layer_index = 4;
  head_context.tied_weight = table.value;
  head_context.tied_weight_grad = table.grad;
  std::unique_ptr<Layer> head = MakeLayer(model, LayerKind::kLmHead, head_context);
  EXPECT_TRUE(head->Parameters().empty());
  EXPECT_EQ(AnalyticLayerCost(model, LayerKind::kLmHead, {}).params, 0);

  Tensor targets = IdsFromHost(compute, {1, 2}, {3, 5});
  head->Forward(0, FromHost(compute, {1, 2, model.hidden}, RandomValues(16, 1.0f, 1)), &targets);
  head->BackwardInput(0, FromHost(compute, {1}, {1.0f}));
  head->BackwardWeight(0);
  double norm = 0;
  for (float g : ToHost(compute, *table.grad)) norm += std::abs(g);
  EXPECT_GT(norm, 0.0);
}

}  // namespace
}  // namespace trident
