#include "models/layer_gemms.h"

namespace trident {

std::vector<GemmShape> LayerForwardGemms(const ModelSpec& model, LayerKind kind,
                                         const LayerShape& shape) {
  return MakeLayerShapes(model, kind, {shape.tp, 0})
      .ForwardGemms({shape.micro_batch, shape.seq_len});
}

}  // namespace trident
