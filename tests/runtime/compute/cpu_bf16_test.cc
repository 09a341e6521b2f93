// CpuCompute in bf16, op by op, against itself in fp32: every bf16 case of the op table
// (cuda_op_cases*.cc) runs on bf16 tensors, whose ops Compute widens (fp32 stand-ins, each
// output rounded once), and in fp32 on the same inputs rounded to bf16 on the host. Each op
// computes the same fp32 result from the same values, so every bf16 output must be exactly the
// fp32 output rounded to nearest even (RoundToBf16), and the fp32-by-contract outputs
// (statistics, losses) exactly equal: the rounding a GPU kernel that loads bf16, computes in
// fp32 and stores bf16 applies. Cases that chain ops round between them on the bf16 side only,
// and are held to the family bounds of cuda_ops_harness.h instead.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cuda_ops_harness.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

std::vector<const OpCase*> Bf16Cases() {
  std::vector<const OpCase*> cases;
  for (const OpCase& op : AllOpCases()) {
    if (!op.fp32_only) cases.push_back(&op);
  }
  return cases;
}

std::vector<OpOutput> RunOnCpu(const OpCase& op, ElementType type) {
  CpuCompute cpu;
  OpContext ctx(cpu, type, /*round_to_bf16=*/type == ElementType::kFp32);
  op.run(ctx);
  EXPECT_EQ(cpu.memory_stats().current_bytes, 0) << "tensors left alive by " << op.name;
  return ctx.TakeOutputs();
}

// How many elements of `bf16` differ from `fp32` rounded (or, by contract, from `fp32`).
int64_t RoundingMismatches(const OpOutput& bf16, const OpOutput& fp32) {
  int64_t mismatches = 0;
  for (size_t i = 0; i < bf16.values.size(); ++i) {
    const float want = bf16.fp32_by_contract ? fp32.values[i] : RoundToBf16(fp32.values[i]);
    const float got = bf16.values[i];
    mismatches += !(got == want || (std::isnan(got) && std::isnan(want)));
  }
  return mismatches;
}

class CpuBf16Test : public ::testing::TestWithParam<const OpCase*> {};

TEST_P(CpuBf16Test, IsTheFp32ResultRoundedOnce) {
  const OpCase& op = *GetParam();
  const std::vector<OpOutput> bf16 = RunOnCpu(op, ElementType::kBf16);
  const std::vector<OpOutput> fp32 = RunOnCpu(op, ElementType::kFp32);
  ASSERT_EQ(bf16.size(), fp32.size());
  ASSERT_FALSE(bf16.empty()) << op.name << " has no outputs";
  for (size_t i = 0; i < bf16.size(); ++i) {
    ASSERT_EQ(bf16[i].values.size(), fp32[i].values.size()) << bf16[i].name;
    const int64_t mismatches = RoundingMismatches(bf16[i], fp32[i]);
    if (mismatches == 0) continue;
    ADD_FAILURE() << op.name << " " << bf16[i].name << ": " << mismatches << " of "
                  << bf16[i].values.size() << " elements are not the fp32 result rounded once";
  }
}

// The fp32 stand-ins of a widened op are workspace: a bf16 product counts its bf16 tensors only,
// 2 bytes an element, before, during and after.
TEST(CpuBf16MemoryTest, CountsTwoBytesAnElementAndNoStandIns) {
  CpuCompute cpu;
  Tensor a = cpu.Allocate({64, 32}, ElementType::kBf16);
  Tensor b = cpu.Allocate({32, 16}, ElementType::kBf16);
  Tensor c = cpu.Allocate({64, 16}, ElementType::kBf16);
  const int64_t bytes = (64 * 32 + 32 * 16 + 64 * 16) * 2;
  EXPECT_EQ(cpu.memory_stats().current_bytes, bytes);
  cpu.ResetPeak();
  cpu.Fill(0.5f, a);
  cpu.Fill(0.25f, b);
  cpu.Gemm(false, false, 1.0f, a, b, 0.0f, c);
  EXPECT_EQ(cpu.memory_stats(), (MemoryStats{bytes, bytes}));
  Tensor c32 = cpu.Allocate({64, 16});
  cpu.Cast(c, c32);
  EXPECT_EQ(cpu.CopyToHost(c32), std::vector<float>(64 * 16, 4.0f));  // 32 · 0.5 · 0.25
}

INSTANTIATE_TEST_SUITE_P(Ops, CpuBf16Test, ::testing::ValuesIn(Bf16Cases()),
                         [](const ::testing::TestParamInfo<const OpCase*>& param_info) {
                           return param_info.param->name;
                         });

}  // namespace
}  // namespace trident
