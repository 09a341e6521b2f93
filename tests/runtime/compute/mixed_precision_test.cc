// Mixed precision on the CPU backend: a GEMM's output and the accumulated weight gradients
// (dbias, dgamma, dbeta, dtable) in fp32 beside bf16 operands, as Megatron's bf16 mode keeps its
// gradients. Compute widens such a call, so each fp32 accumulator must equal, bit for bit, the
// all-fp32 call on the same (bf16-representable) values, and a bf16 output the fp32 one rounded
// once.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "cuda_ops_harness.h"
#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

// A bf16 tensor and an fp32 tensor holding the same random bf16-representable values.
struct Pair {
  Tensor bf16;
  Tensor fp32;
};

Pair Random(CpuCompute& cpu, std::vector<int64_t> shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(NumElements(shape)));
  for (float& v : values) v = RoundToBf16(normal(gen));
  Pair p{cpu.Allocate(shape, ElementType::kBf16), cpu.Allocate(shape)};
  cpu.CopyFromHost(std::span<const float>(values), p.fp32);
  cpu.Cast(p.fp32, p.bf16);
  return p;
}

// Two fp32 accumulators starting from the same values: one beside bf16 operands, one beside
// their fp32 twins.
Pair Accumulators(CpuCompute& cpu, std::vector<int64_t> shape, uint32_t seed) {
  Pair start = Random(cpu, shape, seed);
  Pair out{cpu.Allocate(shape), cpu.Allocate(shape)};
  cpu.Copy(start.fp32, out.bf16);
  cpu.Copy(start.fp32, out.fp32);
  return out;
}

void ExpectSame(CpuCompute& cpu, const Pair& accumulators, const char* what) {
  EXPECT_EQ(cpu.CopyToHost(accumulators.bf16), cpu.CopyToHost(accumulators.fp32)) << what;
}

TEST(MixedPrecisionTest, GemmAccumulatesBf16ProductsIntoFp32) {
  CpuCompute cpu;
  Pair dy = Random(cpu, {24, 16}, 1);
  Pair x = Random(cpu, {24, 8}, 2);
  Pair dw = Accumulators(cpu, {16, 8}, 3);
  cpu.Gemm(true, false, 1.0f, dy.bf16, x.bf16, 1.0f, dw.bf16);
  cpu.Gemm(true, false, 1.0f, dy.fp32, x.fp32, 1.0f, dw.fp32);
  ExpectSame(cpu, dw, "dw");
}

TEST(MixedPrecisionTest, BiasAndEmbeddingGradientsAccumulateInFp32) {
  CpuCompute cpu;
  Pair dy = Random(cpu, {6, 4, 8}, 4);
  Pair dbias = Accumulators(cpu, {8}, 5);
  cpu.BiasGrad(dy.bf16, dbias.bf16);
  cpu.BiasGrad(dy.fp32, dbias.fp32);
  ExpectSame(cpu, dbias, "dbias");

  Tensor ids = cpu.Allocate({24}, ElementType::kInt32);
  std::vector<int32_t> id_values(24);
  for (size_t i = 0; i < id_values.size(); ++i) id_values[i] = static_cast<int32_t>(i * 7 % 5);
  cpu.CopyFromHost(std::span<const int32_t>(id_values), ids);
  Pair dtable = Accumulators(cpu, {5, 8}, 6);
  cpu.EmbeddingBackward(ids, dy.bf16, dtable.bf16);
  cpu.EmbeddingBackward(ids, dy.fp32, dtable.fp32);
  ExpectSame(cpu, dtable, "dtable");
}

TEST(MixedPrecisionTest, NormGradientsAccumulateInFp32AndDxIsRoundedOnce) {
  CpuCompute cpu;
  Pair x = Random(cpu, {12, 16}, 7);
  Pair gamma = Random(cpu, {16}, 8);
  Pair beta = Random(cpu, {16}, 9);
  Pair dy = Random(cpu, {12, 16}, 10);
  Tensor mean = cpu.Allocate({12});
  Tensor rstd = cpu.Allocate({12});
  Tensor y = cpu.Allocate({12, 16});
  cpu.LayerNorm(x.fp32, gamma.fp32, beta.fp32, 1e-5f, y, mean, rstd);
  Pair dgamma = Accumulators(cpu, {16}, 11);
  Pair dbeta = Accumulators(cpu, {16}, 12);
  Pair dx{cpu.Allocate({12, 16}, ElementType::kBf16), cpu.Allocate({12, 16})};
  cpu.LayerNormBackward(x.bf16, gamma.bf16, mean, rstd, dy.bf16, dx.bf16, dgamma.bf16, dbeta.bf16);
  cpu.LayerNormBackward(x.fp32, gamma.fp32, mean, rstd, dy.fp32, dx.fp32, dgamma.fp32, dbeta.fp32);
  ExpectSame(cpu, dgamma, "layer norm dgamma");
  ExpectSame(cpu, dbeta, "layer norm dbeta");
  Tensor dx_widened = cpu.Allocate({12, 16});
  cpu.Cast(dx.bf16, dx_widened);
  std::vector<float> want = cpu.CopyToHost(dx.fp32);
  for (float& v : want) v = RoundToBf16(v);
  EXPECT_EQ(cpu.CopyToHost(dx_widened), want) << "layer norm dx";

  cpu.RmsNorm(x.fp32, gamma.fp32, 1e-5f, y, rstd);
  Pair rms_dgamma = Accumulators(cpu, {16}, 13);
  cpu.RmsNormBackward(x.bf16, gamma.bf16, rstd, dy.bf16, dx.bf16, rms_dgamma.bf16);
  cpu.RmsNormBackward(x.fp32, gamma.fp32, rstd, dy.fp32, dx.fp32, rms_dgamma.fp32);
  ExpectSame(cpu, rms_dgamma, "rms norm dgamma");
}

// Only accumulators may be fp32 beside bf16 operands; an input of another type is a bug.
TEST(MixedPrecisionDeathTest, AnFp32OperandBesideBf16OnesAborts) {
  CpuCompute cpu;
  Tensor a = cpu.Allocate({4, 4}, ElementType::kBf16);
  Tensor b = cpu.Allocate({4, 4});
  Tensor c = cpu.Allocate({4, 4});
  EXPECT_DEATH(cpu.Gemm(false, false, 1.0f, a, b, 0.0f, c), "b .* must be floating point");
  Tensor dy = cpu.Allocate({4, 4});
  Tensor dbias = cpu.Allocate({4}, ElementType::kBf16);
  EXPECT_DEATH(cpu.BiasGrad(dy, dbias), "dbias_C .* must be fp32 or of the type of dy_NC");
}

}  // namespace
}  // namespace trident
