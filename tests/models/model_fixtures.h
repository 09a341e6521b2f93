// Model specs shared by the models/ tests: two published models built in code and two tiny
// ones whose costs are worked out by hand in the tests.
#pragma once

#include <ostream>

#include "core/model_spec.h"
#include "models/layer_cost.h"

namespace trident {

// GPT-2 small: 124,439,808 parameters (tied embeddings, learned positions).
inline ModelSpec Gpt2SmallSpec() {
  ModelSpec m;
  m.name = "gpt2-small";
  m.vocab_size = 50257;
  m.max_seq_len = 1024;
  m.hidden = 768;
  m.heads = 12;
  m.kv_heads = 12;
  m.ffn_hidden = 3072;
  m.norm = NormKind::kLayerNorm;
  m.positions = PositionKind::kLearned;
  m.tied_embeddings = true;
  m.layers = {{LayerKind::kEmbedding, 1},
              {LayerKind::kGptBlock, 12},
              {LayerKind::kFinalNorm, 1},
              {LayerKind::kLmHead, 1}};
  return m;
}

// Llama 3 8B: 8,030,261,248 parameters (untied, RoPE, grouped-query attention).
inline ModelSpec Llama3Spec8b() {
  ModelSpec m;
  m.name = "llama3-8b";
  m.vocab_size = 128256;
  m.max_seq_len = 8192;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.norm = NormKind::kRmsNorm;
  m.positions = PositionKind::kRope;
  m.tied_embeddings = false;
  m.dtype = DType::kBf16;
  m.layers = {{LayerKind::kEmbedding, 1},
              {LayerKind::kLlamaBlock, 32},
              {LayerKind::kFinalNorm, 1},
              {LayerKind::kLmHead, 1}};
  return m;
}

// A GPT with made-up sizes: V 10, max_seq 6, h 8, a 2 (head size 4), f 32, 2 blocks, untied.
inline ModelSpec TinyGptSpec() {
  ModelSpec m;
  m.name = "tiny-gpt";
  m.vocab_size = 10;
  m.max_seq_len = 6;
  m.hidden = 8;
  m.heads = 2;
  m.kv_heads = 2;
  m.ffn_hidden = 32;
  m.layers = {{LayerKind::kEmbedding, 1},
              {LayerKind::kGptBlock, 2},
              {LayerKind::kFinalNorm, 1},
              {LayerKind::kLmHead, 1}};
  return m;
}

// A Llama with made-up sizes: V 10, h 8, a 2, kv 1 (kvd 4), f 16, 2 blocks, untied.
inline ModelSpec TinyLlamaSpec() {
  ModelSpec m;
  m.name = "tiny-llama";
  m.vocab_size = 10;
  m.max_seq_len = 6;
  m.hidden = 8;
  m.heads = 2;
  m.kv_heads = 1;
  m.ffn_hidden = 16;
  m.norm = NormKind::kRmsNorm;
  m.positions = PositionKind::kRope;
  m.layers = {{LayerKind::kEmbedding, 1},
              {LayerKind::kLlamaBlock, 2},
              {LayerKind::kFinalNorm, 1},
              {LayerKind::kLmHead, 1}};
  return m;
}

// `count` all-reduces of `bytes` in all, and no other tp collective.
inline GroupTraffic AllReduces(int count, int64_t bytes) {
  GroupTraffic t;
  t.all_reduce = {count, bytes};
  return t;
}

// Readable failure messages for EXPECT_EQ on whole costs.
inline void PrintTo(const LayerCost& c, std::ostream* os) {
  *os << "{fwd " << c.fwd_flops << ", bwd_input " << c.bwd_input_flops << ", bwd_weight "
      << c.bwd_weight_flops << ", recompute " << c.recompute_flops << ", params " << c.params
      << ", total_params " << c.total_params << ", param_bytes " << c.param_bytes
      << ", output_bytes " << c.output_bytes << ", stashed_bytes " << c.stashed_bytes;
  for (const auto& [name, t] : {std::pair("tp_fwd", &c.tp_fwd), std::pair("tp_bwd", &c.tp_bwd),
                                std::pair("tp_wgrad", &c.tp_wgrad)}) {
    *os << ", " << name << " ar " << t->all_reduce.count << "/" << t->all_reduce.bytes << " ag "
        << t->all_gather.count << "/" << t->all_gather.bytes << " rs " << t->reduce_scatter.count
        << "/" << t->reduce_scatter.bytes;
  }
  *os << "}";
}

}  // namespace trident
