#include "runtime/compute/compute.h"

#include <algorithm>
#include <variant>

#include "core/check.h"
#include "runtime/compute/compute_maps.h"
#include "runtime/compute/compute_widen.h"
#include "runtime/compute/op_check.h"

namespace trident {

Tensor Compute::Allocate(std::vector<int64_t> shape, ElementType type) {
  TRIDENT_CHECK(Supports(type)) << "Compute::Allocate: this backend has no "
                                << ElementTypeName(type) << " tensors";
  const int64_t bytes = NumElements(shape) * ElementBytes(type);
  void* data = DoAllocate(bytes);
  return Tensor(this, data, std::move(shape), type, /*owns=*/true);
}

void Compute::CopyFromHost(std::span<const float> host, Tensor& dst) {
  OpCheck(this, "CopyFromHost")
      .Floats({{"dst", dst}})
      .Numel({"dst", dst}, static_cast<int64_t>(host.size()));
  Widened w(this, /*mixed=*/true);  // the host holds fp32: another type goes through a cast
  DoCopyFromHost(host.data(), w.Out(dst));
}

void Compute::CopyFromHost(std::span<const int32_t> host, Tensor& dst) {
  OpCheck(this, "CopyFromHost")
      .OfType(ElementType::kInt32, {{"dst", dst}})
      .Numel({"dst", dst}, static_cast<int64_t>(host.size()));
  DoCopyFromHost(host.data(), dst);
}

void Compute::CopyToHost(const Tensor& src, std::span<float> host) {
  OpCheck(this, "CopyToHost")
      .Floats({{"src", src}})
      .Numel({"src", src}, static_cast<int64_t>(host.size()));
  Widened w(this, /*mixed=*/true);
  DoCopyToHost(w.In(src), host.data());
}

std::vector<float> Compute::CopyToHost(const Tensor& src) {
  std::vector<float> host(static_cast<size_t>(src.numel()));
  CopyToHost(src, std::span<float>(host));
  return host;
}

void Compute::CopyToHost(const Tensor& src, std::span<int32_t> host) {
  OpCheck(this, "CopyToHost")
      .OfType(ElementType::kInt32, {{"src", src}})
      .Numel({"src", src}, static_cast<int64_t>(host.size()));
  DoCopyToHost(src, host.data());
}

void Compute::Copy(const Tensor& src, Tensor& dst) {
  OpCheck(this, "Copy")
      .OfType(src.type(), {{"src", src}, {"dst", dst}})
      .SameNumel({{"src", src}, {"dst", dst}})
      .Disjoint({"dst", dst}, {"src", src});
  DoCast(src, dst);
}

void Compute::Cast(const Tensor& src, Tensor& dst) {
  OpCheck check(this, "Cast");
  check.Floats({{"src", src}}).Floats({{"dst", dst}});
  check.SameNumel({{"src", src}, {"dst", dst}}).Disjoint({"dst", dst}, {"src", src});
  DoCast(src, dst);
}

void Compute::Fill(float value, Tensor& dst) {
  OpCheck(this, "Fill").Floats({{"dst", dst}});
  Widened w(this);
  RunMap({FillMap{value}}, {&w.Out(dst)});
}

int Compute::RecordMark() {
  host_marks_.push_back(std::chrono::steady_clock::now());
  return static_cast<int>(host_marks_.size()) - 1;
}

double Compute::MarkElapsedMs(int from, int to) const {
  TRIDENT_CHECK(from >= 0 && to >= 0 && std::max(from, to) < static_cast<int>(host_marks_.size()))
      << "Compute::MarkElapsedMs: marks " << from << " and " << to << " of " << host_marks_.size();
  return std::chrono::duration<double, std::milli>(host_marks_[to] - host_marks_[from]).count();
}

void Compute::ClearMarks() { host_marks_.clear(); }

void Compute::RunMap(MapCall call, std::initializer_list<const Tensor*> operands) {
  const int expected = std::visit([](const auto& op) { return op.kOperands; }, call.op);
  TRIDENT_CHECK(static_cast<int>(operands.size()) == expected)
      << "Compute::RunMap: " << operands.size() << " operands for a map of " << expected;
  int k = 0;
  for (const Tensor* t : operands) call.data[k++] = const_cast<void*>(t->raw_data());
  call.type = (*operands.begin())->type();
  call.numel = (*operands.begin())->numel();
  if (call.numel > 0) DoMap(call);
}

void Compute::Gemm(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b,
                   float beta, Tensor& c) {
  BatchedGemm gemm;
  gemm.trans_a = trans_a;
  gemm.trans_b = trans_b;
  gemm.alpha = alpha;
  gemm.beta = beta;
  for (auto [layout, t] : {std::pair{&gemm.a, &a}, {&gemm.b, &b}, {&gemm.c, &c}}) {
    layout->rows = MatrixRows(*t);
    layout->cols = MatrixCols(*t);
    layout->ld = layout->cols;
  }
  GemmStridedBatched(gemm, a, b, c);
}

// op(A) is [M, K], op(B) is [K, N], C is [M, N].
void Compute::GemmStridedBatched(const BatchedGemm& gemm, const Tensor& a, const Tensor& b,
                                 Tensor& c) {
  const int64_t m = gemm.trans_a ? gemm.a.cols : gemm.a.rows;
  const int64_t k = gemm.trans_a ? gemm.a.rows : gemm.a.cols;
  const int64_t kb = gemm.trans_b ? gemm.b.cols : gemm.b.rows;
  const int64_t n = gemm.trans_b ? gemm.b.rows : gemm.b.cols;
  TRIDENT_CHECK(gemm.batch >= 1 && k == kb && gemm.c.rows == m && gemm.c.cols == n)
      << "Compute::Gemm: batch " << gemm.batch << " of op(A) [" << m << ", " << k << "] · op(B) ["
      << kb << ", " << n << "] into C [" << gemm.c.rows << ", " << gemm.c.cols << "] (trans_a "
      << gemm.trans_a << ", trans_b " << gemm.trans_b << "; a " << a.ToString() << ", b "
      << b.ToString() << ", c " << c.ToString() << ")";
  OpCheck(this, "Gemm")
      .Floats({{"a", a}, {"b", b}})
      .Accumulator({"c", c}, {"a", a})
      .Inside({"a", a}, gemm.a, gemm.batch)
      .Inside({"b", b}, gemm.b, gemm.batch)
      .Inside({"c", c}, gemm.c, gemm.batch)
      .NoOverlap({"c", c}, gemm.c, gemm.batch)
      .Disjoint({"c", c}, {"a", a})
      .Disjoint({"c", c}, {"b", b});
  Widened w(this, c.type() != a.type() && !TakesMixedGemm());
  DoGemmStridedBatched(gemm, w.In(a), w.In(b), w.Out(c));
}

void Compute::Add(const Tensor& a, const Tensor& b, Tensor& out) {
  OpCheck(this, "Add")
      .Floats({{"a", a}, {"b", b}, {"out", out}})
      .SameNumel({{"a", a}, {"b", b}, {"out", out}})
      .SameOrDisjoint({"out", out}, {"a", a})
      .SameOrDisjoint({"out", out}, {"b", b});
  Widened w(this);
  RunMap({AddMap{}}, {&w.In(a), &w.In(b), &w.Out(out)});
}

void Compute::Mul(const Tensor& a, const Tensor& b, Tensor& out) {
  OpCheck(this, "Mul")
      .Floats({{"a", a}, {"b", b}, {"out", out}})
      .SameNumel({{"a", a}, {"b", b}, {"out", out}})
      .SameOrDisjoint({"out", out}, {"a", a})
      .SameOrDisjoint({"out", out}, {"b", b});
  Widened w(this);
  RunMap({MulMap{}}, {&w.In(a), &w.In(b), &w.Out(out)});
}

void Compute::Axpy(float alpha, const Tensor& x, Tensor& y) {
  OpCheck(this, "Axpy")
      .Floats({{"x", x}, {"y", y}})
      .SameNumel({{"x", x}, {"y", y}})
      .Disjoint({"y", y}, {"x", x});
  Widened w(this);
  RunMap({AxpyMap{alpha}}, {&w.In(x), &w.Out(y)});
}

void Compute::Scale(float alpha, Tensor& x) {
  OpCheck(this, "Scale").Floats({{"x", x}});
  Widened w(this);
  RunMap({ScaleMap{alpha}}, {&w.Out(x)});
}

void Compute::AddBias(const Tensor& bias_C, Tensor& y_NC) {
  OpCheck(this, "AddBias")
      .Floats({{"y_NC", y_NC}, {"bias_C", bias_C}})
      .Numel({"bias_C", bias_C}, MatrixCols(y_NC))
      .Disjoint({"y_NC", y_NC}, {"bias_C", bias_C});
  Widened w(this);
  DoAddBias(w.In(bias_C), w.Out(y_NC));
}

void Compute::BiasGrad(const Tensor& dy_NC, Tensor& dbias_C) {
  OpCheck(this, "BiasGrad")
      .Floats({{"dy_NC", dy_NC}})
      .Accumulator({"dbias_C", dbias_C}, {"dy_NC", dy_NC})
      .Numel({"dbias_C", dbias_C}, MatrixCols(dy_NC))
      .Disjoint({"dbias_C", dbias_C}, {"dy_NC", dy_NC});
  Widened w(this, dbias_C.type() != dy_NC.type());
  DoBiasGrad(w.In(dy_NC), w.Out(dbias_C));
}

void Compute::Activation(ActivationKind f, const Tensor& x, Tensor& y) {
  OpCheck(this, "Activation")
      .Floats({{"x", x}, {"y", y}})
      .SameNumel({{"x", x}, {"y", y}})
      .SameOrDisjoint({"y", y}, {"x", x});
  Widened w(this);
  const MapOp op = f == ActivationKind::kGelu ? MapOp{GeluMap{}} : MapOp{SiluMap{}};
  RunMap({op}, {&w.In(x), &w.Out(y)});
}

void Compute::ActivationBackward(ActivationKind f, const Tensor& x, const Tensor& dy, Tensor& dx) {
  OpCheck(this, "ActivationBackward")
      .Floats({{"x", x}, {"dy", dy}, {"dx", dx}})
      .SameNumel({{"x", x}, {"dy", dy}, {"dx", dx}})
      .SameOrDisjoint({"dx", dx}, {"dy", dy})
      .Disjoint({"dx", dx}, {"x", x});
  Widened w(this);
  const MapOp op = f == ActivationKind::kGelu ? MapOp{GeluGradMap{}} : MapOp{SiluGradMap{}};
  RunMap({op}, {&w.In(x), &w.In(dy), &w.Out(dx)});
}

void Compute::SwiGlu(const Tensor& gate, const Tensor& up, Tensor& out) {
  OpCheck(this, "SwiGlu")
      .Floats({{"gate", gate}, {"up", up}, {"out", out}})
      .SameNumel({{"gate", gate}, {"up", up}, {"out", out}})
      .SameOrDisjoint({"out", out}, {"gate", gate})
      .SameOrDisjoint({"out", out}, {"up", up});
  Widened w(this);
  RunMap({SwiGluMap{}}, {&w.In(gate), &w.In(up), &w.Out(out)});
}

void Compute::SwiGluBackward(const Tensor& gate, const Tensor& up, const Tensor& dout,
                             Tensor& dgate, Tensor& dup) {
  OpCheck(this, "SwiGluBackward")
      .Floats({{"gate", gate}, {"up", up}, {"dout", dout}, {"dgate", dgate}, {"dup", dup}})
      .SameNumel({{"gate", gate}, {"up", up}, {"dout", dout}, {"dgate", dgate}, {"dup", dup}});
  for (const NamedTensor out : {NamedTensor{"dgate", dgate}, NamedTensor{"dup", dup}}) {
    OpCheck(this, "SwiGluBackward")
        .Disjoint(out, {"gate", gate})
        .Disjoint(out, {"up", up})
        .Disjoint(out, {"dout", dout});
  }
  OpCheck(this, "SwiGluBackward").Disjoint({"dgate", dgate}, {"dup", dup});
  Widened w(this);
  RunMap({SwiGluGradMap{}}, {&w.In(gate), &w.In(up), &w.In(dout), &w.Out(dgate), &w.Out(dup)});
}

}  // namespace trident
