// Compute: the interface between layer code and a device (CpuCompute: Eigen; CudaCompute: cuBLAS).
//
// Layer code calls the public methods below; a backend implements the protected Do* methods, a
// short list of primitives: memory and copies (allocate, free, to and from the host, cast), a
// strided-batched GEMM, one elementwise map (every elementwise op and optimizer update, whose
// math compute_maps.h holds once for all backends), and the fused row and column kernels
// (softmax, norm, cross-entropy, embedding and bias, each with its backward). The public
// methods check every contract that does not need to read tensor contents (ownership, element
// types, shapes, ranges of batched matrices) once, for every backend, widen a float type the
// backend stores but does not compute on, and then call the primitive. Token ids are checked
// by the CPU backend only (reading them on a GPU would cost a synchronization).
//
// Shape legend (suffixes of tensor names):
//   N  rows: every dimension but the last, flattened (tokens B·S for activations)
//   C  the last dimension (channels: hidden, ffn hidden or vocabulary)
//   V  vocabulary (rows of an embedding table, columns of logits)
//   S  sequence: softmax acts on [.., S, S] score matrices
//   1  a single element
// A tensor "of shape [N, C]" is any tensor whose last dimension is C; N = numel() / C. So
// x_BSH of shape [B, S, H] is an x_NC with N = B·S and C = H.
//
// Conventions, for every method:
//  - Tensors are dense and row-major; all tensors of one call belong to this backend.
//  - Float operands share one element type (fp32 or bf16 on both backends; the trainer runs the
//    optimizers on fp32 master buffers); saved statistics (mean, rstd) and the loss are always
//    fp32; ids and targets are int32. Mixed precision: a GEMM's c and the accumulated weight
//    gradients (dbias, dgamma, dbeta, dtable) may be fp32 beside bf16 operands, as Megatron's bf16
//    mode keeps its gradients; such a mixed call runs widened (below) on every backend, except a
//    GEMM on a backend that takes it (TakesMixedGemm).
//  - A float type a backend stores but has no kernels for (ComputesOn; CpuCompute: bf16) is
//    widened here, once for every backend: the op runs on fp32 stand-ins of its operands and
//    each output is rounded back once, as a kernel that loads bf16, computes in fp32 and stores
//    bf16 gives it (sums may differ in order). The stand-ins are workspace
//    (DoAllocateWorkspace).
//  - Elementwise ops compare tensors by element count only: shapes may differ.
//  - "=" overwrites an output; "+=" accumulates into it. Forward outputs and input gradients
//    are overwritten, except that the norms' dx accumulates (a norm reads the residual
//    stream, whose gradient already holds the skip path's share). Weight gradients (dgamma,
//    dbeta, dbias, dtable) always accumulate, so micro-batches sum without extra buffers.
//  - An output may alias an input only where its method says so; otherwise no output
//    overlaps another operand.
//  - Ops run in the order issued. On return of a CpuCompute call the result is complete; a
//    GPU backend may return earlier: CopyToHost and Synchronize wait for every op before
//    them.
//  - A violated REQUIRES is a bug: it aborts through TRIDENT_CHECK with the shapes involved.
//    Running out of memory also aborts, with the bytes requested and held.
// Thread-safety: one thread at a time per Compute. Separate Compute objects are independent
// (the in-process communication tests run one per rank in one process).
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "runtime/compute/tensor.h"

namespace trident {

struct MapCall;  // compute_maps.h

struct MemoryStats {
  int64_t current_bytes = 0;  // bytes of tensors alive now, as requested (no padding)
  int64_t peak_bytes = 0;     // largest current_bytes since creation or ResetPeak()
  bool operator==(const MemoryStats&) const = default;
};

// A batch of matrices stored inside one tensor, in elements: matrix i has `rows` rows of
// `cols` elements; its element (r, c) is at offset + i·stride + r·ld + c. This is cuBLAS's
// strided-batch description (row-major), and it reaches the heads of an attention input in
// place: in qkv_BS3H for one sequence b, the queries of head h are rows S, cols D, ld 3H,
// offset b·S·3H + h·D, stride D (D = H / heads); no permute is needed.
struct MatrixLayout {
  int64_t offset = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;      // REQUIRES: ld >= cols
  int64_t stride = 0;  // distance between consecutive matrices; unused when batch == 1
  bool operator==(const MatrixLayout&) const = default;
};

// `batch` products C_i = alpha · op(A_i) · op(B_i) + beta · C_i, where op(X) is X or its
// transpose. op(A_i) is [M, K], op(B_i) is [K, N], C_i is [M, N].
struct BatchedGemm {
  int64_t batch = 1;
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 0.0f;  // beta == 0 overwrites C (NaNs in C are ignored, as in BLAS)
  MatrixLayout a;
  MatrixLayout b;
  MatrixLayout c;
};

enum class ActivationKind {
  kGelu,  // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), the tanh approximation of GPT-2
  kSilu,  // x·σ(x)
};

// Which entries of each row a softmax keeps: every one, or (causal) in a [.., R, C] tensor the
// columns j <= i + offset of row i of each R×C matrix. Offset 0 on square scores is the usual
// causal mask; a query block that starts at sequence position p against keys from position 0
// has offset p (context parallelism's chunks).
struct SoftmaxMask {
  bool causal = false;
  int64_t offset = 0;
  static SoftmaxMask All() { return {}; }
  static SoftmaxMask Causal(int64_t offset = 0) { return {true, offset}; }
};

// Decoupled weight decay as PyTorch's AdamW (Loshchilov & Hutter, 2019).
struct AdamWConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
};

// PyTorch's SGD with L2 weight decay and (undampened) momentum.
struct SgdConfig {
  float lr = 1e-2f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
};

class Compute {
 public:
  Compute() = default;
  Compute(const Compute&) = delete;
  Compute& operator=(const Compute&) = delete;
  virtual ~Compute() = default;

  // --- Memory, copies, completion -------------------------------------------------------

  // A line naming the backend: "cpu (1 thread)", "cuda:0 (NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB)".
  virtual std::string Describe() const = 0;
  // Whether tensors of `type` can be allocated and computed on (natively or widened).
  virtual bool Supports(ElementType type) const = 0;
  // A zero-filled tensor of `shape`. REQUIRES: every dimension >= 0; a type the backend
  // supports (fp32, bf16 and int32 on both backends).
  Tensor Allocate(std::vector<int64_t> shape, ElementType type = ElementType::kFp32);
  // dst = host (float into bf16: rounded to nearest even). REQUIRES: host.size() == dst.numel();
  // dst is a float tensor (float) or int32 (int32_t).
  void CopyFromHost(std::span<const float> host, Tensor& dst);
  void CopyFromHost(std::span<const int32_t> host, Tensor& dst);
  // host = src, after every op issued before. REQUIRES: as CopyFromHost.
  void CopyToHost(const Tensor& src, std::span<float> host);
  void CopyToHost(const Tensor& src, std::span<int32_t> host);
  // The values of `src` in a new host vector. REQUIRES: src is a float tensor.
  std::vector<float> CopyToHost(const Tensor& src);
  // dst = src. REQUIRES: same element count and type.
  void Copy(const Tensor& src, Tensor& dst);
  // dst = src converted to dst's element type (to bf16: rounded to nearest even), the mixed-
  // precision step between fp32 master weights and bf16 working copies. REQUIRES: both are
  // float tensors of one element count, of types the backend supports; they do not overlap.
  void Cast(const Tensor& src, Tensor& dst);
  // dst = value in every element. REQUIRES: dst is a float tensor.
  void Fill(float value, Tensor& dst);
  virtual MemoryStats memory_stats() const = 0;
  // Sets peak_bytes to current_bytes.
  virtual void ResetPeak() = 0;
  // Returns when every op issued before has completed.
  virtual void Synchronize() = 0;
  // The stream the ops run on (a cudaStream_t for CudaCompute), for a communication backend
  // that must order its transfers after them; null for backends whose ops complete on return.
  virtual void* device_stream() const { return nullptr; }

  // --- Timing marks, to time ops without waiting for each -------------------------------

  // Records a mark after every op issued so far and returns its index (0, 1, ... since the
  // last ClearMarks). Its time is when those ops have completed: the host clock on return for
  // a backend whose ops complete on return (this default), a CUDA event on a GPU.
  virtual int RecordMark();
  // Milliseconds from mark `from` to mark `to` (negative when `to` came first). REQUIRES:
  // both recorded since the last ClearMarks, and a Synchronize since `to` was recorded.
  virtual double MarkElapsedMs(int from, int to) const;
  // Forgets every mark.
  virtual void ClearMarks();

  // --- Matrix products ------------------------------------------------------------------

  // c = alpha · op(a) · op(b) + beta · c, each tensor seen as a matrix [N, C]: op(a) is
  // [M, K], op(b) is [K, N], c is [M, N]. beta == 0 overwrites c. REQUIRES: c aliases
  // neither a nor b.
  void Gemm(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b, float beta,
            Tensor& c);
  // The products of `gemm` (see BatchedGemm), a batch of attention heads in one call.
  // REQUIRES: batch >= 1; every matrix lies inside its tensor; op shapes agree; the C_i do
  // not overlap each other; c shares no element with a or b.
  void GemmStridedBatched(const BatchedGemm& gemm, const Tensor& a, const Tensor& b, Tensor& c);

  // --- Elementwise ----------------------------------------------------------------------

  // out = a + b. out may alias a or b.
  void Add(const Tensor& a, const Tensor& b, Tensor& out);
  // out = a ⊙ b. out may alias a or b.
  void Mul(const Tensor& a, const Tensor& b, Tensor& out);
  // y += alpha · x.
  void Axpy(float alpha, const Tensor& x, Tensor& y);
  // x = alpha · x, in place.
  void Scale(float alpha, Tensor& x);
  // y_NC += bias_C in every row, in place.
  void AddBias(const Tensor& bias_C, Tensor& y_NC);
  // dbias_C += Σ_n dy_NC[n, :] (column sums).
  void BiasGrad(const Tensor& dy_NC, Tensor& dbias_C);
  // y = f(x). y may alias x.
  void Activation(ActivationKind f, const Tensor& x, Tensor& y);
  // dx = f'(x) ⊙ dy. dx may alias dy.
  void ActivationBackward(ActivationKind f, const Tensor& x, const Tensor& dy, Tensor& dx);
  // out = silu(gate) ⊙ up (Llama's MLP). out may alias gate or up.
  void SwiGlu(const Tensor& gate, const Tensor& up, Tensor& out);
  // dgate = dout ⊙ up ⊙ silu'(gate); dup = dout ⊙ silu(gate). dgate and dup alias nothing.
  void SwiGluBackward(const Tensor& gate, const Tensor& up, const Tensor& dout, Tensor& dgate,
                      Tensor& dup);

  // --- Softmax and norms ----------------------------------------------------------------

  // y = softmax of each row of x over its last dimension, over the entries `mask` keeps:
  // masked entries of y are 0 and x's values there are never read. y may alias x.
  void Softmax(const Tensor& x, const SoftmaxMask& mask, Tensor& y);
  // dx = y ⊙ (dy − Σ_j dy·y), row by row (masked entries, where y = 0, get 0). dx may alias dy.
  void SoftmaxBackward(const Tensor& y, const Tensor& dy, Tensor& dx);
  // Per row n: y = (x − mean) · rstd ⊙ gamma + beta, with mean and biased variance over C
  // and rstd = 1 / sqrt(var + eps). Saves mean_N and rstd_N (fp32, N elements) for backward.
  void LayerNorm(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& beta_C, float eps,
                 Tensor& y_NC, Tensor& mean_N, Tensor& rstd_N);
  // dx_NC += ∂/∂x, dgamma_C += Σ_n dy ⊙ x̂, dbeta_C += Σ_n dy, with x̂ = (x − mean) · rstd.
  void LayerNormBackward(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& mean_N,
                         const Tensor& rstd_N, const Tensor& dy_NC, Tensor& dx_NC, Tensor& dgamma_C,
                         Tensor& dbeta_C);
  // Per row: y = x · rstd ⊙ gamma, rstd = 1 / sqrt(mean(x²) + eps). Saves rstd_N.
  void RmsNorm(const Tensor& x_NC, const Tensor& gamma_C, float eps, Tensor& y_NC, Tensor& rstd_N);
  // dx_NC += ∂/∂x, dgamma_C += Σ_n dy ⊙ x · rstd.
  void RmsNormBackward(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& rstd_N,
                       const Tensor& dy_NC, Tensor& dx_NC, Tensor& dgamma_C);

  // --- Embedding and loss ---------------------------------------------------------------

  // out_NC[n] = table_VC[ids_N[n]]. REQUIRES: ids in [0, V); ids_N has N elements.
  void Embedding(const Tensor& ids_N, const Tensor& table_VC, Tensor& out_NC);
  // dtable_VC[ids_N[n]] += dout_NC[n] for every n (repeated ids sum). REQUIRES: as Embedding.
  void EmbeddingBackward(const Tensor& ids_N, const Tensor& dout_NC, Tensor& dtable_VC);
  // probs_NV = softmax(logits_NV) per row (saved for backward); loss_1 = the mean over the N
  // rows of −log probs[n, targets_N[n]]. probs may alias logits. REQUIRES: targets in [0, V).
  void CrossEntropy(const Tensor& logits_NV, const Tensor& targets_N, Tensor& probs_NV,
                    Tensor& loss_1);
  // dlogits_NV = dloss / N · (probs − onehot(targets)), where dloss = ∂(objective)/∂loss
  // (1 for a lone loss; 1 / micro-batches when the objective averages them). dlogits may
  // alias probs.
  void CrossEntropyBackward(const Tensor& probs_NV, const Tensor& targets_N, float dloss,
                            Tensor& dlogits_NV);

  // --- Optimizer updates over flat buffers of equal element count -----------------------

  // Step `step` (1 for the first) of AdamW, in place on param, m and v:
  //   m = β1·m + (1 − β1)·g;  v = β2·v + (1 − β2)·g²;  m̂ = m / (1 − β1^step);
  //   v̂ = v / (1 − β2^step);  param −= lr · (m̂ / (√v̂ + eps) + weight_decay · param).
  void AdamW(const AdamWConfig& config, int64_t step, const Tensor& grad, Tensor& param, Tensor& m,
             Tensor& v);
  // g' = g + weight_decay · param;  buf = momentum · buf + g' (buf starts at 0);
  // param −= lr · (momentum > 0 ? buf : g'). `buf` may be undefined when momentum == 0.
  void Sgd(const SgdConfig& config, const Tensor& grad, Tensor& param, Tensor& buf);

 protected:
  // Whether the Do* kernels take float tensors of `type` themselves; a supported float type
  // they do not take is widened to fp32 (see the conventions at the top).
  virtual bool ComputesOn(ElementType type) const { return Supports(type); }
  // Whether DoGemmStridedBatched takes bf16 a and b beside an fp32 c itself (cuBLAS does, as
  // Megatron's fused weight-gradient accumulation); otherwise such a call is widened.
  virtual bool TakesMixedGemm() const { return false; }
  // Memory for the fp32 stand-ins of a widened op, freed when the op returns.
  virtual void* DoAllocateWorkspace(int64_t bytes) { return DoAllocate(bytes); }
  virtual void DoFreeWorkspace(void* data, int64_t bytes) { DoFree(data, bytes); }

  // Backend hooks. The elementwise ops (Fill, Add, Mul, Axpy, Scale, Activation, SwiGlu, their
  // backwards, AdamW, Sgd) all arrive as one DoMap, whose math compute_maps.h holds for every
  // backend; Copy arrives as a DoCast between equal types; Gemm as a batch of one; LayerNorm and
  // RmsNorm as one DoNorm (and DoNormBackward). Each other hook serves the public method of the
  // same name (CopyFromHost and CopyToHost take the host buffer as bytes of the tensor's own
  // type). The arguments have passed the public method's checks.
  virtual void* DoAllocate(int64_t bytes) = 0;  // zero-filled; null only for bytes == 0
  virtual void DoFree(void* data, int64_t bytes) = 0;
  virtual void DoCopyFromHost(const void* host, Tensor& dst) = 0;
  virtual void DoCopyToHost(const Tensor& src, void* host) = 0;
  // dst = src converted to dst's type; a plain copy when the types are equal.
  virtual void DoCast(const Tensor& src, Tensor& dst) = 0;
  // Every elementwise op (compute_maps.h): the backend's loop over the call's operands.
  virtual void DoMap(const MapCall& call) = 0;
  virtual void DoGemmStridedBatched(const BatchedGemm& gemm, const Tensor& a, const Tensor& b,
                                    Tensor& c) = 0;
  virtual void DoAddBias(const Tensor& bias_C, Tensor& y_NC) = 0;
  virtual void DoBiasGrad(const Tensor& dy_NC, Tensor& dbias_C) = 0;
  virtual void DoSoftmax(const Tensor& x, const SoftmaxMask& mask, Tensor& y) = 0;
  virtual void DoSoftmaxBackward(const Tensor& y, const Tensor& dy, Tensor& dx) = 0;
  // LayerNorm, and RMSNorm as a LayerNorm without centering or shift: for RMSNorm beta_C,
  // mean_N (and in backward dbeta_C) are undefined tensors.
  virtual void DoNorm(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& beta_C, float eps,
                      Tensor& y_NC, Tensor& mean_N, Tensor& rstd_N) = 0;
  virtual void DoNormBackward(const Tensor& x_NC, const Tensor& gamma_C, const Tensor& mean_N,
                              const Tensor& rstd_N, const Tensor& dy_NC, Tensor& dx_NC,
                              Tensor& dgamma_C, Tensor& dbeta_C) = 0;
  virtual void DoEmbedding(const Tensor& ids_N, const Tensor& table_VC, Tensor& out_NC) = 0;
  virtual void DoEmbeddingBackward(const Tensor& ids_N, const Tensor& dout_NC,
                                   Tensor& dtable_VC) = 0;
  virtual void DoCrossEntropy(const Tensor& logits_NV, const Tensor& targets_N, Tensor& probs_NV,
                              Tensor& loss_1) = 0;
  virtual void DoCrossEntropyBackward(const Tensor& probs_NV, const Tensor& targets_N, float dloss,
                                      Tensor& dlogits_NV) = 0;

 private:
  friend class Tensor;  // frees its storage through Free()
  class Widened;        // compute_widen.h

  // A non-owning tensor over `data`, which the caller keeps and frees.
  Tensor View(void* data, std::vector<int64_t> shape, ElementType type) {
    return Tensor(this, data, std::move(shape), type, /*owns=*/false);
  }

  void Free(void* data, int64_t bytes) { DoFree(data, bytes); }

  std::vector<std::chrono::steady_clock::time_point> host_marks_;  // the default marks
  // Runs call.op (whose operands compute_maps.h lists) over `operands`, checked and widened,
  // in the op's order: fills in the call's type, element count and data, then DoMap.
  void RunMap(MapCall call, std::initializer_list<const Tensor*> operands);
};

}  // namespace trident
