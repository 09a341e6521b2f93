// The case families of cuda_ops_test, in two files: matrix products, elementwise ops (casts,
// bias ops, activations) and optimizers in cuda_op_cases.cc, which also assembles the table
// (AllOpCases, cuda_ops_harness.h); softmax and norms, embedding and loss in
// cuda_op_cases_norm_loss.cc. What a case is and how it is checked: cuda_ops_harness.h.
//
// Shape legend: N rows, C columns, V vocabulary, S sequence, B sequences, A heads, D head size,
// H hidden (A·D); M, N, K the GEMM dimensions ([M × K] · [K × N]).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "cuda_ops_harness.h"

namespace trident {

// A row shape [N, C], labelled "<N>x<C>".
struct Rows {
  int64_t n, c;
  int64_t numel() const { return n * c; }
  std::string Label() const { return std::to_string(n) + "x" + std::to_string(c); }
};

// Adds "<op>_<N>x<C>" for every row shape.
void AddRowCases(std::vector<OpCase>& cases, const std::string& op, Family family,
                 std::initializer_list<Rows> shapes, void (*run)(OpContext&, Rows));

// The families of cuda_op_cases_norm_loss.cc.
void AddSoftmaxCases(std::vector<OpCase>& cases);
void AddNormCases(std::vector<OpCase>& cases);
void AddEmbeddingLossCases(std::vector<OpCase>& cases);

}  // namespace trident
