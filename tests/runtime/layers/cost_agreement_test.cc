// The layers hold what models/ says they hold: the parameters of LayerShapes, in its order and
// shapes, and the forward stash of LayerShapes::ForwardStash byte for byte (fp32 and int32
// elements, the norm statistics included). The analytic cost model sums the same shapes: its
// parameter count equals the layer's, and its stash bytes equal the layer's less the fp32 norm
// statistics, which it leaves out (dropout 0, fp32).
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "models/layer_cost.h"
#include "models/layer_shapes.h"
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

// Bytes of the stash tensors kept under `mode` as the CPU layers hold them (4-byte elements);
// `with_stats` false leaves out the norm statistics, as the cost model does.
int64_t ShapeStashBytes(const LayerShapes& shapes, RecomputeMode mode, bool with_stats) {
  int64_t bytes = 0;
  for (const StashTensor& t : shapes.ForwardStash({kBatch, kSeq})) {
    if (!t.KeptUnder(mode)) continue;
    if (t.element == StashElement::kNormStat && !with_stats) continue;
    bytes += 4 * t.Elements();
  }
  return bytes;
}

class CostAgreementTest : public testing::TestWithParam<LayerCase> {};

TEST_P(CostAgreementTest, ParamsAndStashAreThoseOfTheShapeDefinition) {
  const LayerCase& c = GetParam();
  ModelSpec model = c.llama ? MediumLlama() : MediumGpt();
  if (!c.llama) model.norm = c.norm;
  ASSERT_TRUE(model.Validate().ok());
  CpuCompute compute;
  LayerContext context{&compute, nullptr, 0, 1, 1, 2, c.recompute};
  std::unique_ptr<Layer> layer = MakeLayer(model, c.kind, context);
  const LayerShapes shapes = MakeLayerShapes(model, c.kind, {1, 0});
  std::vector<Parameter> params = layer->Parameters();
  ASSERT_EQ(params.size(), shapes.params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    EXPECT_EQ(params[k].name, shapes.params[k].name);
    EXPECT_EQ(params[k].value->shape(), shapes.params[k].local) << params[k].name;
    EXPECT_EQ(params[k].full_shape, shapes.params[k].full) << params[k].name;
  }
  LayerCost cost = CostOf(model, c);
  EXPECT_EQ(CountParams(*layer), cost.params);

  Tensor targets = IdsFromHost(compute, {kBatch, kSeq}, RandomIds(kBatch * kSeq, 128, 3));
  LayerInput input = MakeInput(model, c.kind, kBatch, kSeq, 4);
  Tensor y = layer->Forward(0, ToTensor(compute, input), &targets);
  EXPECT_EQ(layer->StashBytes(0), ShapeStashBytes(shapes, c.recompute, true));
  EXPECT_EQ(cost.stashed_bytes, ShapeStashBytes(shapes, c.recompute, false));
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
