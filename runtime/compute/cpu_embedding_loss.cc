// CpuCompute's embedding gather and scatter-add, and the cross-entropy loss.
// The gather and the loss split rows across threads; the scatter-add splits columns, so
// repeated ids add up in token order on one thread (no races, the same bits for every
// thread count). Ids and targets are checked to lie in [0, V) before any write.
//
// Cross-entropy per row, with m = max_j x_j and Z = Σ_j e^(x_j − m):
//   probs = e^(x − m) / Z,  loss_n = log Z − (x_t − m)  (= −log probs_t, without underflow),
//   ∂loss/∂x = (probs − onehot(t)) / N for the mean over N rows.
#include <cmath>
#include <vector>

#include "core/check.h"
#include "runtime/compute/cpu_compute.h"
#include "runtime/compute/cpu_eigen.h"
#include "runtime/compute/op_check.h"

namespace trident {
namespace {

void CheckIds(const char* op, const Tensor& ids, int64_t vocab) {
  const int32_t* id = ids.data<int32_t>();
  for (int64_t n = 0; n < ids.numel(); ++n) {
    TRIDENT_CHECK(id[n] >= 0 && id[n] < vocab)
        << "Compute::" << op << ": id " << id[n] << " at position " << n << " is outside [0, "
        << vocab << ")";
  }
}

}  // namespace

void CpuCompute::DoEmbedding(const Tensor& ids_N, const Tensor& table_VC, Tensor& out_NC) {
  CheckIds("Embedding", ids_N, MatrixRows(table_VC));
  const int64_t cols = MatrixCols(table_VC);
  const int32_t* ids = ids_N.data<int32_t>();
  threads_.ParallelFor(ids_N.numel(), cols, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) Row(out_NC, cols, n) = Row(table_VC, cols, ids[n]);
  });
}

void CpuCompute::DoEmbeddingBackward(const Tensor& ids_N, const Tensor& dout_NC,
                                     Tensor& dtable_VC) {
  CheckIds("EmbeddingBackward", ids_N, MatrixRows(dtable_VC));
  const int64_t cols = MatrixCols(dtable_VC);
  const int32_t* ids = ids_N.data<int32_t>();
  threads_.ParallelFor(cols, ids_N.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t n = 0; n < ids_N.numel(); ++n) {
      RowSegment(dtable_VC, cols, ids[n], begin, end) += RowSegment(dout_NC, cols, n, begin, end);
    }
  });
}

void CpuCompute::DoCrossEntropy(const Tensor& logits_NV, const Tensor& targets_N, Tensor& probs_NV,
                                Tensor& loss_1) {
  const int64_t vocab = MatrixCols(logits_NV);
  const int64_t rows = MatrixRows(logits_NV);
  CheckIds("CrossEntropy", targets_N, vocab);
  const int32_t* targets = targets_N.data<int32_t>();
  std::vector<double> row_loss(static_cast<size_t>(rows));
  threads_.ParallelFor(rows, vocab, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const ConstArrayMap x = Row(logits_NV, vocab, n);
      const float max = x.maxCoeff();
      const float x_target = x[targets[n]];  // read before probs, which may alias x
      ArrayMap p = Row(probs_NV, vocab, n);
      p = (x - max).exp();
      const float z = p.sum();
      p *= 1.0f / z;
      row_loss[static_cast<size_t>(n)] = std::log(double{z}) - (x_target - max);
    }
  });
  double total = 0;
  for (double loss : row_loss) total += loss;
  loss_1.data<float>()[0] = static_cast<float>(total / static_cast<double>(rows));
}

void CpuCompute::DoCrossEntropyBackward(const Tensor& probs_NV, const Tensor& targets_N,
                                        float dloss, Tensor& dlogits_NV) {
  const int64_t vocab = MatrixCols(probs_NV);
  const int64_t rows = MatrixRows(probs_NV);
  CheckIds("CrossEntropyBackward", targets_N, vocab);
  const int32_t* targets = targets_N.data<int32_t>();
  const float scale = dloss / static_cast<float>(rows);
  threads_.ParallelFor(rows, vocab, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      ArrayMap dlogits = Row(dlogits_NV, vocab, n);
      dlogits = Row(probs_NV, vocab, n) * scale;
      dlogits[targets[n]] -= scale;
    }
  });
}

}  // namespace trident
