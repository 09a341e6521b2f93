// Vocabulary-parallel cross-entropy (Megatron-LM), for the LM head under tp > 1.
// Rank r holds the logits of the vocabulary rows of its shard, [begin, end), for every token n
// (Vl = end − begin columns). Per n:
//   M = max over all ranks of max_j l[n, j]          (all-gather of the N local maxima)
//   Z = Σ_ranks Σ_j exp(l[n, j] − M)                  (all-reduce)
//   t = the target's logit, from the rank holding it  (all-reduce; 0 elsewhere)
//   loss = mean_n (log Z + M − t);  p[n, j] = exp(l[n, j] − M) / Z
//   dl[n, j] = dloss / N · (p[n, j] − [begin + j == target_n])
// N is the number of targets (one per token).
// Compute has no row-max / row-sum-exp ops yet, so these statistics are taken on the host
// (exact for the CPU backend; a GPU backend needs such ops before it can run this path).
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "runtime/layers/layers_internal.h"

namespace trident {

namespace {

void CheckComm(const Status& status, const char* what) {
  TRIDENT_CHECK(status.ok()) << "vocabulary-parallel cross-entropy: " << what
                             << " failed: " << status.ToString();
}

std::vector<int32_t> TargetsOnHost(Compute& compute, const Tensor& targets_N) {
  std::vector<int32_t> targets(static_cast<size_t>(targets_N.numel()));
  compute.CopyToHost(targets_N, std::span<int32_t>(targets));
  return targets;
}

// Global row maxima of the local logits [N, Vl].
std::vector<float> GlobalRowMax(const LayerContext& context, const std::vector<float>& l,
                                int64_t tokens, int64_t vl) {
  std::vector<float> local(static_cast<size_t>(tokens));
  for (int64_t n = 0; n < tokens; ++n) {
    auto row = l.begin() + n * vl;
    local[static_cast<size_t>(n)] = *std::max_element(row, row + vl);
  }
  std::vector<float> all(local.size() * static_cast<size_t>(context.tp_size));
  CheckComm(context.tp_comm->AllGather(local, all), "all-gather of row maxima");
  for (size_t r = 0; r < static_cast<size_t>(context.tp_size); ++r) {
    for (size_t n = 0; n < local.size(); ++n) {
      local[n] = std::max(local[n], all[r * local.size() + n]);
    }
  }
  return local;
}

}  // namespace

float VocabParallelCrossEntropy(const LayerContext& context, const Tensor& targets_N,
                                const VocabShard& shard, Tensor& logits_to_probs_NVl) {
  Compute& compute = *context.compute;
  const int64_t vl = shard.Rows();
  const int64_t tokens = targets_N.numel();
  std::vector<float> l(static_cast<size_t>(logits_to_probs_NVl.numel()));
  compute.CopyToHost(logits_to_probs_NVl, std::span<float>(l));
  const std::vector<int32_t> targets = TargetsOnHost(compute, targets_N);
  const std::vector<float> row_max = GlobalRowMax(context, l, tokens, vl);
  std::vector<float> sums(2 * static_cast<size_t>(tokens), 0.0f);  // [Z..., t...]
  for (int64_t n = 0; n < tokens; ++n) {
    double z = 0;
    for (int64_t j = 0; j < vl; ++j) z += std::exp(l[n * vl + j] - row_max[n]);
    sums[n] = static_cast<float>(z);
    if (shard.Holds(targets[n])) sums[tokens + n] = l[n * vl + shard.LocalRow(targets[n])];
  }
  CheckComm(context.tp_comm->AllReduceSum(sums), "all-reduce of sums and target logits");
  double loss = 0;
  for (int64_t n = 0; n < tokens; ++n) {
    loss += std::log(static_cast<double>(sums[n])) + row_max[n] - sums[tokens + n];
    for (int64_t j = 0; j < vl; ++j) l[n * vl + j] = std::exp(l[n * vl + j] - row_max[n]) / sums[n];
  }
  compute.CopyFromHost(std::span<const float>(l), logits_to_probs_NVl);
  return static_cast<float>(loss / static_cast<double>(tokens));
}

void VocabParallelCrossEntropyBackward(const LayerContext& context, const Tensor& targets_N,
                                       const VocabShard& shard, float dloss,
                                       Tensor& probs_to_dlogits_NVl) {
  Compute& compute = *context.compute;
  const int64_t vl = shard.Rows();
  const int64_t tokens = targets_N.numel();
  std::vector<float> p(static_cast<size_t>(probs_to_dlogits_NVl.numel()));
  compute.CopyToHost(probs_to_dlogits_NVl, std::span<float>(p));
  const std::vector<int32_t> targets = TargetsOnHost(compute, targets_N);
  const float scale = dloss / static_cast<float>(tokens);
  for (int64_t n = 0; n < tokens; ++n) {
    if (shard.Holds(targets[n])) p[n * vl + shard.LocalRow(targets[n])] -= 1.0f;
    for (int64_t j = 0; j < vl; ++j) p[n * vl + j] *= scale;
  }
  compute.CopyFromHost(std::span<const float>(p), probs_to_dlogits_NVl);
}

}  // namespace trident
