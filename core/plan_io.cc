// YAML reading and writing of Plan (see plan.h and core/README.md for the format).
#include "core/document.h"
#include "core/plan.h"
#include "core/yaml_io.h"

namespace trident {
namespace {

Status ReadStage(YamlMap& item, std::vector<PlanStage>* stages) {
  PlanStage s;
  TRIDENT_RETURN_IF_ERROR(item.Get("first_layer", &s.first_layer));
  TRIDENT_RETURN_IF_ERROR(item.Get("num_layers", &s.num_layers));
  TRIDENT_RETURN_IF_ERROR(item.Get("replicas", &s.replicas));
  TRIDENT_RETURN_IF_ERROR(item.GetEnum("recompute", RecomputeModeNames(), &s.recompute));
  TRIDENT_RETURN_IF_ERROR(item.GetOptional("predicted_time_ms", &s.predicted_time_ms));
  TRIDENT_RETURN_IF_ERROR(item.GetOptional("predicted_memory_bytes", &s.predicted_memory_bytes));
  stages->push_back(s);
  return Status::Ok();
}

Status ReadMesh(YamlMap& map, Mesh* mesh) {
  TRIDENT_ASSIGN_OR_RETURN(YamlMap m, map.GetMap("mesh"));
  TRIDENT_RETURN_IF_ERROR(m.Get("dp", &mesh->dp));
  TRIDENT_RETURN_IF_ERROR(m.Get("pp", &mesh->pp));
  TRIDENT_RETURN_IF_ERROR(m.GetOptional("cp", &mesh->cp));
  TRIDENT_RETURN_IF_ERROR(m.Get("tp", &mesh->tp));
  return m.Finish();
}

Status ReadPrediction(YamlMap& map, PlanPrediction* q) {
  if (!map.Has("predicted")) return Status::Ok();
  TRIDENT_ASSIGN_OR_RETURN(YamlMap m, map.GetMap("predicted"));
  TRIDENT_RETURN_IF_ERROR(m.Get("step_time_ms", &q->step_time_ms));
  TRIDENT_RETURN_IF_ERROR(m.Get("tokens_per_s", &q->tokens_per_s));
  TRIDENT_RETURN_IF_ERROR(m.Get("bubble_fraction", &q->bubble_fraction));
  TRIDENT_RETURN_IF_ERROR(m.Get("peak_memory_bytes", &q->peak_memory_bytes));
  return m.Finish();
}

Status ReadProvenance(YamlMap& map, Provenance* p) {
  if (!map.Has("provenance")) return Status::Ok();
  TRIDENT_ASSIGN_OR_RETURN(YamlMap m, map.GetMap("provenance"));
  TRIDENT_RETURN_IF_ERROR(m.Get("planner_version", &p->planner_version));
  TRIDENT_RETURN_IF_ERROR(m.GetOptional("profile_digest", &p->profile_digest));
  TRIDENT_RETURN_IF_ERROR(m.GetOptional("cluster_digest", &p->cluster_digest));
  return m.Finish();
}

// dp_sharding and dp_shard, or the `zero1` flag of plans written before them (true: optimizer).
Status ReadSharding(YamlMap& map, Plan* p) {
  bool zero1 = false;
  TRIDENT_RETURN_IF_ERROR(map.GetOptional("zero1", &zero1));
  if (map.Has("zero1") && map.Has("dp_sharding")) {
    return map.Error("zero1", "is the old name of dp_sharding: optimizer, and both are given",
                     "remove zero1");
  }
  p->dp_sharding = zero1 ? DpSharding::kOptimizer : DpSharding::kNone;
  TRIDENT_RETURN_IF_ERROR(map.GetOptionalEnum("dp_sharding", DpShardingNames(), &p->dp_sharding));
  TRIDENT_RETURN_IF_ERROR(map.GetOptional("dp_shard", &p->dp_shard));
  if (p->dp_shard == p->mesh.dp) p->dp_shard = 0;
  return Status::Ok();
}

Status ReadPlan(YamlMap& map, Plan* p) {
  TRIDENT_ASSIGN_OR_RETURN(YamlMap model, map.GetMap("model"));
  TRIDENT_RETURN_IF_ERROR(ReadModelFields(model, &p->model));
  TRIDENT_RETURN_IF_ERROR(model.Finish());
  TRIDENT_RETURN_IF_ERROR(map.Get("cluster", &p->cluster));
  TRIDENT_RETURN_IF_ERROR(map.Get("devices", &p->devices));
  TRIDENT_RETURN_IF_ERROR(map.Get("devices_per_node", &p->devices_per_node));
  TRIDENT_RETURN_IF_ERROR(ReadMesh(map, &p->mesh));
  TRIDENT_RETURN_IF_ERROR(map.GetOptional("virtual_stages", &p->virtual_stages));
  TRIDENT_RETURN_IF_ERROR(map.Get("micro_batch_size", &p->micro_batch_size));
  TRIDENT_RETURN_IF_ERROR(map.Get("num_micro_batches", &p->num_micro_batches));
  TRIDENT_RETURN_IF_ERROR(map.Get("global_batch", &p->global_batch));
  TRIDENT_RETURN_IF_ERROR(map.Get("seq_len", &p->seq_len));
  TRIDENT_RETURN_IF_ERROR(map.GetEnum("dtype", DTypeNames(), &p->dtype));
  TRIDENT_RETURN_IF_ERROR(map.GetEnum("schedule", ScheduleKindNames(), &p->schedule));
  TRIDENT_RETURN_IF_ERROR(ReadSharding(map, p));
  TRIDENT_RETURN_IF_ERROR(map.GetOptional("sequence_parallel", &p->sequence_parallel));
  TRIDENT_RETURN_IF_ERROR(
      map.ForEachMap("stages", [p](YamlMap& item, int) { return ReadStage(item, &p->stages); }));
  TRIDENT_RETURN_IF_ERROR(ReadPrediction(map, &p->predicted));
  return ReadProvenance(map, &p->provenance);
}

void WriteStages(YamlWriter& out, const std::vector<PlanStage>& stages) {
  out.Key("stages").BeginList();
  for (const PlanStage& s : stages) {
    out.BeginMap(/*flow=*/true)
        .Field("first_layer", s.first_layer)
        .Field("num_layers", s.num_layers)
        .Field("replicas", s.replicas)
        .Field("recompute", NameOf(RecomputeModeNames(), s.recompute))
        .Field("predicted_time_ms", s.predicted_time_ms)
        .Field("predicted_memory_bytes", s.predicted_memory_bytes)
        .EndMap();
  }
  out.EndList();
}

void WriteTail(YamlWriter& out, const Plan& p) {
  out.Key("predicted").BeginMap();
  out.Field("step_time_ms", p.predicted.step_time_ms)
      .Field("tokens_per_s", p.predicted.tokens_per_s)
      .Field("bubble_fraction", p.predicted.bubble_fraction)
      .Field("peak_memory_bytes", p.predicted.peak_memory_bytes)
      .EndMap();
  out.Key("provenance").BeginMap();
  out.Field("planner_version", p.provenance.planner_version)
      .Field("profile_digest", p.provenance.profile_digest)
      .Field("cluster_digest", p.provenance.cluster_digest)
      .EndMap();
}

}  // namespace

StatusOr<Plan> ParsePlan(std::string_view text, const std::string& file) {
  return ParseDocument<Plan>(text, file, "plan", ReadPlan);
}

StatusOr<Plan> LoadPlan(const std::string& path) {
  return LoadDocument<Plan>(path, "plan", ReadPlan);
}

std::string PlanToYaml(const Plan& p) {
  YamlWriter out;
  out.BeginMap();
  WriteDocumentHeader(out, "plan", Plan::kFormatVersion);
  out.Key("model").BeginMap();
  WriteModelFields(p.model, out);
  out.EndMap();
  out.Field("cluster", p.cluster)
      .Field("devices", p.devices)
      .Field("devices_per_node", p.devices_per_node);
  out.Key("mesh").BeginMap(/*flow=*/true);
  out.Field("dp", p.mesh.dp)
      .Field("pp", p.mesh.pp)
      .Field("cp", p.mesh.cp)
      .Field("tp", p.mesh.tp)
      .EndMap();
  out.Field("virtual_stages", p.virtual_stages)
      .Field("micro_batch_size", p.micro_batch_size)
      .Field("num_micro_batches", p.num_micro_batches)
      .Field("global_batch", p.global_batch)
      .Field("seq_len", p.seq_len)
      .Field("dtype", DTypeName(p.dtype))
      .Field("schedule", NameOf(ScheduleKindNames(), p.schedule))
      .Field("dp_sharding", NameOf(DpShardingNames(), p.dp_sharding))
      .Field("dp_shard", p.dp_shard > 0 ? p.dp_shard : p.mesh.dp)
      .Field("sequence_parallel", p.sequence_parallel);
  WriteStages(out, p.stages);
  WriteTail(out, p);
  out.EndMap();
  return out.Text();
}

}  // namespace trident
