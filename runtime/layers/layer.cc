#include "runtime/layers/layer.h"

#include "core/check.h"
#include "runtime/layers/layers_internal.h"

namespace trident {

namespace {

void CheckContext(const ModelSpec& model, const LayerContext& context) {
  TRIDENT_CHECK(context.compute != nullptr) << "LayerContext::compute is not set";
  TRIDENT_CHECK(context.tp_size >= 1 && context.tp_rank >= 0 && context.tp_rank < context.tp_size)
      << "tp rank " << context.tp_rank << " of " << context.tp_size;
  if (context.tp_size > 1) {
    TRIDENT_CHECK(context.tp_comm != nullptr) << "tp " << context.tp_size << " needs tp_comm";
    TRIDENT_CHECK(context.tp_comm->Size() == context.tp_size &&
                  context.tp_comm->Rank() == context.tp_rank)
        << "tp_comm is rank " << context.tp_comm->Rank() << " of " << context.tp_comm->Size()
        << " but the context says " << context.tp_rank << " of " << context.tp_size;
  }
  TRIDENT_CHECK(!context.sequence_parallel || context.tp_size > 1)
      << "sequence parallelism needs a tp group of 2 or more";
  TRIDENT_CHECK(context.cp_size == 1 ||
                (context.cp_comm != nullptr && context.cp_comm->Size() == context.cp_size))
      << "context parallelism over " << context.cp_size << " ranks needs their cp_comm";
  TRIDENT_CHECK(model.dropout == 0) << model.name << ": dropout " << model.dropout
                                    << " is not implemented by the layers; set dropout: 0";
}

}  // namespace

std::unique_ptr<Layer> MakeLayer(const ModelSpec& model, LayerKind kind,
                                 const LayerContext& context) {
  CheckContext(model, context);
  const LayerShapes shapes = MakeLayerShapes(
      model, kind, {context.tp_size, context.tp_rank, context.sequence_parallel, context.cp_size});
  switch (kind) {
    case LayerKind::kEmbedding:
      return MakeEmbedding(model, shapes, context);
    case LayerKind::kGptBlock:
      return MakeGptBlock(model, shapes, context);
    case LayerKind::kMlpBlock:
      return MakeMlpBlock(shapes, context);
    case LayerKind::kFinalNorm:
      return MakeFinalNorm(model, shapes, context);
    case LayerKind::kLmHead:
      return MakeLmHead(model, shapes, context);
    case LayerKind::kLlamaBlock:
      return MakeLlamaBlock(model, shapes, context);
    case LayerKind::kGeneric:
      break;  // no implementation: JobLayout and the launcher refuse such plans
  }
  TRIDENT_CHECK(false) << "unknown layer kind " << static_cast<int>(kind);
  return nullptr;
}

}  // namespace trident
