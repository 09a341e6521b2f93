// Tensor parallelism over MPI: every rank of an mpirun job (ctest runs 2 and 4 ranks, the world
// being one tp group) builds its shard of each layer kind on the world communicator and checks,
// against the tp = 1 layer it also runs locally, its output, its input gradient and its slice of
// every weight gradient, to a relative difference max|a − b| / max|b| ≤ 1e-5 (as the in-process
// tensor_parallel_test does with threads; both use RunOneRank of layer_test_util.h).
//
// The harness (output from rank 0, failures agreed by all ranks) is tests/runtime/mpi_gtest.
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "models/layer_cost.h"
#include "tests/runtime/layers/layer_test_util.h"
#include "tests/runtime/mpi_gtest/mpi_gtest.h"

namespace trident {
namespace {

struct MpiTpCase {
  std::string name;
  LayerKind kind;
  RecomputeMode recompute = RecomputeMode::kNone;
};
void PrintTo(const MpiTpCase& c, std::ostream* os) { *os << c.name; }

// The checks of one case on this rank (its ASSERTs return here, before the agreement).
void CheckAgainstOneRank(const MpiTpCase& c) {
  Comm& world = mpi_gtest::World();
  const int tp = world.Size(), rank = world.Rank();
  RankResult reference = RunOneRank(c.kind, c.recompute, nullptr, 1, 0);
  RankResult here = RunOneRank(c.kind, c.recompute, &world, tp, rank);
  EXPECT_LE(RelativeDifference(here.y, reference.y), 1e-5) << "output";
  EXPECT_LE(RelativeDifference(here.dx, reference.dx), 1e-5) << "input gradient";
  // The cost model counts ceil(V/tp) vocabulary rows on every rank (Megatron's padded split);
  // the last ranks hold fewer real rows, so only rank 0 holds exactly that many.
  LayerShape shape;
  shape.micro_batch = 2;
  shape.seq_len = 4;
  shape.tp = tp;
  const int64_t expected_params = AnalyticLayerCost(ModelFor(c.kind), c.kind, shape).params;
  EXPECT_LE(here.param_count, expected_params);
  if (rank == 0) {
    EXPECT_EQ(here.param_count, expected_params);
  }
  ASSERT_EQ(here.grads.size(), reference.grads.size());
  for (size_t k = 0; k < here.grads.size(); ++k) {
    const Parameter& p = here.params[k];
    EXPECT_EQ(p.name, reference.params[k].name);
    EXPECT_EQ(p.full_shape, reference.grads[k].shape) << p.name;
    EXPECT_EQ(p.slice, ShardSlice(p.full_shape, p.slice.axis, tp, rank)) << p.name;
    ASSERT_TRUE(CheckSlice(reference.grads[k].shape, p.slice).ok()) << p.name;
    HostTensor expected = TakeSlice(reference.grads[k], p.slice);
    EXPECT_EQ(here.grads[k].shape, expected.shape) << p.name;
    EXPECT_LE(RelativeDifference(here.grads[k].values, expected.values), 1e-5)
        << p.name << " (" << p.slice.ToString() << ")";
  }
}

class MpiTensorParallelTest : public ::testing::TestWithParam<MpiTpCase> {};

TEST_P(MpiTensorParallelTest, MatchesOneRank) {
  CheckAgainstOneRank(GetParam());
  mpi_gtest::AgreeOnFailure(HasFailure());
}

INSTANTIATE_TEST_SUITE_P(
    Layers, MpiTensorParallelTest,
    ::testing::Values(
        MpiTpCase{"embedding", LayerKind::kEmbedding},
        MpiTpCase{"final_norm", LayerKind::kFinalNorm}, MpiTpCase{"lm_head", LayerKind::kLmHead},
        MpiTpCase{"mlp_block", LayerKind::kMlpBlock}, MpiTpCase{"gpt_block", LayerKind::kGptBlock},
        MpiTpCase{"gpt_block_selective_recompute", LayerKind::kGptBlock, RecomputeMode::kSelective},
        MpiTpCase{"gpt_block_full_recompute", LayerKind::kGptBlock, RecomputeMode::kFull},
        MpiTpCase{"llama_block", LayerKind::kLlamaBlock}),
    [](const ::testing::TestParamInfo<MpiTpCase>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace trident

int main(int argc, char** argv) { return trident::mpi_gtest::Main("layers_mpi_test", argc, argv); }
