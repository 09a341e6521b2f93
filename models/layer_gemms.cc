#include "models/layer_gemms.h"

namespace trident {

std::vector<GemmShape> LayerForwardGemms(const ModelSpec& model, LayerKind kind,
                                         const LayerShape& shape) {
  // A cp rank's tokens: S/cp of each sequence, attending to all S keys.
  return MakeLayerShapes(model, kind, {shape.tp, 0, shape.sequence_parallel, shape.cp})
      .ForwardGemms({shape.micro_batch, shape.seq_len / shape.cp});
}

}  // namespace trident
