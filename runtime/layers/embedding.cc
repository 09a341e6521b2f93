// Token (+ learned position) embedding, vocabulary-parallel. Legend in layer.h.
//   x_BSH = reduce(token_VlH[ids − begin], 0 where ids lie outside [begin, end))
//           + position_SH[s]                  (added after the reduce, once)
// Rank r holds the token rows of its VocabShard (models/layer_shapes.h: Megatron's padded
// split, as ShardSlice cuts the table). reduce is TpReduce (layer_ops.h): an all-reduce, or
// under sequence parallelism a reduce-scatter to this rank's S/t tokens (positions from
// tp_rank·S/t of the local sequence). Under context parallelism the ids are this rank's S/cp
// tokens of each sequence and the positions theirs (SequencePositions). The weight gradient gathers
// the output gradient (TpGatherKept: nothing to do without sequence parallelism) and scatter-adds
// it into the local rows. Stash: the local ids, 4·B·S bytes (as the cost model).
#include <span>
#include <vector>

#include "runtime/layers/layers_internal.h"

namespace trident {

namespace {

struct EmbeddingStash {
  Tensor local_ids_BS;                 // ids − begin, 0 where masked
  std::vector<int64_t> masked_tokens;  // host-side: tokens whose id another rank holds
  Tensor dy_BSH;                       // kept from BackwardInput for BackwardWeight
  int64_t Bytes() const { return SumBytes({&local_ids_BS, &dy_BSH}); }
};

class Embedding final : public Layer {
 public:
  Embedding(const ModelSpec& model, const LayerShapes& shapes, const LayerContext& context)
      : context_(context),
        shapes_(shapes),
        learned_positions_(model.positions == PositionKind::kLearned) {
    token_ = MakeParameter(context, shapes.Param("token.weight"), WeightInit());
    TRIDENT_CHECK(shapes.vocab_shard.Rows() > 0)
        << "tp " << context.tp_size << " leaves rank " << context.tp_rank << " no vocabulary rows";
    if (learned_positions_) {
      position_ = MakeParameter(context, shapes.Param("position.weight"), WeightInit());
    }
  }

  Tensor Forward(int micro_batch, Tensor ids_BS, const Tensor* /*targets*/) override {
    Compute& compute = *context_.compute;
    TRIDENT_CHECK(ids_BS.rank() == 2)
        << "embedding input must be ids [B, S], got " << ids_BS.ToString();
    EmbeddingStash stash = LocalIds(ids_BS);
    Tensor x_BSH = compute.Allocate(shapes_.Hidden(TokensOf(ids_BS)), context_.dtype);
    compute.Embedding(stash.local_ids_BS, token_.value, x_BSH);
    for (int64_t n : stash.masked_tokens) {
      Tensor row = RowOf(x_BSH, n);
      compute.Fill(0.0f, row);
    }
    x_BSH = TpReduce(context_, std::move(x_BSH));
    if (learned_positions_) AddPositions(x_BSH);
    stashes_.Put(micro_batch, std::move(stash));
    return x_BSH;
  }

  Tensor BackwardInput(int micro_batch, Tensor dy_BSH) override {
    stashes_.Get(micro_batch).dy_BSH = std::move(dy_BSH);
    return Tensor();
  }

  void BackwardWeight(int micro_batch) override {
    Compute& compute = *context_.compute;
    EmbeddingStash& st = stashes_.Get(micro_batch);
    Tensor dy_BSH = TpGatherKept(context_, st.dy_BSH);
    if (learned_positions_) {
      const TokenBlock tb = TokensOf(dy_BSH);
      Tensor positions_BS = PositionIds(tb, 0, tb.seq);
      compute.EmbeddingBackward(positions_BS, dy_BSH, position_.grad);
    }
    for (int64_t n : st.masked_tokens) {
      Tensor row = RowOf(dy_BSH, n);
      compute.Fill(0.0f, row);
    }
    compute.EmbeddingBackward(st.local_ids_BS, dy_BSH, token_.grad);
    stashes_.Erase(micro_batch);
  }

  void Discard(int micro_batch) override { stashes_.Erase(micro_batch); }

  std::vector<Parameter> Parameters() override {
    std::vector<Parameter> out = {token_.Ref()};
    if (learned_positions_) out.push_back(position_.Ref());
    return out;
  }

  int64_t StashBytes(int micro_batch) const override { return stashes_.Bytes(micro_batch); }

 private:
  // The ids as this rank's rows: id − begin, or 0 (and listed as masked) outside its range.
  EmbeddingStash LocalIds(const Tensor& ids_BS) {
    Compute& compute = *context_.compute;
    std::vector<int32_t> ids(static_cast<size_t>(ids_BS.numel()));
    compute.CopyToHost(ids_BS, std::span<int32_t>(ids));
    EmbeddingStash stash;
    const VocabShard& shard = shapes_.vocab_shard;
    for (size_t n = 0; n < ids.size(); ++n) {
      if (shard.Holds(ids[n])) {
        ids[n] = static_cast<int32_t>(shard.LocalRow(ids[n]));
      } else {
        stash.masked_tokens.push_back(static_cast<int64_t>(n));
        ids[n] = 0;
      }
    }
    stash.local_ids_BS = compute.Allocate(shapes_.Ids(TokensOf(ids_BS)), ElementType::kInt32);
    compute.CopyFromHost(std::span<const int32_t>(ids), stash.local_ids_BS);
    return stash;
  }

  // [B, S] int32 holding in column s the sequence position of token first + s of a local
  // sequence of `local_seq` tokens.
  Tensor PositionIds(const TokenBlock& tb, int64_t first, int64_t local_seq) {
    const std::vector<int64_t> positions = SequencePositions(context_, local_seq);
    const int64_t rows = position_.full_shape[0];  // whole on every rank
    std::vector<int32_t> ids(static_cast<size_t>(tb.Tokens()));
    for (size_t n = 0; n < ids.size(); ++n) {
      const int64_t p = positions[first + static_cast<int64_t>(n) % tb.seq];
      TRIDENT_CHECK(p < rows) << "position " << p << " exceeds max_seq_len " << rows;
      ids[n] = static_cast<int32_t>(p);
    }
    Tensor positions_BS = context_.compute->Allocate(shapes_.Ids(tb), ElementType::kInt32);
    context_.compute->CopyFromHost(std::span<const int32_t>(ids), positions_BS);
    return positions_BS;
  }

  void AddPositions(Tensor& x_BSH) {
    Compute& compute = *context_.compute;
    const TokenBlock tb = TokensOf(x_BSH);
    const bool split = context_.sequence_parallel;
    const int64_t first = split ? context_.tp_rank * tb.seq : 0;
    Tensor positions_BS = PositionIds(tb, first, split ? tb.seq * context_.tp_size : tb.seq);
    Tensor pos_BSH = compute.Allocate(x_BSH.shape(), x_BSH.type());
    compute.Embedding(positions_BS, position_.value, pos_BSH);
    compute.Add(x_BSH, pos_BSH, x_BSH);
  }

  LayerContext context_;
  LayerShapes shapes_;
  bool learned_positions_;   // else RoPE in the blocks: no position table
  OwnedParameter token_;     // [V, H] -> [Vl, H]
  OwnedParameter position_;  // [max_seq_len, H], whole; undefined with RoPE
  StashMap<EmbeddingStash> stashes_;
};

}  // namespace

std::unique_ptr<Layer> MakeEmbedding(const ModelSpec& model, const LayerShapes& shapes,
                                     const LayerContext& context) {
  return std::make_unique<Embedding>(model, shapes, context);
}

}  // namespace trident
