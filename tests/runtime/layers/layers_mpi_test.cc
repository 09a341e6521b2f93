// Tensor parallelism over MPI: every rank of an mpirun job (ctest runs 2 and 4 ranks, the world
// being one tp group) builds its shard of each layer kind on the world communicator and checks,
// against the tp = 1 layer it also runs locally, its output, its input gradient and its slice of
// every weight gradient, to a relative difference max|a − b| / max|b| ≤ 1e-5 (as the in-process
// tensor_parallel_test does with threads; both use RunOneRank of layer_test_util.h).
//
// Harness as in tests/runtime/comm/comm_mpi_test.cc: rank 0 prints gtest's usual output, the
// other ranks only their failures tagged with their rank; after each test the ranks agree, on a
// communicator of their own, whether any of them failed, and fail it together (--gtest_fail_fast
// on by default). The exit status is non-zero on every rank if any rank failed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "models/layer_cost.h"
#include "runtime/comm/comm_factory.h"
#include "tests/runtime/layers/layer_test_util.h"

namespace trident {
namespace {

// Set by main for the tests (a test harness; the library itself has no globals).
struct Job {
  Comm* world = nullptr;    // the tp group the layers run on
  Comm* harness = nullptr;  // the harness's own agreement, apart from the layers' traffic
};
Job job;

// Stands in for gtest's printer on ranks other than 0: prints failures only, with the rank.
// (It must not ask gtest for the current test inside OnTestPartResult: gtest holds its lock
// there, so it remembers the name from OnTestStart.)
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}

  void OnTestStart(const ::testing::TestInfo& test) override {
    test_name_ = std::string(test.test_suite_name()) + "." + test.name();
  }

  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s: %s:%d: Failure\n%s\n", rank_, test_name_.c_str(),
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
  std::string test_name_;
};

// The number of ranks that report `failed`, or all of them if the ranks cannot agree.
int CountFailedRanks(Comm& comm, bool failed) {
  std::vector<float> count = {failed ? 1.0f : 0.0f};
  if (!comm.AllReduceSum(count).ok()) return comm.Size();
  return static_cast<int>(count[0]);
}

// Ends every test: all ranks learn whether any of them failed it, and fail it too.
void AgreeOnFailure(bool failed_here) {
  int failed = CountFailedRanks(*job.harness, failed_here);
  if (failed > 0 && !failed_here) {
    ADD_FAILURE() << failed << " other rank(s) failed this test; see their [rank N] lines";
  }
}

struct MpiTpCase {
  std::string name;
  LayerKind kind;
  RecomputeMode recompute = RecomputeMode::kNone;
};
void PrintTo(const MpiTpCase& c, std::ostream* os) { *os << c.name; }

// The checks of one case on this rank (its ASSERTs return here, before the agreement).
void CheckAgainstOneRank(const MpiTpCase& c) {
  Comm& world = *job.world;
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
  AgreeOnFailure(HasFailure());
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

void PrintOnlyFromRankZero(int rank) {
  if (rank == 0) return;
  ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new FailurePrinter(rank));
}

StatusOr<std::unique_ptr<Comm>> MakeWorld(std::chrono::milliseconds collective_timeout) {
  CommOptions options;
  options.collective_timeout = collective_timeout;
  return MakeWorldComm("mpi", options);
}

int Run() {
  // The harness waits longer than the layers' collectives, so a rank held up by one still joins
  // the agreement in time.
  StatusOr<std::unique_ptr<Comm>> world = MakeWorld(std::chrono::seconds(10));
  StatusOr<std::unique_ptr<Comm>> harness = MakeWorld(std::chrono::seconds(25));
  if (!world.ok() || !harness.ok()) {
    Status status = world.ok() ? harness.status() : world.status();
    std::fprintf(stderr, "layers_mpi_test: %s\n", status.ToString().c_str());
    return 2;
  }
  job = Job{world->get(), harness->get()};
  PrintOnlyFromRankZero(job.world->Rank());
  bool failed = RUN_ALL_TESTS() != 0;
  int failed_ranks = CountFailedRanks(*job.harness, failed);
  if (job.world->Rank() == 0 && failed_ranks > 0) {
    std::fprintf(stderr, "layers_mpi_test: %d of %d ranks failed\n", failed_ranks,
                 job.world->Size());
  }
  job = Job{};
  return failed_ranks > 0 ? 1 : 0;
}

}  // namespace
}  // namespace trident

int main(int argc, char** argv) {
  GTEST_FLAG_SET(fail_fast, true);  // before InitGoogleTest, so the command line can override it
  ::testing::InitGoogleTest(&argc, argv);
  return trident::Run();
}
