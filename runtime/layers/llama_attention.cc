// RoPE and grouped-query attention (see llama_parts.h for the formulas).
#include <cmath>
#include <span>
#include <tuple>
#include <vector>

#include "runtime/layers/llama_parts.h"

namespace trident {

namespace {

// Where query chunk k of sequence b starts in a [B, S, ..] tensor of row width `width`.
int64_t ChunkStart(const GqaShape& g, int64_t b, size_t k, int64_t width) {
  return (b * g.s + g.chunks[k].first_row) * width;
}
// The G query heads of kv group j in chunk k of sequence b (also the layout of ctx and its
// gradient).
MatrixLayout QueryGroup(const GqaShape& g, int64_t b, size_t k, int64_t j) {
  return {ChunkStart(g, b, k, g.hl) + j * g.group * g.d, g.chunks[k].rows, g.d, g.hl, g.d};
}
MatrixLayout QueryHead(const GqaShape& g, int64_t b, size_t k, int64_t i) {
  return {ChunkStart(g, b, k, g.hl) + i * g.d, g.chunks[k].rows, g.d, g.hl, 0};
}
// Kv head j of the whole sequence b, repeated for every query head of its group (stride 0).
MatrixLayout KvHead(const GqaShape& g, int64_t b, int64_t j) {
  return {b * g.keys * g.kvl + j * g.d, g.keys, g.d, g.kvl, 0};
}
// Score rows of chunk k of sequence b in the chunk-major [chunks·B, Al, rows, keys] tensor.
int64_t ScoreStart(const GqaShape& g, int64_t b, size_t k, int64_t head) {
  const int64_t rows = g.chunks[k].rows;
  return ((static_cast<int64_t>(k) * g.b + b) * g.al + head) * rows * g.keys;
}
MatrixLayout ScoreGroup(const GqaShape& g, int64_t b, size_t k, int64_t j) {
  const int64_t rows = g.chunks[k].rows;
  return {ScoreStart(g, b, k, j * g.group), rows, g.keys, g.keys, rows * g.keys};
}
MatrixLayout ScoreHead(const GqaShape& g, int64_t b, size_t k, int64_t i) {
  return {ScoreStart(g, b, k, i), g.chunks[k].rows, g.keys, g.keys, 0};
}

float Scale(const GqaShape& g) { return 1.0f / std::sqrt(static_cast<float>(g.d)); }

void Gemm(Compute& compute, BatchedGemm gemm, const Tensor& a, const Tensor& b, Tensor& c) {
  compute.GemmStridedBatched(gemm, a, b, c);
}

// Per kv head, the gradient summed over its group's query heads:
// dkv_j += scale · Σ_i op(scores_i)ᵀ · rows_i.
void GroupSum(Compute& compute, const GqaShape& g, float scale, const Tensor& scores,
              const Tensor& rows, Tensor& dkv) {
  for (size_t k = 0; k < g.chunks.size(); ++k) {
    for (int64_t b = 0; b < g.b; ++b) {
      for (int64_t i = 0; i < g.al; ++i) {
        Gemm(compute,
             {1, true, false, scale, 1.0f, ScoreHead(g, b, k, i), QueryHead(g, b, k, i),
              KvHead(g, b, i / g.group)},
             scores, rows, dkv);
      }
    }
  }
}

// cos θ_j and sin θ_j of one head at `position`, for its D columns (j = column mod D/2).
void AppendRopeRow(double position, int64_t d, double theta, std::vector<float>& cos_values,
                   std::vector<float>& sin_values) {
  for (int64_t c = 0; c < d; ++c) {
    const double j = static_cast<double>(c % (d / 2));
    const double angle = position * std::pow(theta, -2.0 * j / static_cast<double>(d));
    cos_values.push_back(static_cast<float>(std::cos(angle)));
    sin_values.push_back(static_cast<float>(std::sin(angle)));
  }
}

}  // namespace

RopeTables MakeRopeTables(Compute& compute, const std::vector<int64_t>& dims_BSND,
                          const std::vector<int64_t>& positions, double theta, ElementType type) {
  const int64_t batch = dims_BSND[0], seq = dims_BSND[1], heads = dims_BSND[2], d = dims_BSND[3];
  TRIDENT_CHECK(static_cast<int64_t>(positions.size()) == seq)
      << positions.size() << " positions for a sequence of " << seq;
  std::vector<float> cos_values, sin_values;
  cos_values.reserve(static_cast<size_t>(ElementsOf(dims_BSND)));
  sin_values.reserve(cos_values.capacity());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t p = 0; p < seq; ++p) {
      for (int64_t h = 0; h < heads; ++h) {
        AppendRopeRow(static_cast<double>(positions[p]), d, theta, cos_values, sin_values);
      }
    }
  }
  RopeTables t{compute.Allocate(dims_BSND, type), compute.Allocate(dims_BSND, type)};
  compute.CopyFromHost(std::span<const float>(cos_values), t.cos_BSND);
  compute.CopyFromHost(std::span<const float>(sin_values), t.sin_BSND);
  return t;
}

Tensor MakeRotateHalf(Compute& compute, int64_t d, ElementType type) {
  std::vector<float> r(static_cast<size_t>(d * d), 0.0f);
  for (int64_t j = 0; j < d / 2; ++j) {
    r[static_cast<size_t>((j + d / 2) * d + j)] = -1.0f;
    r[static_cast<size_t>(j * d + j + d / 2)] = 1.0f;
  }
  Tensor rotate_DD = compute.Allocate({d, d}, type);
  compute.CopyFromHost(std::span<const float>(r), rotate_DD);
  return rotate_DD;
}

void RopeForward(Compute& compute, const RopeTables& tables, const Tensor& rotate_DD, Tensor& x) {
  const int64_t d = rotate_DD.dim(0);
  Tensor x_ND = MatrixView(x, d);
  Tensor rotated_ND = compute.Allocate(x_ND.shape(), x.type());
  compute.Gemm(false, false, 1.0f, x_ND, rotate_DD, 0.0f, rotated_ND);
  compute.Mul(x, tables.cos_BSND, x);
  compute.Mul(rotated_ND, tables.sin_BSND, rotated_ND);
  compute.Add(x, rotated_ND, x);
}

void RopeBackward(Compute& compute, const RopeTables& tables, const Tensor& rotate_DD, Tensor& dy) {
  const int64_t d = rotate_DD.dim(0);
  Tensor scaled_ND = compute.Allocate(MatrixView(dy, d).shape(), dy.type());
  compute.Mul(dy, tables.sin_BSND, scaled_ND);
  Tensor back_ND = compute.Allocate(scaled_ND.shape(), dy.type());
  compute.Gemm(false, true, 1.0f, scaled_ND, rotate_DD, 0.0f, back_ND);
  compute.Mul(dy, tables.cos_BSND, dy);
  compute.Add(dy, back_ND, dy);
}

// For every (chunk, sequence, kv group): c = alpha·op(a)·op(b) per query head of the group, with
// a's, b's and c's layouts from `layouts`.
template <typename Layouts>
void EachGroup(Compute& compute, const GqaShape& g, bool trans_b, float alpha, Layouts layouts,
               const Tensor& a, const Tensor& b_t, Tensor& c) {
  for (size_t k = 0; k < g.chunks.size(); ++k) {
    for (int64_t b = 0; b < g.b; ++b) {
      for (int64_t j = 0; j < g.kl; ++j) {
        auto [la, lb, lc] = layouts(b, k, j);
        Gemm(compute, {g.group, false, trans_b, alpha, 0.0f, la, lb, lc}, a, b_t, c);
      }
    }
  }
}

void GqaProbs(Compute& compute, const GqaShape& g, const Tensor& q_BSHl, const Tensor& k_BSKVl,
              Tensor& probs_BAlSS) {
  EachGroup(
      compute, g, true, Scale(g),
      [&](int64_t b, size_t k, int64_t j) {
        return std::tuple{QueryGroup(g, b, k, j), KvHead(g, b, j), ScoreGroup(g, b, k, j)};
      },
      q_BSHl, k_BSKVl, probs_BAlSS);
  CausalSoftmax(compute, g.chunks, probs_BAlSS);
}

void GqaContext(Compute& compute, const GqaShape& g, const Tensor& probs_BAlSS,
                const Tensor& v_BSKVl, Tensor& ctx_BSHl) {
  EachGroup(
      compute, g, false, 1.0f,
      [&](int64_t b, size_t k, int64_t j) {
        return std::tuple{ScoreGroup(g, b, k, j), KvHead(g, b, j), QueryGroup(g, b, k, j)};
      },
      probs_BAlSS, v_BSKVl, ctx_BSHl);
}

void GqaBackward(Compute& compute, const GqaShape& g, const GqaInputs& in, const Tensor& dctx_BSHl,
                 Tensor& dq_BSHl, Tensor& dk_BSKVl, Tensor& dv_BSKVl) {
  Tensor dscores_BAlSS = compute.Allocate(in.probs_BAlSS->shape(), in.probs_BAlSS->type());
  EachGroup(
      compute, g, true, 1.0f,
      [&](int64_t b, size_t k, int64_t j) {
        return std::tuple{QueryGroup(g, b, k, j), KvHead(g, b, j), ScoreGroup(g, b, k, j)};
      },
      dctx_BSHl, *in.v_BSKVl, dscores_BAlSS);
  GroupSum(compute, g, 1.0f, *in.probs_BAlSS, dctx_BSHl, dv_BSKVl);
  compute.SoftmaxBackward(*in.probs_BAlSS, dscores_BAlSS, dscores_BAlSS);
  EachGroup(
      compute, g, false, Scale(g),
      [&](int64_t b, size_t k, int64_t j) {
        return std::tuple{ScoreGroup(g, b, k, j), KvHead(g, b, j), QueryGroup(g, b, k, j)};
      },
      dscores_BAlSS, *in.k_BSKVl, dq_BSHl);
  GroupSum(compute, g, Scale(g), dscores_BAlSS, *in.q_BSHl, dk_BSKVl);
}

}  // namespace trident
