// The constructors behind MakeLayer, one per layer kind, each given the layer's shapes on this
// rank (models/layer_shapes.h). Legend in layer.h.
#pragma once

#include <memory>

#include "models/layer_shapes.h"
#include "runtime/layers/block_parts.h"
#include "runtime/layers/layer.h"

namespace trident {

std::unique_ptr<Layer> MakeEmbedding(const ModelSpec& model, const LayerShapes& shapes,
                                     const LayerContext& context);
std::unique_ptr<Layer> MakeFinalNorm(const ModelSpec& model, const LayerShapes& shapes,
                                     const LayerContext& context);
std::unique_ptr<Layer> MakeLmHead(const ModelSpec& model, const LayerShapes& shapes,
                                  const LayerContext& context);
std::unique_ptr<Layer> MakeGptBlock(const ModelSpec& model, const LayerShapes& shapes,
                                    const LayerContext& context);
std::unique_ptr<Layer> MakeMlpBlock(const LayerShapes& shapes, const LayerContext& context);
std::unique_ptr<Layer> MakeLlamaBlock(const ModelSpec& model, const LayerShapes& shapes,
                                      const LayerContext& context);

// Vocabulary-parallel cross-entropy for tp > 1 (vocab_parallel_loss.cc): returns the mean loss
// over the N tokens and overwrites this rank's logits [N, Vl] (the vocabulary rows of `shard`)
// with the softmax probabilities. Collective over tp_comm.
float VocabParallelCrossEntropy(const LayerContext& context, const Tensor& targets_N,
                                const VocabShard& shard, Tensor& logits_to_probs_NVl);
// Overwrites the probabilities with dlogits = dloss / N · (probs − onehot(target)). Local.
void VocabParallelCrossEntropyBackward(const LayerContext& context, const Tensor& targets_N,
                                       const VocabShard& shard, float dloss,
                                       Tensor& probs_to_dlogits_NVl);

}  // namespace trident
