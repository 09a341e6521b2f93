// The per-family parts of MakeLayerShapes and LayerShapes. Not part of the models/ API: include
// it only from models/*.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "models/layer_shapes.h"

namespace trident {

// This rank's range of a dim split over split.tp (the padded split of layer_shapes.h).
VocabShard ShardRange(int64_t dim, const RankSplit& split);
// A parameter of whole shape `full` split along `axis`, as rank `split` holds it.
ParamShape MakeParamShape(std::string name, std::vector<int64_t> full, ShardAxis axis,
                          const RankSplit& split);
// One linear layer applied to every token: [tokens × in]·[in × out].
GemmShape LinearGemm(const TokenBlock& tb, int64_t in, int64_t out);

// Every parameter of a layer of `kind`, in the layer's order.
std::vector<ParamShape> LayerParamShapes(const ModelSpec& model, LayerKind kind,
                                         const RankSplit& split);  // layer_param_shapes.cc

std::vector<StashTensor> GptBlockStash(const LayerShapes& s, const TokenBlock& tb);
std::vector<StashTensor> LlamaBlockStash(const LayerShapes& s, const TokenBlock& tb);
std::vector<StashTensor> MlpBlockStash(const LayerShapes& s, const TokenBlock& tb);
std::vector<StashTensor> VocabLayerStash(const LayerShapes& s, const TokenBlock& tb);
std::vector<GemmShape> BlockGemms(const LayerShapes& s, const TokenBlock& tb);  // blocks

}  // namespace trident
