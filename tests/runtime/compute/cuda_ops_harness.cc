// The harness of cuda_ops_test: see cuda_ops_harness.h.
#include "cuda_ops_harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "compute_test_util.h"

namespace trident {

float RoundToBf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return std::bit_cast<float>((bits | 0x00400000u) & 0xFFFF0000u);
  }
  const uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
  return std::bit_cast<float>(rounded & 0xFFFF0000u);
}

double Bound(Family family, ElementType stored) {
  const bool bf16 = stored == ElementType::kBf16;
  switch (family) {
    case Family::kExact:
      return 0.0;
    case Family::kElementwise:
      return bf16 ? 8e-3 : 1e-5;
    case Family::kReduction:
      return bf16 ? 1e-2 : 3e-5;
    case Family::kScatterAdd:
      return bf16 ? 1.6e-2 : 3e-5;
    case Family::kWideReduction:
    case Family::kGemm:
      return bf16 ? 1e-2 : 1e-4;
    case Family::kOptimizer:
      return 1e-5;
  }
  return 0.0;
}

Tensor OpContext::Input(std::vector<int64_t> shape, std::vector<float> values) {
  if (round_to_bf16_) {
    for (float& v : values) v = RoundToBf16(v);
  }
  Tensor fp32 = Upload(compute_, shape, values);
  if (type_ == ElementType::kFp32) return fp32;
  Tensor t = compute_.Allocate(std::move(shape), type_);
  compute_.Cast(fp32, t);
  return t;
}

Tensor OpContext::Garbage(std::vector<int64_t> shape) {
  Tensor t = compute_.Allocate(std::move(shape), type_);
  compute_.Fill(kNan, t);
  return t;
}

Tensor OpContext::Fp32(std::vector<int64_t> shape, const std::vector<float>& values) {
  return Upload(compute_, std::move(shape), values);
}

Tensor OpContext::Fp32Garbage(std::vector<int64_t> shape) {
  Tensor t = compute_.Allocate(std::move(shape));
  compute_.Fill(kNan, t);
  return t;
}

Tensor OpContext::Ids(std::vector<int64_t> shape, const std::vector<int32_t>& ids) {
  return UploadIds(compute_, std::move(shape), ids);
}

void OpContext::Output(std::string name, const Tensor& t) {
  outputs_.push_back({std::move(name), ReadAsFp32(t), false});
}

void OpContext::OutputFp32(std::string name, const Tensor& t) {
  ASSERT_EQ(t.type(), ElementType::kFp32) << name;
  outputs_.push_back({std::move(name), Download(compute_, t), true});
}

void OpContext::OutputAsStored(std::string name, std::vector<float> values) {
  if (round_to_bf16_) {
    for (float& v : values) v = RoundToBf16(v);
  }
  outputs_.push_back({std::move(name), std::move(values), false});
}

std::vector<float> OpContext::ReadAsFp32(const Tensor& t) {
  if (t.type() == ElementType::kFp32) return Download(compute_, t);
  Tensor fp32 = compute_.Allocate(t.shape());
  compute_.Cast(t, fp32);
  return Download(compute_, fp32);
}

void PrintTo(const CaseParam& param, std::ostream* os) {
  *os << param.op->name << " " << ElementTypeName(param.type);
}

Agreement Compare(const std::vector<float>& cuda, const std::vector<float>& cpu) {
  Agreement result;
  for (float v : cpu) {
    if (std::isfinite(v)) result.scale = std::max(result.scale, std::abs(double{v}));
  }
  result.scale = std::max(result.scale, 1e-6);
  for (size_t i = 0; i < cpu.size(); ++i) {
    const bool finite = std::isfinite(cuda[i]) && std::isfinite(cpu[i]);
    const double diff = finite ? std::abs(double{cuda[i]} - double{cpu[i]})
                               : std::numeric_limits<double>::infinity();
    if (diff / result.scale > result.error) {
      result.error = diff / result.scale;
      result.worst = i;
    }
  }
  return result;
}

void ExpectAgreement(const OpCase& op, ElementType type, const OpOutput& cuda,
                     const OpOutput& cpu) {
  ASSERT_EQ(cuda.name, cpu.name) << op.name;
  ASSERT_EQ(cuda.values.size(), cpu.values.size()) << op.name << " " << cuda.name;
  const ElementType stored = cuda.fp32_by_contract ? ElementType::kFp32 : type;
  const double bound = Bound(op.family, stored);
  const Agreement a = Compare(cuda.values, cpu.values);
  const std::string what = op.name + " " + ElementTypeName(type) + " " + cuda.name;
  if (op.family == Family::kExact) {
    std::printf("EXACT %s error %.3e\n", what.c_str(), a.error);
  } else {
    std::printf("AGREE %s error %.3e bound %.1e\n", what.c_str(), a.error, bound);
  }
  if (cpu.values.empty()) return;
  EXPECT_LE(a.error, bound) << what << ": normalized error " << a.error << " > bound " << bound
                            << "; worst element " << a.worst << ": cuda " << cuda.values[a.worst]
                            << ", cpu " << cpu.values[a.worst] << " (max |cpu| " << a.scale << ")";
}

}  // namespace trident
