// Context parallelism: a whole model (embedding, block, MLP block, final norm, LM head) run over
// cp = 2 ranks (threads of RunInProcess), alone and with tp 2 and sequence parallelism, gives the
// loss of one rank and, summed over the cp group, its gradients, to a relative difference of
// 1e-5; and every layer keeps exactly the stash that models/ gives a cp rank. Micro-batch 2 × 8
// tokens: cp 2 gives each rank chunks {0, 3} and {1, 2} of 2 tokens of each sequence.
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "core/rank_map.h"
#include "models/layer_cost.h"
#include "models/layer_shapes.h"
#include "runtime/comm/inprocess_comm.h"
#include "runtime/layers/layer_ops.h"
#include "tests/runtime/comm/counting_comm.h"
#include "tests/runtime/layers/layer_test_util.h"

namespace trident {
namespace {

constexpr int64_t kBatch = 2, kSeq = 8;

struct CpCase {
  bool llama = false;
  int tp = 1;
  RecomputeMode recompute = RecomputeMode::kNone;
};

void PrintTo(const CpCase& c, std::ostream* os) {
  *os << (c.llama ? "llama" : "gpt") << " tp " << c.tp << " "
      << NameOf(RecomputeModeNames(), c.recompute);
}

// "gpt_cp2_tp2_sp_full": the test name of a case (cp 2 throughout).
std::string CaseName(const testing::TestParamInfo<CpCase>& param_info) {
  const CpCase& c = param_info.param;
  return std::string(c.llama ? "llama" : "gpt") + "_cp2" +
         (c.tp > 1 ? "_tp" + std::to_string(c.tp) + "_sp" : "") + "_" +
         NameOf(RecomputeModeNames(), c.recompute);
}

ModelSpec CaseModel(const CpCase& c) {
  ModelSpec model = c.llama ? TpLlama() : TpModel();
  model.max_seq_len = kSeq;
  return model;
}

// The columns of a [B, S] id matrix at `positions`, as [B, positions.size()].
std::vector<int32_t> TakeColumns(const std::vector<int32_t>& ids,
                                 const std::vector<int64_t>& positions) {
  std::vector<int32_t> out;
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t p : positions) out.push_back(ids[static_cast<size_t>(b * kSeq + p)]);
  }
  return out;
}

struct CpRankResult {
  RankResult result;
  int64_t stash_bytes = 0;           // summed over the layers after the forward
  int64_t expected_stash_bytes = 0;  // what models/ says for the same layers
};

// One rank of the model: `context` holds its groups (both null for the one-rank reference).
CpRankResult RunModel(const ModelSpec& model, const CpCase& c, LayerContext base) {
  CpuCompute compute;
  base.compute = &compute;
  std::vector<std::unique_ptr<Layer>> layers;
  std::vector<LayerKind> kinds = model.ExpandLayers();
  CpRankResult r;
  const TokenBlock local{kBatch, kSeq / base.cp_size};
  for (size_t i = 0; i < kinds.size(); ++i) {
    LayerContext context = base;
    context.layer_index = static_cast<int>(i);
    layers.push_back(MakeLayer(model, kinds[i], context));
    const LayerShapes shapes = MakeLayerShapes(
        model, kinds[i], {base.tp_size, base.tp_rank, base.sequence_parallel, base.cp_size});
    for (const StashTensor& t : shapes.ForwardStash(local)) {
      if (t.KeptUnder(c.recompute)) r.expected_stash_bytes += 4 * t.Elements();
    }
  }
  const std::vector<int64_t> positions = SequencePositions(base, local.seq);
  Tensor targets =
      IdsFromHost(compute, {kBatch, local.seq},
                  TakeColumns(RandomIds(kBatch * kSeq, model.vocab_size, 11), positions));
  Tensor x = IdsFromHost(compute, {kBatch, local.seq},
                         TakeColumns(RandomIds(kBatch * kSeq, model.vocab_size, 12), positions));
  for (auto& layer : layers) x = layer->Forward(0, std::move(x), &targets);
  for (auto& layer : layers) r.stash_bytes += layer->StashBytes(0);
  r.result.y = ToHost(compute, x);
  Tensor dy = FromHost(compute, {1}, {1.0f});
  for (size_t i = layers.size(); i-- > 0;) dy = layers[i]->BackwardInput(0, std::move(dy));
  for (auto& layer : layers) {
    layer->BackwardWeight(0);
    for (Parameter p : layer->Parameters()) {
      r.result.grads.push_back({p.grad->shape(), ToHost(compute, *p.grad)});
      p.value = p.grad = nullptr;
      r.result.params.push_back(p);
    }
  }
  return r;
}

// The full gradient of parameter k: the tp shards of each cp rank joined (partial ones summed,
// as GradSync sums them over tp), then summed over the cp ranks (GradSync's dp × cp group).
std::vector<float> FullGradient(const std::vector<CpRankResult>& ranks, const RankMap& map,
                                size_t k) {
  std::vector<float> sum;
  for (int rank : map.CpGroup(0)) {
    std::vector<HostTensor> shards;
    for (int peer : map.TpGroup(rank)) shards.push_back(ranks[peer].result.grads[k]);
    const Parameter& p = ranks[rank].result.params[k];
    HostTensor full = shards[0];
    if (p.tp_partial_grad) {
      for (size_t s = 1; s < shards.size(); ++s) {
        for (size_t i = 0; i < full.values.size(); ++i) full.values[i] += shards[s].values[i];
      }
    } else if (p.slice.axis != SliceAxis::kFull) {
      StatusOr<HostTensor> joined = ConcatenateShards(shards, p.slice.axis);
      EXPECT_TRUE(joined.ok()) << joined.status().ToString();
      if (joined.ok()) full = *joined;
    }
    if (sum.empty()) sum.assign(full.values.size(), 0.0f);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += full.values[i];
  }
  return sum;
}

class ContextParallelTest : public testing::TestWithParam<CpCase> {};

TEST_P(ContextParallelTest, SameLossAndGradientsAsOneRank) {
  const CpCase& c = GetParam();
  const ModelSpec model = CaseModel(c);
  LayerContext one;
  one.seed = 42;
  one.recompute = c.recompute;
  const CpRankResult reference = RunModel(model, c, one);
  constexpr int kCp = 2;
  const RankMap map = *RankMap::Create(c.tp, kCp, {1});
  std::vector<CpRankResult> ranks(static_cast<size_t>(map.NumRanks()));
  Status status = RunInProcess(map.NumRanks(), [&](Comm& comm) -> Status {
    const MeshCoords coords = map.Coords(comm.Rank());
    TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> tp_comm, comm.Split(map.TpGroup(comm.Rank())));
    TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> cp_comm, comm.Split(map.CpGroup(comm.Rank())));
    LayerContext context = one;
    if (c.tp > 1) {
      context.tp_comm = tp_comm.get();
      context.tp_rank = coords.tp;
      context.tp_size = c.tp;
      context.sequence_parallel = true;
    }
    context.cp_comm = cp_comm.get();
    context.cp_rank = coords.cp;
    context.cp_size = kCp;
    ranks[static_cast<size_t>(comm.Rank())] = RunModel(model, c, context);
    return Status::Ok();
  });
  ASSERT_TRUE(status.ok()) << status.ToString();
  for (const CpRankResult& r : ranks) {
    EXPECT_LE(RelativeDifference(r.result.y, reference.result.y), 1e-5);
    EXPECT_EQ(r.stash_bytes, r.expected_stash_bytes);
  }
  EXPECT_EQ(reference.stash_bytes, reference.expected_stash_bytes);
  for (size_t k = 0; k < reference.result.grads.size(); ++k) {
    EXPECT_LE(RelativeDifference(FullGradient(ranks, map, k), reference.result.grads[k].values),
              1e-5)
        << reference.result.params[k].name << " (parameter " << k << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ContextParallelTest,
                         testing::Values(CpCase{false, 1}, CpCase{true, 1}, CpCase{false, 2},
                                         CpCase{true, 2},
                                         CpCase{false, 1, RecomputeMode::kSelective},
                                         CpCase{true, 1, RecomputeMode::kSelective},
                                         CpCase{false, 2, RecomputeMode::kFull},
                                         CpCase{true, 2, RecomputeMode::kFull}),
                         CaseName);

// The cp collectives a block issues are the cost model's (LayerCost::cp_fwd, cp_bwd), call for
// call and byte for byte (fp32), in every recompute mode: a full recompute's rerun forward and
// the backward share one gather.
class CpTrafficTest : public testing::TestWithParam<CpCase> {};

TEST_P(CpTrafficTest, IsWhatTheCostModelCounts) {
  const CpCase& c = GetParam();
  const ModelSpec model = CaseModel(c);
  const LayerKind kind = c.llama ? LayerKind::kLlamaBlock : LayerKind::kGptBlock;
  const LayerCost cost = AnalyticLayerCost(
      model, kind, {.micro_batch = kBatch, .seq_len = kSeq, .recompute = c.recompute, .cp = 2});
  Status status = RunInProcess(2, [&](Comm& comm) -> Status {
    TRIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Comm> group, comm.Split({0, 1}));
    CountingComm counting(std::move(group));
    CpuCompute compute;
    LayerContext context{
        .compute = &compute, .seed = 42, .layer_index = 1, .recompute = c.recompute};
    context.cp_comm = &counting;
    context.cp_rank = comm.Rank();
    context.cp_size = 2;
    std::unique_ptr<Layer> layer = MakeLayer(model, kind, context);
    LayerInput input = MakeInput(model, kind, kBatch, kSeq / 2, 9 + comm.Rank());
    Tensor y = layer->Forward(0, ToTensor(compute, input));
    EXPECT_EQ(counting.all_gathers().calls, cost.cp_fwd.all_gather.count);
    EXPECT_EQ(counting.all_gathers().bytes, cost.cp_fwd.all_gather.bytes);
    EXPECT_EQ(counting.reduce_scatters().calls, 0);
    counting.Reset();
    layer->BackwardInput(0, FromHost(compute, y.shape(), RandomValues(y.numel(), 1.0f, 10)));
    layer->BackwardWeight(0);
    EXPECT_EQ(counting.all_gathers().calls, cost.cp_bwd.all_gather.count);
    EXPECT_EQ(counting.all_gathers().bytes, cost.cp_bwd.all_gather.bytes);
    EXPECT_EQ(counting.reduce_scatters().calls, cost.cp_bwd.reduce_scatter.count);
    EXPECT_EQ(counting.reduce_scatters().bytes, cost.cp_bwd.reduce_scatter.bytes);
    return Status::Ok();
  });
  ASSERT_TRUE(status.ok()) << status.ToString();
}

INSTANTIATE_TEST_SUITE_P(Blocks, CpTrafficTest,
                         testing::Values(CpCase{false, 1}, CpCase{true, 1},
                                         CpCase{false, 1, RecomputeMode::kSelective},
                                         CpCase{true, 1, RecomputeMode::kSelective},
                                         CpCase{false, 1, RecomputeMode::kFull},
                                         CpCase{true, 1, RecomputeMode::kFull}),
                         CaseName);

}  // namespace
}  // namespace trident
