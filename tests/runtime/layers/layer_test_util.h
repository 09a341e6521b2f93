// Helpers for the layer tests: tiny models, host copies of tensors, seeded random inputs and a
// runner of one layer for one micro-batch. Legend as in runtime/layers/layer.h.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/recompute.h"
#include "runtime/compute/cpu_compute.h"
#include "runtime/layers/layer.h"

namespace trident {

// A GPT with every layer kind: V 11, max_seq 6, h 8, a 2 (D 4), f 32 (4h), untied.
ModelSpec SmallGpt();
// The same shape family, larger, so that per-token extras (norm statistics) are small next to
// the stash the cost model counts: V 128, max_seq 32, h 64, a 4, f 256.
ModelSpec MediumGpt();

// A Llama with every layer kind: V 11, max_seq 6, h 8, a 2, kv 1 (D 4, grouped), f 16, RoPE.
ModelSpec SmallLlama();
// Larger, for the cost comparison: V 128, max_seq 32, h 64, a 4, kv 2, f 160.
ModelSpec MediumLlama();

std::vector<float> ToHost(Compute& compute, const Tensor& t);
Tensor FromHost(Compute& compute, const std::vector<int64_t>& shape, const std::vector<float>& v);
Tensor IdsFromHost(Compute& compute, const std::vector<int64_t>& shape,
                   const std::vector<int32_t>& ids);

// n values uniform in [-scale, scale], from `seed`.
std::vector<float> RandomValues(int64_t n, float scale, uint32_t seed);
// n ids uniform in [0, vocab), from `seed`.
std::vector<int32_t> RandomIds(int64_t n, int64_t vocab, uint32_t seed);

// Replaces every parameter value with `value + uniform(-0.5, 0.5)` (seeded), so gradient
// checks do not run at the nearly linear point that std 0.02 weights give.
void PerturbParameters(Compute& compute, Layer& layer, uint32_t seed);
void ZeroGrads(Compute& compute, Layer& layer);

// The input a layer of `kind` takes for micro-batch shape [b, s] (ids for the embedding,
// activations otherwise), as host floats (ids are stored as floats and converted).
struct LayerInput {
  std::vector<int64_t> shape;
  std::vector<float> values;
  bool ids = false;
};
LayerInput MakeInput(const ModelSpec& model, LayerKind kind, int64_t b, int64_t s, uint32_t seed);
Tensor ToTensor(Compute& compute, const LayerInput& input);

// One layer configuration exercised by the gradient and cost-agreement tests.
struct LayerCase {
  std::string name;
  LayerKind kind;
  RecomputeMode recompute = RecomputeMode::kNone;
  NormKind norm = NormKind::kLayerNorm;
  bool llama = false;  // the Llama model instead of the GPT one
};
void PrintTo(const LayerCase& c, std::ostream* os);

// Every layer kind, with each recompute mode for the blocks.
std::vector<LayerCase> AllLayerCases();

// Tensor-parallel tests (in-process threads and MPI processes share these).
// A GPT whose heads and ffn divide by 4, and a vocabulary (10) that does not: V 10, h 16, a 4,
// f 64.
ModelSpec TpModel();
// GQA with kv heads divisible by 4: h 32, a 8, kv 4 (D 4, groups of 2), f 64.
ModelSpec TpLlama();
// TpLlama for the Llama block, TpModel otherwise.
ModelSpec ModelFor(LayerKind kind);

// What one rank computes for one micro-batch [2, 4] of one layer.
struct RankResult {
  std::vector<float> y, dx;
  std::vector<Parameter> params;  // value/grad pointers are cleared: only names and slices
  std::vector<HostTensor> grads;
  int64_t param_count = 0;
};
// Forward, input gradient and weight gradient of layer `kind` (ModelFor(kind), seed 42,
// layer index 1) on rank `rank` of `tp`, with fixed seeded input, targets and output gradient.
// `comm` is the tp group (nullptr for tp 1).
RankResult RunOneRank(LayerKind kind, RecomputeMode recompute, Comm* comm, int tp, int rank);

// max|a − b| / max|b|; infinity when the sizes differ.
double RelativeDifference(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace trident
