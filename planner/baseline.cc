#include "planner/baseline.h"

#include "core/text_format.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

std::string GiB(int64_t bytes) { return FormatBytes(static_cast<double>(bytes)); }

// "recompute selective", or "recompute per stage" when the stages differ.
std::string Recompute(const Plan& plan) {
  if (!UniformRecompute(plan.stages)) return "per-stage recompute";
  return "recompute " + NameOf(RecomputeModeNames(), plan.stages.front().recompute);
}

std::string ScheduleText(const Plan& plan) {
  const std::string name = NameOf(ScheduleKindNames(), plan.schedule);
  return plan.virtual_stages > 1 ? name + " (v " + Str(plan.virtual_stages) + ")" : name;
}

// "full", "optimizer in groups of 4".
std::string ShardingText(const Plan& plan) {
  std::string text = NameOf(DpShardingNames(), plan.dp_sharding);
  return plan.dp_shard > 0 ? text + " in groups of " + Str(plan.dp_shard) : text;
}

// Whether the stages of `a` and `b` agree on `field` (REQUIRES: as many stages).
bool SameStages(const Plan& a, const Plan& b, int PlanStage::*field) {
  for (size_t i = 0; i < a.stages.size(); ++i) {
    if (a.stages[i].*field != b.stages[i].*field) return false;
  }
  return true;
}

}  // namespace

ModelSpec FrameworkModel(const ModelSpec& model, Framework framework) {
  ModelSpec m = model;
  if (framework == Framework::kTorchtitan) m.attention = AttentionKind::kFlash;
  return m;
}

std::vector<SearchRequest> ReplanRequests(const Plan& plan, Framework framework) {
  SearchRequest r;
  r.model = FrameworkModel(plan.model, framework);
  r.cluster_name = plan.cluster;
  r.devices = plan.devices;
  r.global_batch = plan.global_batch;
  r.seq_len = plan.seq_len;
  r.dtype = plan.dtype;
  r.constraints.replicate_stages = false;
  r.constraints.hybrid = false;
  r.constraints.dp_sharding = {DpSharding::kNone, DpSharding::kOptimizer};
  if (framework == Framework::kMegatron) {
    r.constraints.schedules = {ScheduleKind::k1F1B, ScheduleKind::kInterleaved1F1B};
    return {r};
  }
  if (framework == Framework::kTorchtitan) {
    r.constraints.schedules = {ScheduleKind::kGpipe, ScheduleKind::k1F1B,
                               ScheduleKind::kInterleaved1F1B};
    r.constraints.recompute = {RecomputeMode::kNone, RecomputeMode::kFull};
    r.constraints.sequence_parallel = true;
    SearchRequest data_parallel = r;
    data_parallel.constraints.tp = 1;
    data_parallel.constraints.pp = 1;
    data_parallel.constraints.dp_sharding = {DpSharding::kNone};
    SearchRequest fsdp = r;
    fsdp.constraints.dp_sharding = {DpSharding::kFull};
    fsdp.constraints.hybrid = true;
    if (plan.dtype != DType::kFp32) return {data_parallel, fsdp};
    r.constraints.dp = 1;
    r.constraints.dp_sharding = {DpSharding::kNone};
    return {data_parallel, fsdp, r};
  }
  r.constraints.schedules = {ScheduleKind::k1F1B};
  r.constraints.max_virtual_stages = 1;
  r.constraints.sequence_parallel = false;
  r.constraints.cp = 1;  // Ulysses, DeepSpeed's sequence parallelism, is another scheme
  r.constraints.recompute = {RecomputeMode::kNone, RecomputeMode::kFull};
  SearchRequest no_pipeline = r;
  r.constraints.tp = 1;
  no_pipeline.constraints.pp = 1;
  no_pipeline.constraints.dp_sharding = {DpSharding::kNone, DpSharding::kOptimizer,
                                         DpSharding::kGradients, DpSharding::kFull};
  return {r, no_pipeline};
}

Status CheckBaselineMatches(const Plan& baseline, const std::string& path, const SearchRequest& r) {
  auto differs = [&](const std::string& what, const std::string& theirs, const std::string& ours) {
    return InvalidArgument("--baseline " + path + ": " + what + " " + theirs +
                           ", but the search is for " + ours + "; compare plans of one job");
  };
  if (baseline.model.name != r.model.name || baseline.model.NumLayers() != r.model.NumLayers()) {
    return differs("trains", baseline.model.ToString(), r.model.ToString());
  }
  if (baseline.devices != r.devices)
    return differs("runs on", Str(baseline.devices) + " devices", Str(r.devices));
  if (baseline.global_batch != r.global_batch)
    return differs("has global batch", Str(baseline.global_batch), Str(r.global_batch));
  if (baseline.seq_len != r.seq_len)
    return differs("has sequence length", Str(baseline.seq_len), Str(r.seq_len));
  if (baseline.dtype != r.dtype)
    return differs("trains in", DTypeName(baseline.dtype), DTypeName(r.dtype) + " (--dtype)");
  return Status::Ok();
}

std::string ChangedChoices(const Plan& baseline, const Plan& best) {
  std::vector<std::string> changes;
  auto compare = [&](const std::string& what, const std::string& theirs, const std::string& ours) {
    if (theirs != ours) changes.push_back(what + ours + " instead of " + theirs);
  };
  compare("tp ", Str(baseline.mesh.tp), Str(best.mesh.tp));
  compare("cp ", Str(baseline.mesh.cp), Str(best.mesh.cp));
  compare("pp ", Str(baseline.mesh.pp), Str(best.mesh.pp));
  compare("dp ", Str(baseline.mesh.dp), Str(best.mesh.dp));
  compare("micro-batch ", Str(baseline.micro_batch_size), Str(best.micro_batch_size));
  compare("", ScheduleText(baseline), ScheduleText(best));
  compare("", Recompute(baseline), Recompute(best));
  compare("dp_sharding ", ShardingText(baseline), ShardingText(best));
  compare("", baseline.sequence_parallel ? "sequence parallelism" : "no sequence parallelism",
          best.sequence_parallel ? "sequence parallelism" : "no sequence parallelism");
  if (baseline.stages.size() == best.stages.size()) {
    if (!SameStages(baseline, best, &PlanStage::first_layer)) changes.push_back("other stage cuts");
    if (baseline.mesh.dp == best.mesh.dp && !SameStages(baseline, best, &PlanStage::replicas)) {
      changes.push_back("other per-stage replication");
    }
  }
  std::string text;
  for (const std::string& c : changes) text += (text.empty() ? "" : ", ") + c;
  return text;
}

std::string BaselineComparison(const Plan& baseline, const Evaluation& baseline_ev,
                               const std::string& path, const Plan& best,
                               const Evaluation& best_ev) {
  std::string text = "your configuration (" + path + "): " + FormatMs(baseline_ev.step_ms) +
                     " a step, " + GiB(baseline_ev.peak_memory_bytes) + " peak per rank";
  if (!baseline_ev.Fits()) text += " -- does not fit in the device's memory";
  text += "\nTrident's plan: " + FormatMs(best_ev.step_ms) + " a step, " +
          GiB(best_ev.peak_memory_bytes) + " peak per rank";
  const double change = 100 * (1 - best_ev.step_ms / baseline_ev.step_ms);
  const std::string changes = ChangedChoices(baseline, best);
  if (changes.empty()) return text + ": the same choices\n";
  text += ": " + FormatFixed(std::abs(change), 1) + (change >= 0 ? "% faster" : "% slower") +
          ", with " + changes + "\n";
  return text;
}

}  // namespace trident
