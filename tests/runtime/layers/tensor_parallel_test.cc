// Tensor parallelism: tp = 2 and 4 ranks (threads of RunInProcess) give the outputs, input
// gradients and (gathered) weight gradients of tp = 1, to a relative difference
// max|a − b| / max|b| ≤ 1e-5 (fp32 partial sums added in another order). Every rank starts from
// the same full weights (plan-independent init), so no perturbation is applied. The vocabulary
// of 10 does not divide by 4: rank 3 of tp 4 holds one row (Megatron's padded split).
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "models/layer_cost.h"
#include "models/layer_shapes.h"
#include "runtime/comm/inprocess_comm.h"
#include "tests/runtime/layers/layer_test_util.h"

namespace trident {
namespace {

// The full gradient of parameter k from the ranks' shards (whole ones must agree; partial ones,
// of a norm under sequence parallelism, are summed as the trainer's GradSync sums them).
HostTensor Gather(const std::vector<RankResult>& ranks, size_t k) {
  SliceAxis axis = ranks[0].params[k].slice.axis;
  if (ranks[0].params[k].tp_partial_grad) {
    HostTensor sum = ranks[0].grads[k];
    for (size_t r = 1; r < ranks.size(); ++r) {
      for (size_t i = 0; i < sum.values.size(); ++i) sum.values[i] += ranks[r].grads[k].values[i];
    }
    return sum;
  }
  if (axis == SliceAxis::kFull) return ranks[0].grads[k];
  std::vector<HostTensor> shards;
  for (const RankResult& r : ranks) shards.push_back(r.grads[k]);
  StatusOr<HostTensor> full = ConcatenateShards(shards, axis);
  EXPECT_TRUE(full.ok()) << full.status().ToString();
  return full.ok() ? *full : HostTensor();
}

struct TpCase {
  std::string name;
  LayerKind kind;
  RecomputeMode recompute = RecomputeMode::kNone;
};
void PrintTo(const TpCase& c, std::ostream* os) { *os << c.name; }

class TensorParallelTest : public testing::TestWithParam<std::tuple<TpCase, int>> {};

TEST_P(TensorParallelTest, MatchesOneRank) {
  const auto& [c, tp] = GetParam();
  RankResult reference = RunOneRank(c.kind, c.recompute, nullptr, 1, 0);
  std::vector<RankResult> ranks(static_cast<size_t>(tp));
  Status status = RunInProcess(tp, [&](Comm& comm) -> Status {
    ranks[static_cast<size_t>(comm.Rank())] =
        RunOneRank(c.kind, c.recompute, &comm, tp, comm.Rank());
    return Status::Ok();
  });
  ASSERT_TRUE(status.ok()) << status.ToString();
  LayerShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 4;
  shape.tp = tp;
  const int64_t expected_params = AnalyticLayerCost(ModelFor(c.kind), c.kind, shape).params;
  for (const RankResult& r : ranks) {
    EXPECT_LE(RelativeDifference(r.y, reference.y), 1e-5) << "output";
    EXPECT_LE(RelativeDifference(r.dx, reference.dx), 1e-5) << "input gradient";
    // The cost model counts ceil(V/tp) vocabulary rows on every rank (the padded split, the
    // memory of the fullest rank); the last ranks hold fewer real rows.
    EXPECT_LE(r.param_count, expected_params);
    for (size_t k = 0; k < r.grads.size(); ++k) {
      if (r.params[k].slice.axis != SliceAxis::kFull) continue;
      EXPECT_LE(RelativeDifference(r.grads[k].values, reference.grads[k].values), 1e-5)
          << r.params[k].name << " (replicated)";
    }
  }
  EXPECT_EQ(ranks[0].param_count, expected_params);
  // Every rank holds the parameters of its LayerShapes, in order.
  for (int rank = 0; rank < tp; ++rank) {
    const LayerShapes shapes = MakeLayerShapes(ModelFor(c.kind), c.kind, {tp, rank});
    const RankResult& r = ranks[static_cast<size_t>(rank)];
    ASSERT_EQ(r.params.size(), shapes.params.size());
    for (size_t k = 0; k < r.params.size(); ++k) {
      EXPECT_EQ(r.params[k].name, shapes.params[k].name);
      EXPECT_EQ(r.params[k].full_shape, shapes.params[k].full) << r.params[k].name;
      EXPECT_EQ(SliceShape(r.params[k].full_shape, r.params[k].slice), shapes.params[k].local)
          << r.params[k].name << " on rank " << rank;
    }
  }
  for (size_t k = 0; k < reference.grads.size(); ++k) {
    HostTensor full = Gather(ranks, k);
    EXPECT_EQ(full.shape, reference.grads[k].shape) << reference.params[k].name;
    EXPECT_LE(RelativeDifference(full.values, reference.grads[k].values), 1e-5)
        << reference.params[k].name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layers, TensorParallelTest,
    testing::Combine(testing::Values(TpCase{"embedding", LayerKind::kEmbedding},
                                     TpCase{"final_norm", LayerKind::kFinalNorm},
                                     TpCase{"lm_head", LayerKind::kLmHead},
                                     TpCase{"mlp_block", LayerKind::kMlpBlock},
                                     TpCase{"gpt_block", LayerKind::kGptBlock},
                                     TpCase{"gpt_block_full_recompute", LayerKind::kGptBlock,
                                            RecomputeMode::kFull},
                                     TpCase{"llama_block", LayerKind::kLlamaBlock}),
                     testing::Values(2, 4)),
    [](const testing::TestParamInfo<std::tuple<TpCase, int>>& param_info) {
      return std::get<0>(param_info.param).name + "_tp" +
             std::to_string(std::get<1>(param_info.param));
    });

// Under sequence parallelism (tp 2, micro-batch 2 × 4 tokens) each layer keeps exactly what
// models/ says for the rank: LayerShapes::ForwardStash of a sequence-parallel split, fp32, the
// norm statistics included (the cost model leaves those out).
class SequenceParallelStashTest : public testing::TestWithParam<TpCase> {};

TEST_P(SequenceParallelStashTest, IsWhatModelsSays) {
  const TpCase& c = GetParam();
  const ModelSpec model = ModelFor(c.kind);
  Status status = RunInProcess(2, [&](Comm& comm) -> Status {
    CpuCompute compute;
    LayerContext context{&compute, &comm, comm.Rank(), 2, 42, 1, c.recompute};
    context.sequence_parallel = true;
    std::unique_ptr<Layer> layer = MakeLayer(model, c.kind, context);
    const LayerShapes shapes = MakeLayerShapes(model, c.kind, {2, comm.Rank(), true});
    const TokenBlock tb{2, 4};
    const TokenBlock local = shapes.Local(tb);
    LayerInput input = c.kind == LayerKind::kEmbedding
                           ? MakeInput(model, c.kind, tb.batch, tb.seq, 9)
                           : MakeInput(model, c.kind, local.batch, local.seq, 9 + comm.Rank());
    Tensor targets = IdsFromHost(compute, {2, 4}, RandomIds(8, model.vocab_size, 11));
    Tensor y = layer->Forward(0, ToTensor(compute, input), &targets);
    int64_t expected = 0;
    for (const StashTensor& t : shapes.ForwardStash(tb)) {
      if (t.KeptUnder(c.recompute)) expected += 4 * t.Elements();
    }
    EXPECT_EQ(layer->StashBytes(0), expected) << "rank " << comm.Rank();
    if (c.kind != LayerKind::kLmHead) {
      EXPECT_EQ(y.shape(), shapes.Hidden(local));
    }
    layer->Discard(0);
    return Status::Ok();
  });
  ASSERT_TRUE(status.ok()) << status.ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Layers, SequenceParallelStashTest,
    testing::Values(
        TpCase{"embedding", LayerKind::kEmbedding}, TpCase{"final_norm", LayerKind::kFinalNorm},
        TpCase{"lm_head", LayerKind::kLmHead}, TpCase{"mlp_block", LayerKind::kMlpBlock},
        TpCase{"mlp_block_full", LayerKind::kMlpBlock, RecomputeMode::kFull},
        TpCase{"gpt_block", LayerKind::kGptBlock},
        TpCase{"gpt_block_selective", LayerKind::kGptBlock, RecomputeMode::kSelective},
        TpCase{"gpt_block_full", LayerKind::kGptBlock, RecomputeMode::kFull},
        TpCase{"llama_block", LayerKind::kLlamaBlock},
        TpCase{"llama_block_selective", LayerKind::kLlamaBlock, RecomputeMode::kSelective},
        TpCase{"llama_block_full", LayerKind::kLlamaBlock, RecomputeMode::kFull}),
    [](const testing::TestParamInfo<TpCase>& param_info) { return param_info.param.name; });

// Same seed, same loss: a whole model (embedding, block, MLP block, final norm, LM head) run
// under tp 2 and 4, with and without sequence parallelism, gives the loss and the gathered
// gradients of every layer that tp 1 gives. Micro-batch 2 × 4 tokens: tp 4 with sequence
// parallelism leaves each rank one token of each sequence.
RankResult RunModel(const ModelSpec& model, Comm* comm, int tp, int rank, bool sp) {
  CpuCompute compute;
  std::vector<std::unique_ptr<Layer>> layers;
  std::vector<LayerKind> kinds = model.ExpandLayers();
  for (size_t i = 0; i < kinds.size(); ++i) {
    LayerContext context{&compute, comm, rank, tp, 42, static_cast<int>(i), RecomputeMode::kNone};
    context.sequence_parallel = sp && tp > 1;
    layers.push_back(MakeLayer(model, kinds[i], context));
  }
  Tensor targets = IdsFromHost(compute, {2, 4}, RandomIds(8, model.vocab_size, 11));
  Tensor x = IdsFromHost(compute, {2, 4}, RandomIds(8, model.vocab_size, 12));
  for (auto& layer : layers) x = layer->Forward(0, std::move(x), &targets);
  RankResult r;
  r.y = ToHost(compute, x);
  Tensor dy = FromHost(compute, {1}, {1.0f});
  for (size_t i = layers.size(); i-- > 0;) dy = layers[i]->BackwardInput(0, std::move(dy));
  for (auto& layer : layers) {
    layer->BackwardWeight(0);
    for (Parameter p : layer->Parameters()) {
      r.grads.push_back({p.grad->shape(), ToHost(compute, *p.grad)});
      p.value = p.grad = nullptr;
      r.params.push_back(p);
    }
  }
  return r;
}

class WholeModelTest : public testing::TestWithParam<std::tuple<bool, int, bool>> {};

TEST_P(WholeModelTest, SameLossAndGradientsAsOneRank) {
  const auto& [llama, tp, sp] = GetParam();
  const ModelSpec model = llama ? TpLlama() : TpModel();
  RankResult reference = RunModel(model, nullptr, 1, 0, false);
  std::vector<RankResult> ranks(static_cast<size_t>(tp));
  Status status = RunInProcess(tp, [&](Comm& comm) -> Status {
    ranks[static_cast<size_t>(comm.Rank())] = RunModel(model, &comm, tp, comm.Rank(), sp);
    return Status::Ok();
  });
  ASSERT_TRUE(status.ok()) << status.ToString();
  for (const RankResult& r : ranks) EXPECT_LE(RelativeDifference(r.y, reference.y), 1e-5);
  for (size_t k = 0; k < reference.grads.size(); ++k) {
    EXPECT_LE(RelativeDifference(Gather(ranks, k).values, reference.grads[k].values), 1e-5)
        << reference.params[k].name << " (parameter " << k << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, WholeModelTest,
                         testing::Combine(testing::Bool(), testing::Values(2, 4), testing::Bool()),
                         [](const testing::TestParamInfo<std::tuple<bool, int, bool>>& param_info) {
                           return std::string(std::get<0>(param_info.param) ? "llama" : "gpt") +
                                  "_tp" + std::to_string(std::get<1>(param_info.param)) +
                                  (std::get<2>(param_info.param) ? "_sp" : "");
                         });

}  // namespace
}  // namespace trident
