#include "runtime/train/stage_model.h"

#include "core/check.h"

namespace trident {
namespace {

constexpr const char* kTokenTable = "token.weight";

}  // namespace

StageModel::StageModel(const JobLayout& layout, int rank, Compute* compute, Comm* tp_comm,
                       Comm* cp_comm, uint64_t seed) {
  const Plan& plan = layout.plan();
  const std::vector<int> mine = layout.StagesOf(rank);
  tie_split_ =
      plan.model.tied_embeddings && layout.PositionOf(0) != layout.PositionOf(layout.LastStage());
  LayerContext base;
  base.compute = compute;
  base.tp_comm = plan.mesh.tp > 1 ? tp_comm : nullptr;
  base.tp_rank = layout.rank_map().Coords(rank).tp;
  base.tp_size = plan.mesh.tp;
  base.sequence_parallel = plan.sequence_parallel;
  base.cp_comm = plan.mesh.cp > 1 ? cp_comm : nullptr;
  base.cp_rank = layout.rank_map().Coords(rank).cp;
  base.cp_size = plan.mesh.cp;
  base.seed = seed;
  base.dtype = ElementTypeOf(plan.dtype);
  if (tie_split_ && mine.back() == layout.LastStage()) {
    Slice rows = ShardSlice({plan.model.vocab_size, plan.model.hidden}, SliceAxis::kRows,
                            base.tp_size, base.tp_rank);
    tied_full_shape_ = {plan.model.vocab_size, plan.model.hidden};
    tied_slice_ = rows;
    Shape shape = SliceShape(tied_full_shape_, rows);
    tied_value_ = compute->Allocate(shape, base.dtype);
    tied_grad_ = compute->Allocate(shape);
  }
  for (int stage : mine) BuildStage(layout, stage, base);
  const bool tied_here = plan.model.tied_embeddings && !tie_split_;
  CollectParameters(base.tp_size, tied_here ? layout.LastStage() : -1, plan.model.NumLayers() - 1);
}

void StageModel::BuildStage(const JobLayout& layout, int stage, const LayerContext& base) {
  const ModelSpec& model = layout.plan().model;
  StageLayers built;
  built.stage = stage;
  built.first_layer = layout.plan().stages[stage].first_layer;
  for (int layer = built.first_layer; layer < layout.EndLayer(stage); ++layer) {
    LayerContext context = base;
    context.layer_index = layer;
    context.recompute = layout.plan().stages[stage].recompute;
    LayerKind kind = model.LayerAt(layer);
    if (kind == LayerKind::kLmHead && model.tied_embeddings) {
      if (tied_value_.defined()) {
        context.tied_weight = &tied_value_;
        context.tied_weight_grad = &tied_grad_;
      } else {
        Layer& embedding =
            stages_.empty() ? *built.layers.front() : *stages_.front().layers.front();
        Parameter table = embedding.Parameters().front();
        TRIDENT_CHECK(table.name == kTokenTable)
            << "the embedding's first parameter is " << table.name << ", not " << kTokenTable;
        context.tied_weight = table.value;
        context.tied_weight_grad = table.grad;
      }
    }
    built.layers.push_back(MakeLayer(model, kind, context));
  }
  stages_.push_back(std::move(built));
}

void StageModel::CollectParameters(int tp_size, int head_stage, int head_layer) {
  for (StageLayers& stage : stages_) {
    for (size_t i = 0; i < stage.layers.size(); ++i) {
      for (Parameter& p : stage.layers[i]->Parameters()) {
        ModelParameter mp{stage.stage, stage.first_layer + static_cast<int>(i), p};
        mp.tp_replicated = tp_size > 1 && p.slice.axis == SliceAxis::kFull;
        mp.tied_source = tie_split_ && stage.stage == 0 && p.name == kTokenTable;
        if (head_stage >= 0 && stage.stage == 0 && p.name == kTokenTable) {
          mp.also_stage = head_stage;
          mp.also_layer = head_layer;
        }
        parameters_.push_back(std::move(mp));
      }
    }
  }
  if (!tied_value_.defined()) return;
  // The copy is keyed like the table it mirrors (layer 0), but never written to checkpoints.
  ModelParameter copy;
  copy.stage = stages_.back().stage;
  copy.layer = 0;
  copy.param = Parameter{kTokenTable, &tied_value_, &tied_grad_, tied_full_shape_, tied_slice_};
  copy.tied_copy = true;
  parameters_.push_back(std::move(copy));
}

StageLayers& StageModel::Stage(int stage) {
  for (StageLayers& s : stages_) {
    if (s.stage == stage) return s;
  }
  TRIDENT_CHECK(false) << "this rank does not run stage " << stage;
  return stages_.front();
}

}  // namespace trident
