#include "runtime/train/train_checkpoint.h"

#include <map>

#include "runtime/checkpoint/checkpoint.h"
#include "runtime/train/float_message.h"

namespace trident {
namespace {

constexpr const char* kOptimizerKey = "optimizer";

// The values of `t`; none for an undefined tensor (an optimizer state the optimizer lacks).
std::vector<float> ToHost(Compute& compute, const Tensor& t) {
  return t.defined() ? compute.CopyToHost(t) : std::vector<float>();
}

// The whole optimizer state `t` of a parameter of `numel` elements: gathered over the shard
// group from every rank's chunk with sharding.
StatusOr<std::vector<float>> StateToHost(const TrainState& s, const Tensor& t, int64_t numel) {
  const DpShard& shard = s.optimizer->shard();
  if (!t.defined() || !shard.sharded()) return ToHost(*s.compute, t);
  return shard.Gather(*s.compute, t, numel);
}

// One shard as it travels: which tensor, which slice, and the values.
struct Shard {
  int layer = 0;
  std::string name;
  SliceAxis axis = SliceAxis::kFull;
  Shape full_shape;
  Shape shape;
  std::vector<float> value, exp_avg, exp_avg_sq;
};

StatusOr<std::vector<float>> EncodeShards(const TrainState& s) {
  FloatWriter w;
  std::vector<ModelParameter>& params = s.model->parameters();
  const ParamChunks chunks = s.grad_sync != nullptr ? s.grad_sync->Chunks() : ParamChunks{};
  for (size_t i = 0; i < params.size(); ++i) {
    const ModelParameter& p = params[i];
    if (p.tied_copy) continue;
    w.Int(p.layer);
    w.Text(p.param.name);
    w.Int(static_cast<int>(p.param.slice.axis));
    w.Int(static_cast<int64_t>(p.param.full_shape.size()));
    for (int64_t d : p.param.full_shape) w.Int(d);
    const Shape shape = p.param.shape();
    w.Int(static_cast<int64_t>(shape.size()));
    for (int64_t d : shape) w.Int(d);
    const int64_t numel = p.param.numel();
    if (const Tensor& master = s.optimizer->Master(i); master.defined()) {
      // Mixed precision: the fp32 master weights, not the bf16 values.
      TRIDENT_ASSIGN_OR_RETURN(std::vector<float> weights, StateToHost(s, master, numel));
      w.Floats(weights);
    } else if (p.param.value->defined()) {
      w.Floats(ToHost(*s.compute, *p.param.value));
    } else {  // released: every rank of the shard group gathers it
      TRIDENT_ASSIGN_OR_RETURN(std::vector<float> value,
                               s.optimizer->shard().Gather(*s.compute, chunks.values[i], numel));
      w.Floats(value);
    }
    TRIDENT_ASSIGN_OR_RETURN(std::vector<float> avg, StateToHost(s, s.optimizer->ExpAvg(i), numel));
    TRIDENT_ASSIGN_OR_RETURN(std::vector<float> sq,
                             StateToHost(s, s.optimizer->ExpAvgSq(i), numel));
    w.Floats(avg);
    w.Floats(sq);
  }
  return std::move(w.out());
}

StatusOr<Shape> ReadShape(FloatReader& r) {
  TRIDENT_ASSIGN_OR_RETURN(int64_t n, r.Int());
  Shape shape;
  for (int64_t i = 0; i < n; ++i) {
    TRIDENT_ASSIGN_OR_RETURN(int64_t d, r.Int());
    shape.push_back(d);
  }
  return shape;
}

StatusOr<std::vector<Shard>> DecodeShards(const std::vector<float>& message) {
  FloatReader r(message);
  std::vector<Shard> shards;
  while (!r.AtEnd()) {
    Shard s;
    TRIDENT_ASSIGN_OR_RETURN(int64_t layer, r.Int());
    s.layer = static_cast<int>(layer);
    TRIDENT_ASSIGN_OR_RETURN(s.name, r.Text());
    TRIDENT_ASSIGN_OR_RETURN(int64_t axis, r.Int());
    s.axis = static_cast<SliceAxis>(axis);
    TRIDENT_ASSIGN_OR_RETURN(s.full_shape, ReadShape(r));
    TRIDENT_ASSIGN_OR_RETURN(s.shape, ReadShape(r));
    TRIDENT_ASSIGN_OR_RETURN(s.value, r.Floats());
    TRIDENT_ASSIGN_OR_RETURN(s.exp_avg, r.Floats());
    TRIDENT_ASSIGN_OR_RETURN(s.exp_avg_sq, r.Floats());
    shards.push_back(std::move(s));
  }
  return shards;
}

// The full tensor of one key from its shards in tp order.
StatusOr<HostTensor> Join(const std::vector<const Shard*>& shards,
                          std::vector<float> Shard::*field) {
  std::vector<HostTensor> parts;
  for (const Shard* s : shards) parts.push_back(HostTensor{s->shape, s->*field});
  if (shards.front()->axis == SliceAxis::kFull) return parts.front();
  return ConcatenateShards(parts, shards.front()->axis);
}

StatusOr<Checkpoint> Assemble(const std::vector<Shard>& shards, const TrainState& s, int64_t step) {
  std::map<std::pair<int, std::string>, std::vector<const Shard*>> by_key;
  for (const Shard& shard : shards) by_key[{shard.layer, shard.name}].push_back(&shard);
  Checkpoint ckpt;
  ckpt.metadata.step = step;
  ckpt.metadata.model = s.layout->plan().model.name;
  ckpt.metadata.extra[kOptimizerKey] = NameOf(OptimizerKindNames(), s.optimizer->options().kind);
  for (const auto& [key, parts] : by_key) {
    TRIDENT_ASSIGN_OR_RETURN(HostTensor value, Join(parts, &Shard::value));
    ckpt.SetParam(key.first, key.second, std::move(value));
    if (parts.front()->exp_avg.empty()) continue;
    TRIDENT_ASSIGN_OR_RETURN(HostTensor avg, Join(parts, &Shard::exp_avg));
    HostTensor sq{avg.shape, {}};
    if (!parts.front()->exp_avg_sq.empty()) {
      TRIDENT_ASSIGN_OR_RETURN(sq, Join(parts, &Shard::exp_avg_sq));
    }
    if (sq.values.empty()) sq.values.assign(avg.values.size(), 0.0f);
    ckpt.SetOptimizerState(key.first, key.second, std::move(avg), std::move(sq));
  }
  return ckpt;
}

Status CopyIn(Compute& compute, const StatusOr<HostTensor>& host, Tensor& dst) {
  TRIDENT_RETURN_IF_ERROR(host.status());
  compute.CopyFromHost(std::span<const float>(host->values), dst);
  return Status::Ok();
}

// This rank's chunk of a whole optimizer state.
Status CopyChunkIn(Compute& compute, const DpShard& shard, const StatusOr<HostTensor>& host,
                   Tensor& dst) {
  TRIDENT_RETURN_IF_ERROR(host.status());
  const ShardSpan span = shard.Of(static_cast<int64_t>(host->values.size()));
  compute.CopyFromHost(std::span<const float>(host->values).subspan(span.offset, span.length), dst);
  return Status::Ok();
}

Status CheckCompatible(const CheckpointMetadata& metadata, const std::string& path,
                       const std::string& model, OptimizerKind optimizer) {
  if (metadata.model != model) {
    return InvalidArgument(path + ": written for model " + metadata.model +
                           ", but the plan trains " + model);
  }
  auto it = metadata.extra.find(kOptimizerKey);
  const std::string& mine = NameOf(OptimizerKindNames(), optimizer);
  if (it != metadata.extra.end() && it->second != mine) {
    return InvalidArgument(path + ": written by optimizer " + it->second + ", but this run uses " +
                           mine + "; hint: pass --optimizer " + it->second);
  }
  return Status::Ok();
}

}  // namespace

Status SaveTrainCheckpoint(const TrainState& s, int64_t step, const std::string& path) {
  MeshCoords coords = s.layout->rank_map().Coords(s.rank);
  const bool contributes = coords.dp == 0 && coords.cp == 0;
  std::vector<float> mine;  // with sharding every rank takes part in the state's gathers
  if (contributes || s.optimizer->shard().sharded()) {
    TRIDENT_ASSIGN_OR_RETURN(mine, EncodeShards(s));
  }
  if (s.rank != 0) {
    return contributes ? SendMessage(*s.world, mine, 0, s.timeout) : Status::Ok();
  }
  std::vector<Shard> shards;
  for (int r = 0; r < s.layout->NumRanks(); ++r) {
    const MeshCoords peer = s.layout->rank_map().Coords(r);
    if (peer.dp != 0 || peer.cp != 0) continue;
    std::vector<float> message;
    if (r == 0) {
      message = std::move(mine);
    } else {
      TRIDENT_ASSIGN_OR_RETURN(message, ReceiveMessage(*s.world, r, s.timeout));
    }
    TRIDENT_ASSIGN_OR_RETURN(std::vector<Shard> part, DecodeShards(message));
    for (Shard& shard : part) shards.push_back(std::move(shard));
  }
  TRIDENT_ASSIGN_OR_RETURN(Checkpoint ckpt, Assemble(shards, s, step));
  return WriteCheckpoint(path, ckpt);
}

Status CheckResumable(const std::string& path, const Plan& plan, OptimizerKind optimizer) {
  TRIDENT_ASSIGN_OR_RETURN(CheckpointMetadata metadata, ReadCheckpointMetadata(path));
  return CheckCompatible(metadata, path, plan.model.name, optimizer);
}

StatusOr<int64_t> LoadTrainCheckpoint(const TrainState& s, const std::string& path) {
  TRIDENT_ASSIGN_OR_RETURN(CheckpointReader reader, CheckpointReader::Open(path));
  TRIDENT_RETURN_IF_ERROR(CheckCompatible(reader.metadata(), path, s.layout->plan().model.name,
                                          s.optimizer->options().kind));
  std::vector<ModelParameter>& params = s.model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i].param;
    const int layer = params[i].layer;
    // bf16 values are the weights rounded; the master weights keep them whole (this rank's chunk).
    const StatusOr<HostTensor> weights = reader.ReadParam(layer, p.name, p.full_shape, p.slice);
    TRIDENT_RETURN_IF_ERROR(CopyIn(*s.compute, weights, *p.value));
    Tensor& master = s.optimizer->Master(i);
    if (master.defined()) {
      TRIDENT_RETURN_IF_ERROR(CopyChunkIn(*s.compute, s.optimizer->shard(), weights, master));
    }
    Tensor& avg = s.optimizer->ExpAvg(i);
    if (avg.defined() && !reader.Contains(ExpAvgKey(layer, p.name))) {
      return InvalidArgument(reader.path() +
                             " holds no optimizer moments (written by sgd "
                             "without momentum); hint: resume with --optimizer sgd --momentum 0");
    }
    if (avg.defined()) {
      TRIDENT_RETURN_IF_ERROR(
          CopyChunkIn(*s.compute, s.optimizer->shard(),
                      reader.ReadSlice(ExpAvgKey(layer, p.name), p.full_shape, p.slice), avg));
    }
    Tensor& sq = s.optimizer->ExpAvgSq(i);
    if (sq.defined()) {
      TRIDENT_RETURN_IF_ERROR(
          CopyChunkIn(*s.compute, s.optimizer->shard(),
                      reader.ReadSlice(ExpAvgSqKey(layer, p.name), p.full_shape, p.slice), sq));
    }
  }
  return reader.metadata().step;
}

}  // namespace trident
