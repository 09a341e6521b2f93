// CudaCompute against CpuCompute, op by op: one table of (op, shape) cases, each run on both
// backends from the same seeded host data, in fp32 and in bf16, one ctest entry per (case,
// dtype). A case builds its inputs through an OpContext, runs its ops and reads its outputs
// back; each output must agree within the bound of the case's op family and dtype. The harness
// and the bounds, with their reasons, are documented in cuda_ops_harness.h; the cases are in
// cuda_op_cases.cc and cuda_op_cases_norm_loss.cc.
//
// Without a usable GPU, or in a build without CUDA, every CUDA test skips (ctest reports it
// skipped); CudaFactoryTest and RoundToBf16Test run everywhere.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compute_test_util.h"
#include "core/status.h"
#include "cuda_ops_harness.h"
#include "runtime/compute/compute_factory.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

// --- The tests -----------------------------------------------------------------------------

std::vector<CaseParam> CaseParams() {
  std::vector<CaseParam> params;
  for (const OpCase& op : AllOpCases()) {
    params.push_back({&op, ElementType::kFp32});
    if (!op.fp32_only) params.push_back({&op, ElementType::kBf16});
  }
  return params;
}

// The CUDA backend for the whole run, made on first use and never destroyed (tearing down a
// CUDA context from a static destructor at exit can fail); null, with the reason, without one.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Cuda().compute == nullptr) GTEST_SKIP() << "no CUDA device: " << Cuda().error;
  }
  Compute& cuda() { return *Cuda().compute; }
};

class CudaOpsTest : public CudaTest, public ::testing::WithParamInterface<CaseParam> {
 protected:
  std::vector<OpOutput> RunOnCuda(const OpCase& op, ElementType type) {
    OpContext ctx(cuda(), type, /*round_to_bf16=*/false);
    op.run(ctx);
    return ctx.TakeOutputs();
  }
  // fp32 on inputs rounded to bf16 in a bf16 case.
  static std::vector<OpOutput> RunOnCpu(const OpCase& op, ElementType type) {
    CpuCompute cpu;
    OpContext ctx(cpu, ElementType::kFp32, /*round_to_bf16=*/type == ElementType::kBf16);
    op.run(ctx);
    return ctx.TakeOutputs();
  }
};

TEST_P(CudaOpsTest, MatchesCpu) {
  const OpCase& op = *GetParam().op;
  const ElementType type = GetParam().type;
  const std::vector<OpOutput> on_cuda = RunOnCuda(op, type);
  EXPECT_EQ(cuda().memory_stats().current_bytes, 0) << "tensors left alive by " << op.name;
  const std::vector<OpOutput> on_cpu = RunOnCpu(op, type);
  ASSERT_EQ(on_cuda.size(), on_cpu.size());
  ASSERT_FALSE(on_cpu.empty()) << op.name << " has no outputs";
  for (size_t i = 0; i < on_cuda.size(); ++i) ExpectAgreement(op, type, on_cuda[i], on_cpu[i]);
}

std::string CaseParamName(const ::testing::TestParamInfo<CaseParam>& param) {
  return param.param.op->name + "_" + ElementTypeName(param.param.type);
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaOpsTest, ::testing::ValuesIn(CaseParams()), CaseParamName);

// (current, peak) bytes, relative to the start, after each step of a fixed sequence of
// allocations, moves, views and frees.
std::vector<std::pair<int64_t, int64_t>> AllocationTrace(Compute& compute) {
  compute.ResetPeak();
  const int64_t base = compute.memory_stats().current_bytes;
  std::vector<std::pair<int64_t, int64_t>> trace;
  auto record = [&] {
    const MemoryStats stats = compute.memory_stats();
    trace.emplace_back(stats.current_bytes - base, stats.peak_bytes - base);
  };
  {
    Tensor a = compute.Allocate({3, 5});  // 60 bytes: not a multiple of any rounding
    record();
    Tensor ids = compute.Allocate({7}, ElementType::kInt32);
    record();
    Tensor empty = compute.Allocate({0, 4});
    record();
    {
      Tensor big = compute.Allocate({1000, 3});
      record();
    }
    record();                         // big freed: current drops, peak stays
    Tensor view = a.View(5, {2, 5});  // a view holds no memory
    record();
    compute.ResetPeak();
    record();
    Tensor moved = std::move(a);  // a move neither frees nor allocates
    record();
  }
  record();
  return trace;
}

TEST_F(CudaTest, MemoryAccountingMatchesCpu) {
  CpuCompute cpu;
  const std::vector<std::pair<int64_t, int64_t>> expected = {
      {60, 60},    {88, 88}, {88, 88}, {12088, 12088}, {88, 12088},
      {88, 12088}, {88, 88}, {88, 88}, {0, 88}};
  EXPECT_EQ(AllocationTrace(cpu), expected);
  EXPECT_EQ(AllocationTrace(cuda()), expected);
  // bf16 tensors count 2 bytes an element.
  const int64_t before = cuda().memory_stats().current_bytes;
  Tensor half = cuda().Allocate({9}, ElementType::kBf16);
  EXPECT_EQ(cuda().memory_stats().current_bytes - before, 18);
}

// Marks are events on the compute stream: a GEMM between two takes time, read after one
// Synchronize; reversed marks give the negative; ClearMarks starts the indices again.
TEST_F(CudaTest, MarksTimeTheOpsBetweenThem) {
  Tensor a = cuda().Allocate({512, 512});
  Tensor c = cuda().Allocate({512, 512});
  cuda().ClearMarks();
  const int before = cuda().RecordMark();
  for (int i = 0; i < 4; ++i) cuda().Gemm(false, false, 1.0f, a, a, 0.0f, c);
  const int after = cuda().RecordMark();
  cuda().Synchronize();
  EXPECT_EQ(before, 0);
  EXPECT_EQ(after, 1);
  EXPECT_GT(cuda().MarkElapsedMs(before, after), 0.0);
  EXPECT_EQ(cuda().MarkElapsedMs(after, before), -cuda().MarkElapsedMs(before, after));
  cuda().ClearMarks();
  EXPECT_EQ(cuda().RecordMark(), 0);
}

// Runs everywhere: the host rounding that the CPU side of every bf16 case relies on.
TEST(RoundToBf16Test, RoundsToNearestEvenAndKeepsSpecialValues) {
  const float ulp = std::ldexp(1.0f, -7);                         // bf16 spacing in [1, 2)
  EXPECT_EQ(RoundToBf16(1.0f + ulp / 2), 1.0f);                   // tie: down to even
  EXPECT_EQ(RoundToBf16(1.0f + 3 * ulp / 2), 1.0f + 2 * ulp);     // tie: up to even
  EXPECT_EQ(RoundToBf16(1.0f + ulp / 2 + ulp / 64), 1.0f + ulp);  // above the tie
  EXPECT_EQ(RoundToBf16(-1.0f - ulp / 4), -1.0f);
  EXPECT_EQ(RoundToBf16(0.1f), 0.10009765625f);
  EXPECT_TRUE(std::signbit(RoundToBf16(-0.0f)));
  EXPECT_EQ(RoundToBf16(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(RoundToBf16(std::numeric_limits<float>::max()),
            std::numeric_limits<float>::infinity());  // past the largest bf16
  EXPECT_TRUE(std::isnan(RoundToBf16(kNan)));
  EXPECT_TRUE(std::isnan(RoundToBf16(std::bit_cast<float>(0x7F800001u))));  // low-bit NaN
}

// Runs everywhere: the factory makes a CUDA backend or says why not, naming the flag.
TEST(CudaFactoryTest, MakesCudaOrFailsWithFailedPrecondition) {
  StatusOr<std::unique_ptr<Compute>> cuda = MakeCompute({.device = "cuda"});
  if (cuda.ok()) {
    EXPECT_EQ((*cuda)->Describe().rfind("cuda:", 0), 0u) << (*cuda)->Describe();
    EXPECT_TRUE((*cuda)->Supports(ElementType::kBf16));
    EXPECT_EQ((*cuda)->memory_stats(), MemoryStats{});
  } else {
    EXPECT_EQ(cuda.status().code(), StatusCode::kFailedPrecondition) << cuda.status().message();
    EXPECT_NE(cuda.status().message().find("--device cuda"), std::string::npos)
        << cuda.status().message();
  }
}

}  // namespace
}  // namespace trident
