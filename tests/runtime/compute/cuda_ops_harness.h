// The harness of cuda_ops_test (cuda_ops_test.cc): runs one case of the op table
// (AllOpCases, cuda_op_cases.cc) on CudaCompute and on CpuCompute from the same seeded host
// data, and checks that each output agrees within the bound of the case's op family and dtype.
//
// A case builds its inputs through an OpContext, runs its ops and reads its outputs back as
// host floats. In a bf16 case the CUDA side uploads fp32 and Casts to bf16 tensors, and reads
// outputs back through a Cast to fp32; the CPU side runs in fp32 on inputs rounded to bf16 on
// the host first (RoundToBf16), so both sides see identical inputs and the reference is
// unrounded (CpuCompute's own bf16 path is that reference rounded once: cpu_bf16_test.cc). Saved
// statistics (mean_N, rstd_N), losses, ids and targets stay fp32 / int32 as compute.h says; the
// optimizers run in fp32 only (fp32 master buffers). Outputs that an op overwrites start as NaN, so
// an op that reads them fails; accumulating outputs start nonzero.
//
// Agreement, per output: the normalized error max_i |cuda_i − cpu_i| / max(max_i |cpu_i|, 1e-6)
// (any NaN or infinity counts as infinite) must be within the bound of the case's family and
// the output's element type. Unit roundoffs: u = 2^-24 for fp32; 2^-8 ≈ 3.9e-3 for bf16 (8
// significant bits: a bf16 store is off by up to 2^-8 of the value, 2^-9 at the top of a
// binade). The CPU side's outputs are not rounded, so a bf16 output differs by its rounding.
//
//   family          fp32   bf16    why
//   exact           0      0       copies, gathers, fills of a bf16 value, casts: no arithmetic,
//                                  and both sides round to bf16 to nearest even.
//   elementwise     1e-5   8e-3    a few fp32 operations per element; CUDA's expf/tanhf and
//                                  Eigen's vectorized exp/tanh/logistic differ by a few ulps,
//                                  which 1 − tanh² in GELU's derivative turns into ~3e-6 of the
//                                  largest output. bf16: each output is rounded once (<= 3.9e-3
//                                  of itself); 8e-3 is two such roundings.
//   reduction       3e-5   1e-2    sums of <= 1024 terms per row or 256 rows per column, in
//                                  other orders (block trees on the GPU, Eigen's packets on the
//                                  CPU): ~√n·u ≈ 2e-6 of the largest output in practice. bf16:
//                                  one rounding of the fp32 result.
//   scatter-add     3e-5   1.6e-2  EmbeddingBackward: both sides add rows in token order. bf16:
//                                  the GPU stores (rounds) after every row, and ids repeat up to
//                                  3 times here: <= 3 roundings of partial sums; a simulation
//                                  of the kernel over 20000 seeds stayed below 9e-3.
//   wide reduction  1e-4   1e-2    softmax and loss over a 50257-word vocabulary: the error of
//                                  the sum Z over 50257 terms (~√n·u ≈ 1e-5) reaches every
//                                  probability.
//   gemm            1e-4   1e-2    dot products of K <= 3072 terms in other orders (cuBLAS
//                                  tiles, possibly split-K, against Eigen's blocks): ~√K·u ≈
//                                  3e-6 of the largest output in practice, K·u ≈ 2e-4 of Σ|a·b|
//                                  at worst; TF32 (~1e-3) would fail it. bf16: exact products,
//                                  fp32 sums, one rounding of C, and a few more if cuBLAS rounds
//                                  split-K partial sums to bf16 (simulated: <= 5e-3 for 2 to 16
//                                  splits at K = 3072).
//   optimizer       1e-5   —       a handful of fp32 operations per element and step, 3 steps.
//
// The fp32-by-contract outputs of a bf16 case (mean_N, rstd_N, loss) get the fp32 bound: they
// are computed in fp32 from identical inputs. Every comparison prints
// "AGREE <case> <dtype> <output> error <e> bound <b>" (exact ones "EXACT <case> <dtype>
// <output> error <e>"), which scripts/gpu-check summarizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/compute/compute.h"

namespace trident {

inline constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// x rounded to the nearest bf16 (ties to even), as a float: the upper 16 bits of its pattern.
// NaNs stay NaN (quieted, sign kept); overflow rounds to infinity, as in __float2bfloat16.
float RoundToBf16(float x);

enum class Family {
  kExact,
  kElementwise,
  kReduction,
  kScatterAdd,
  kWideReduction,
  kGemm,
  kOptimizer
};

// The bound on the normalized error of an output stored as `stored` (see the top).
double Bound(Family family, ElementType stored);

struct OpOutput {
  std::string name;
  std::vector<float> values;
  bool fp32_by_contract = false;  // fp32 whatever the case's type (statistics, losses)
};

// What a case runs on: a backend, the element type of its float tensors (bf16 only on the CUDA
// side of a bf16 case), and whether host data is rounded to bf16 before upload (the CPU side
// of a bf16 case). Collects the case's outputs.
class OpContext {
 public:
  OpContext(Compute& compute, ElementType type, bool round_to_bf16)
      : compute_(compute), type_(type), round_to_bf16_(round_to_bf16) {}

  Compute& compute() { return compute_; }

  // A tensor of the working type holding `values` (rounded to bf16 in a bf16 case).
  Tensor Input(std::vector<int64_t> shape, std::vector<float> values);
  // A tensor of the working type full of NaN: an output the op must overwrite.
  Tensor Garbage(std::vector<int64_t> shape);
  // fp32 tensors whatever the case's type: statistics, losses, optimizer buffers. Not rounded.
  Tensor Fp32(std::vector<int64_t> shape, const std::vector<float>& values);
  Tensor Fp32Garbage(std::vector<int64_t> shape);
  Tensor Ids(std::vector<int64_t> shape, const std::vector<int32_t>& ids);

  // Records the values of an output of the working type (read through an fp32 Cast if bf16).
  void Output(std::string name, const Tensor& t);
  // Records an output that is fp32 by contract.
  void OutputFp32(std::string name, const Tensor& t);
  // Records host values as a store of the working type would leave them: rounded to bf16 on
  // the CPU side of a bf16 case (the expectation for a device Cast).
  void OutputAsStored(std::string name, std::vector<float> values);

  ElementType type() const { return type_; }
  std::vector<OpOutput> TakeOutputs() { return std::move(outputs_); }

 private:
  std::vector<float> ReadAsFp32(const Tensor& t);

  Compute& compute_;
  ElementType type_;
  bool round_to_bf16_;
  std::vector<OpOutput> outputs_;
};

struct OpCase {
  std::string name;  // letters, digits and '_' (a gtest parameter name)
  Family family;
  bool fp32_only;
  std::function<void(OpContext&)> run;
};

struct CaseParam {
  const OpCase* op;
  ElementType type;
};

void PrintTo(const CaseParam& param, std::ostream* os);

// The normalized error of `cuda` against `cpu` and where it is largest.
struct Agreement {
  double error = 0.0;
  size_t worst = 0;
  double scale = 0.0;  // max(max_i |cpu_i|, 1e-6)
};

Agreement Compare(const std::vector<float>& cuda, const std::vector<float>& cpu);

// Prints "AGREE <case> <dtype> <output> error <e> bound <b>" (or "EXACT <case> <dtype> <output>
// error <e>") and expects the error of `cuda` against `cpu` within the bound.
void ExpectAgreement(const OpCase& op, ElementType type, const OpOutput& cuda, const OpOutput& cpu);

// Every case, in table order: matrix products; elementwise ops, casts, bias ops, activations;
// softmax and norms; embedding and loss; optimizers. Made on first use, never destroyed.
const std::vector<OpCase>& AllOpCases();

}  // namespace trident
