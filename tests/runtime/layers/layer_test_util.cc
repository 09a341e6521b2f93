#include "tests/runtime/layers/layer_test_util.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <span>

namespace trident {

ModelSpec SmallGpt() {
  ModelSpec m;
  m.name = "small-gpt";
  m.vocab_size = 11;
  m.max_seq_len = 6;
  m.hidden = 8;
  m.heads = 2;
  m.kv_heads = 2;
  m.ffn_hidden = 32;
  m.layers = {{LayerKind::kEmbedding, 1},
              {LayerKind::kGptBlock, 1},
              {LayerKind::kMlpBlock, 1},
              {LayerKind::kFinalNorm, 1},
              {LayerKind::kLmHead, 1}};
  return m;
}

ModelSpec MediumGpt() {
  ModelSpec m = SmallGpt();
  m.name = "medium-gpt";
  m.vocab_size = 128;
  m.max_seq_len = 32;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 256;
  return m;
}

ModelSpec SmallLlama() {
  ModelSpec m = SmallGpt();
  m.name = "small-llama";
  m.kv_heads = 1;
  m.ffn_hidden = 16;
  m.norm = NormKind::kRmsNorm;
  m.positions = PositionKind::kRope;
  m.layers[1].kind = LayerKind::kLlamaBlock;
  return m;
}

ModelSpec MediumLlama() {
  ModelSpec m = MediumGpt();
  m.name = "medium-llama";
  m.kv_heads = 2;
  m.ffn_hidden = 160;
  m.norm = NormKind::kRmsNorm;
  m.positions = PositionKind::kRope;
  m.layers[1].kind = LayerKind::kLlamaBlock;
  return m;
}

std::vector<float> ToHost(Compute& compute, const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  compute.CopyToHost(t, std::span<float>(v));
  return v;
}

Tensor FromHost(Compute& compute, const std::vector<int64_t>& shape, const std::vector<float>& v) {
  Tensor t = compute.Allocate(shape);
  compute.CopyFromHost(std::span<const float>(v), t);
  return t;
}

Tensor IdsFromHost(Compute& compute, const std::vector<int64_t>& shape,
                   const std::vector<int32_t>& ids) {
  Tensor t = compute.Allocate(shape, ElementType::kInt32);
  compute.CopyFromHost(std::span<const int32_t>(ids), t);
  return t;
}

std::vector<float> RandomValues(int64_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<int32_t> RandomIds(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& x : v) x = dist(rng);
  return v;
}

void PerturbParameters(Compute& compute, Layer& layer, uint32_t seed) {
  for (const Parameter& p : layer.Parameters()) {
    std::vector<float> v = ToHost(compute, *p.value);
    std::vector<float> noise = RandomValues(p.value->numel(), 0.5f, seed++);
    for (size_t i = 0; i < v.size(); ++i) v[i] += noise[i];
    compute.CopyFromHost(std::span<const float>(v), *p.value);
  }
}

void ZeroGrads(Compute& compute, Layer& layer) {
  for (const Parameter& p : layer.Parameters()) compute.Fill(0.0f, *p.grad);
}

LayerInput MakeInput(const ModelSpec& model, LayerKind kind, int64_t b, int64_t s, uint32_t seed) {
  LayerInput in;
  if (kind == LayerKind::kEmbedding) {
    in.shape = {b, s};
    in.ids = true;
    for (int32_t id : RandomIds(b * s, model.vocab_size, seed)) {
      in.values.push_back(static_cast<float>(id));
    }
    return in;
  }
  in.shape = {b, s, model.hidden};
  in.values = RandomValues(b * s * model.hidden, 1.0f, seed);
  return in;
}

Tensor ToTensor(Compute& compute, const LayerInput& input) {
  if (!input.ids) return FromHost(compute, input.shape, input.values);
  std::vector<int32_t> ids(input.values.begin(), input.values.end());
  return IdsFromHost(compute, input.shape, ids);
}

void PrintTo(const LayerCase& c, std::ostream* os) { *os << c.name; }

std::vector<LayerCase> AllLayerCases() {
  const RecomputeMode none = RecomputeMode::kNone, selective = RecomputeMode::kSelective,
                      full = RecomputeMode::kFull;
  const NormKind rms = NormKind::kRmsNorm, ln = NormKind::kLayerNorm;
  return {{"embedding", LayerKind::kEmbedding},
          {"final_layernorm", LayerKind::kFinalNorm},
          {"final_rmsnorm", LayerKind::kFinalNorm, none, rms},
          {"lm_head", LayerKind::kLmHead},
          {"mlp_block", LayerKind::kMlpBlock},
          {"mlp_block_full", LayerKind::kMlpBlock, full},
          {"gpt_block", LayerKind::kGptBlock},
          {"gpt_block_selective", LayerKind::kGptBlock, selective},
          {"gpt_block_full", LayerKind::kGptBlock, full, ln},
          {"llama_embedding", LayerKind::kEmbedding, none, rms, true},
          {"llama_block", LayerKind::kLlamaBlock, none, rms, true},
          {"llama_block_selective", LayerKind::kLlamaBlock, selective, rms, true},
          {"llama_block_full", LayerKind::kLlamaBlock, full, rms, true}};
}

ModelSpec TpModel() {
  ModelSpec m = SmallGpt();
  m.name = "tp-gpt";
  m.vocab_size = 10;
  m.hidden = 16;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 64;
  return m;
}

ModelSpec TpLlama() {
  ModelSpec m = SmallLlama();
  m.name = "tp-llama";
  m.vocab_size = 10;
  m.hidden = 32;
  m.heads = 8;
  m.kv_heads = 4;
  m.ffn_hidden = 64;
  return m;
}

ModelSpec ModelFor(LayerKind kind) {
  return kind == LayerKind::kLlamaBlock ? TpLlama() : TpModel();
}

RankResult RunOneRank(LayerKind kind, RecomputeMode recompute, Comm* comm, int tp, int rank) {
  ModelSpec model = ModelFor(kind);
  CpuCompute compute;
  LayerContext context{&compute, comm, rank, tp, 42, 1, recompute};
  std::unique_ptr<Layer> layer = MakeLayer(model, kind, context);
  LayerInput input = MakeInput(model, kind, 2, 4, 9);
  Tensor targets = IdsFromHost(compute, {2, 4}, RandomIds(8, model.vocab_size, 11));
  Tensor y = layer->Forward(0, ToTensor(compute, input), &targets);
  std::vector<float> dy = RandomValues(y.numel(), 1.0f, 10);
  Tensor dx = layer->BackwardInput(0, FromHost(compute, y.shape(), dy));
  layer->BackwardWeight(0);
  RankResult r;
  r.y = ToHost(compute, y);
  if (dx.defined()) r.dx = ToHost(compute, dx);
  for (Parameter p : layer->Parameters()) {
    r.grads.push_back({p.grad->shape(), ToHost(compute, *p.grad)});
    r.param_count += p.value->numel();
    p.value = p.grad = nullptr;
    r.params.push_back(p);
  }
  return r;
}

double RelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

}  // namespace trident
