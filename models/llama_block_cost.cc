// Cost of the Llama block. Symbols: b micro-batch, s sequence length, h hidden, a heads,
// k kv_heads, d = h/a head size, kvd = k·d key/value width, f ffn_hidden, t tp degree,
// e bytes per element.
#include <cstdint>

#include "models/layer_cost_internal.h"

namespace trident {

namespace {

// Llama block parameters (no biases; RMSNorm has a weight only):
//   N1, N2           2h              replicated
//   Q, O             h·h each        Q column-parallel, O row-parallel: / t
//   K, V             h·kvd each      column-parallel, key/value heads split: / t
//   gate, up, down   h·f each        gate and up column-, down row-parallel: / t
// total    = 2h + 2h² + 2h·kvd + 3hf; per rank 2h + (2h² + 2h·kvd + 3hf)/t.
// llama3-8b (h 4096, kvd 8·128 = 1024, f 14336):
//   8,192 + 33,554,432 + 8,388,608 + 176,160,768 = 218,112,000; t 8: 27,271,168.
void SetLlamaParams(const LayerDims& d, int64_t kvd, LayerCost* cost) {
  const int64_t h = d.h, f = d.f;
  int64_t replicated = 2 * h;
  int64_t sharded = 2 * h * h + 2 * h * kvd + 3 * h * f;
  SetLayerParams(d, replicated + sharded / d.t, replicated + sharded, cost);
}

// Forward matmul FLOPs per rank:
//   linear    = 2bs·(h·h + 2h·kvd + h·h + 3h·f)/t     Q, K and V, O, gate/up/down
//   attention = 4b·s²·h/t                            every query head scores all s keys;
//                                                    grouped K/V share weights, not work
// Example h 8, a 2, k 1 (kvd 4), f 16, b 2, s 4, t 1:
//   linear 2·8·(64 + 64 + 64 + 384) = 9,216; attention 4·2·16·8 = 1,024.
void SetLlamaFlops(const LayerDims& d, int64_t kvd, LayerCost* cost) {
  const double tokens = static_cast<double>(d.tokens), h = static_cast<double>(d.h);
  const double f = static_cast<double>(d.f), t = static_cast<double>(d.t);
  double linear = 2 * tokens * (2 * h * h + 2 * h * static_cast<double>(kvd) + 3 * h * f) / t;
  double attention = 4 * tokens * static_cast<double>(d.s) * h / t;
  SetBlockFlops(linear, attention, d.recompute, cost);
}

// Stashed elements per token (times e·bs for bytes); no dropout in a Llama block:
//   replicated  N1 and N2 inputs 2h; QKV input (N1 output) h; MLP input (N2 output) h  = 4h
//   sharded     Q h/t, K kvd/t, V kvd/t (after RoPE, whose backward needs no input);
//               O input h/t; gate output, up output and down input 3f/t  = (2h+2kvd+3f)/t
//   attention   softmax output a·s/t, i.e. e·abs²/t bytes in all
// bytes = e·bs·(4h + (2h + 2kvd + 3f)/t) + e·abs²/t.
// Example h 8, kvd 4, f 16, a 2, b 2, s 4, bf16, t 1: 2·8·(32 + 72) + 2·2·2·16 = 1,792.
// Selective recompute drops the softmax term; full keeps only the block input, e·bsh.
void SetLlamaStash(const LayerDims& d, int64_t kvd, LayerCost* cost) {
  const int64_t h = d.h, f = d.f, t = d.t, e = d.e;
  int64_t per_token = 4 * h + (2 * h + 2 * kvd + 3 * f) / t;
  int64_t attention = e * (d.a / t) * d.b * d.s * d.s;
  int64_t input = e * d.tokens * h;
  cost->stashed_bytes =
      BlockStashBytes(d.recompute, e * d.tokens * per_token + attention, attention, input);
}

}  // namespace

// Llama block:
//   x1 = x  + O(Attention(RoPE(Q(N1(x))), RoPE(K(N1(x))), V(N1(x))))
//   y  = x1 + Down(SiLU(Gate(N2(x1))) ⊙ Up(N2(x1)))
// Tensor parallel as the GPT block: 2 forward all-reduces (after O and Down) and 2 backward
// (the gradients of the QKV and gate/up inputs), each of the e·bsh activation.
LayerCost LlamaBlockCost(const ModelSpec& model, const LayerDims& d) {
  const int64_t kvd = model.kv_heads * model.HeadDim();
  LayerCost cost;
  SetLlamaParams(d, kvd, &cost);
  SetLlamaFlops(d, kvd, &cost);
  SetLlamaStash(d, kvd, &cost);
  const int64_t activation_bytes = d.e * d.tokens * d.h;
  cost.output_bytes = activation_bytes;
  SetTpAllReduces(d, 2, activation_bytes, 2, activation_bytes, &cost);
  return cost;
}

}  // namespace trident
