// The constructors behind MakeLayer, one per layer kind. Legend in layer.h.
#pragma once

#include <memory>

#include "runtime/layers/block_parts.h"
#include "runtime/layers/layer.h"

namespace trident {

std::unique_ptr<Layer> MakeEmbedding(const ModelSpec& model, const LayerContext& context);
std::unique_ptr<Layer> MakeFinalNorm(const ModelSpec& model, const LayerContext& context);
std::unique_ptr<Layer> MakeLmHead(const ModelSpec& model, const LayerContext& context);
std::unique_ptr<Layer> MakeGptBlock(const ModelSpec& model, const LayerContext& context);
std::unique_ptr<Layer> MakeMlpBlock(const ModelSpec& model, const LayerContext& context);
std::unique_ptr<Layer> MakeLlamaBlock(const ModelSpec& model, const LayerContext& context);

// Vocabulary-parallel cross-entropy for tp > 1 (vocab_parallel_loss.cc): returns the mean loss
// over the N tokens and overwrites this rank's logits [N, Vl] (vocabulary columns
// [vocab_begin, vocab_begin + Vl)) with the softmax probabilities. Collective over tp_comm.
float VocabParallelCrossEntropy(const LayerContext& context, const Tensor& targets_N,
                                int64_t vocab_begin, Tensor& logits_to_probs_NVl);
// Overwrites the probabilities with dlogits = dloss / N · (probs − onehot(target)). Local.
void VocabParallelCrossEntropyBackward(const LayerContext& context, const Tensor& targets_N,
                                       int64_t vocab_begin, float dloss,
                                       Tensor& probs_to_dlogits_NVl);

}  // namespace trident
