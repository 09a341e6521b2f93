// trident plan: search the fastest plan that fits, write it, and print why.
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/command.h"
#include "cli/cost_inputs.h"
#include "cli/fix_flag.h"
#include "cli/format.h"
#include "cli/plan_json.h"
#include "core/file_util.h"
#include "planner/baseline.h"
#include "planner/plan_inputs.h"
#include "planner/report.h"
#include "planner/search.h"

namespace trident {
namespace {

struct PlanOptions {
  std::string model;
  CostOptions cost;
  int devices = 0;  // 0: every device of the cluster
  int64_t global_batch = 0;
  int64_t seq_len = 0;  // 0: the model's max_seq_len
  std::string dtype;    // "": the model's
  std::vector<std::string> fix;
  std::vector<std::string> schedules;
  std::vector<std::string> recompute;
  // none and optimizer; gradients and full run too, but their per-layer collectives are not
  // yet overlapped as the cost model assumes (planner/README.md).
  std::vector<std::string> dp_sharding = {"none", "optimizer"};
  std::string sequence_parallel = "auto";
  double max_memory_gib = 0;
  std::vector<int> cuts;
  std::vector<int> replicas;
  bool exact = false;
  int runners_up = 5;
  std::string output = "plan.yaml";
  std::string trace;
  std::string baseline;  // "": none
  bool json = false;
};

// --sequence-parallel auto|on|off, checked against --fix tp.
Status ParseSequenceParallel(const std::string& mode, SearchConstraints* c) {
  if (mode == "auto") return Status::Ok();
  c->sequence_parallel = mode == "on";
  if (mode == "on" && c->tp == 1) {
    return InvalidArgument(
        "--sequence-parallel on contradicts --fix tp=1: sequence parallelism splits what a tp "
        "group leaves whole, so it needs tp > 1; drop one of them");
  }
  return Status::Ok();
}

// --dp-sharding LIST: levels by name, or all.
Status ParseDpSharding(const std::vector<std::string>& names, SearchConstraints* c) {
  for (const std::string& name : names) {
    if (name == "all") {
      c->dp_sharding.clear();
      for (const auto& [_, level] : DpShardingNames()) c->dp_sharding.push_back(level);
      return Status::Ok();
    }
    c->dp_sharding.push_back(*ValueOf(DpShardingNames(), name));
  }
  return Status::Ok();
}

// --fix cp=N needs 2·N dividing --seq; --sequence-parallel on with --fix tp needs tp dividing
// each cp rank's seq / cp tokens.
Status CheckSequenceSplit(const SearchConstraints& c, int64_t seq_len) {
  const int cp = c.cp.value_or(1);
  if (cp > 1 && seq_len % (2 * cp) != 0) {
    return InvalidArgument(
        "--fix cp=" + std::to_string(cp) + ": 2·cp = " + std::to_string(2 * cp) +
        " does not divide --seq " + std::to_string(seq_len) +
        " (context parallelism cuts every sequence into 2·cp chunks); pick a "
        "cp whose double divides the sequence length, or leave cp to the search");
  }
  const int64_t local_seq = seq_len / cp;
  if (c.sequence_parallel.value_or(false) && c.tp && local_seq % *c.tp != 0) {
    return InvalidArgument("--sequence-parallel on: tp " + std::to_string(*c.tp) +
                           " (--fix) does not divide " + (cp > 1 ? "--seq / cp = " : "--seq ") +
                           std::to_string(local_seq) +
                           ", and sequence parallelism splits the sequence over tp; pick a "
                           "sequence length tp divides, or --sequence-parallel auto");
  }
  return Status::Ok();
}

Status BuildRequest(const PlanOptions& o, const ModelSpec& model, const ClusterSpec& cluster,
                    SearchRequest* r) {
  r->model = model;
  r->cluster_name = cluster.name;
  r->devices = o.devices > 0 ? o.devices : static_cast<int>(cluster.TotalDevices());
  r->global_batch = o.global_batch;
  r->seq_len = o.seq_len > 0 ? o.seq_len : model.max_seq_len;
  r->dtype = ValueOf(DTypeNames(), o.dtype).value_or(model.dtype);
  r->runners_up = o.runners_up;
  SearchConstraints& c = r->constraints;
  TRIDENT_RETURN_IF_ERROR(ParseFix(o.fix, &c));
  for (const std::string& s : o.schedules) c.schedules.push_back(*ValueOf(ScheduleKindNames(), s));
  for (const std::string& m : o.recompute) c.recompute.push_back(*ValueOf(RecomputeModeNames(), m));
  TRIDENT_RETURN_IF_ERROR(ParseDpSharding(o.dp_sharding, &c));
  TRIDENT_RETURN_IF_ERROR(ParseSequenceParallel(o.sequence_parallel, &c));
  TRIDENT_RETURN_IF_ERROR(CheckSequenceSplit(c, r->seq_len));
  TRIDENT_RETURN_IF_ERROR(CheckMaxMemory(o.max_memory_gib));
  c.max_memory_bytes = MaxMemoryBytes(o.max_memory_gib);
  c.cuts = o.cuts;
  c.replicas = o.replicas;
  c.exact = o.exact;
  return CheckSequenceLength(model, r->seq_len);
}

// The --baseline plan, checked against the request, evaluated with the search's costs.
struct Baseline {
  Plan plan;
  Evaluation evaluation;
};

// --sequence-parallel on needs a profile with such entries (an older measured or imported
// profile has none).
Status CheckSequenceParallelEntries(const PlanOptions& o, const Profile& profile) {
  if (o.sequence_parallel != "on" || o.cost.profile.empty()) return Status::Ok();
  for (const LayerProfile& layer : profile.layers) {
    for (const ProfileEntry& e : layer.entries) {
      if (e.sequence_parallel) return Status::Ok();
    }
  }
  return InvalidArgument("--profile " + o.cost.profile +
                         ": no entry is measured with sequence parallelism, so --sequence-parallel "
                         "on leaves nothing to plan; profile again (trident profile measures it "
                         "for every tp > 1) or plan with --sequence-parallel auto");
}

// --fix cp=N (N > 1) needs a profile with entries at that cp (an older or measured profile may
// have none).
Status CheckContextParallelEntries(const PlanOptions& o, const Profile& profile,
                                   const SearchConstraints& c) {
  if (c.cp.value_or(1) == 1 || o.cost.profile.empty()) return Status::Ok();
  for (const LayerProfile& layer : profile.layers) {
    for (const ProfileEntry& e : layer.entries) {
      if (e.cp == *c.cp) return Status::Ok();
    }
  }
  return InvalidArgument("--profile " + o.cost.profile + ": no entry has cp " +
                         std::to_string(*c.cp) +
                         " (key cp of layers[].entries[]), so --fix cp=" + std::to_string(*c.cp) +
                         " leaves nothing to plan; plan analytically (without --profile), use a "
                         "profile with those entries, or drop cp from --fix");
}

StatusOr<std::optional<Baseline>> LoadBaseline(const PlanOptions& o, const SearchRequest& request) {
  if (o.baseline.empty()) return std::optional<Baseline>();
  Baseline b;
  TRIDENT_ASSIGN_OR_RETURN(b.plan, LoadPlan(o.baseline));
  TRIDENT_RETURN_IF_ERROR(CheckBaselineMatches(b.plan, o.baseline, request));
  return std::optional<Baseline>(std::move(b));
}

int RunPlan(const PlanOptions& o) {
  StatusOr<ModelSpec> model = LoadModelSpec(o.model);
  if (!model.ok()) return PrintError(model.status());
  StatusOr<ClusterSpec> cluster = LoadClusterSpec(o.cost.cluster);
  if (!cluster.ok()) return PrintError(cluster.status());
  SearchRequest request;
  if (Status s = BuildRequest(o, *model, *cluster, &request); !s.ok()) return PrintError(s);
  StatusOr<std::optional<Baseline>> baseline = LoadBaseline(o, request);
  if (!baseline.ok()) return PrintError(baseline.status());
  // An analytic profile holds the default cp degrees and the one --fix or the baseline asks.
  const int cp = request.constraints.cp.value_or(*baseline ? (*baseline)->plan.mesh.cp : 1);
  StatusOr<std::unique_ptr<CostInputs>> inputs =
      LoadCostInputs(o.cost, *model, request.seq_len, request.dtype, cp);
  if (!inputs.ok()) return PrintError(inputs.status());
  if (Status s = CheckSequenceParallelEntries(o, (*inputs)->profile); !s.ok()) {
    return PrintError(s);
  }
  Status cp_entries = CheckContextParallelEntries(o, (*inputs)->profile, request.constraints);
  if (!cp_entries.ok()) return PrintError(cp_entries);
  if (*baseline) {
    EvaluateOptions evaluate;
    evaluate.memory_limit_bytes = request.constraints.max_memory_bytes;
    StatusOr<Evaluation> ev = EvaluatePlan(*(*inputs)->costs, (*baseline)->plan, evaluate);
    if (!ev.ok()) return PrintError(ev.status().WithPrefix("--baseline " + o.baseline));
    (*baseline)->evaluation = *std::move(ev);
  }
  StatusOr<SearchResult> result = SearchPlans(*(*inputs)->costs, request);
  if (!result.ok()) return PrintError(result.status());
  for (Candidate& c : result->ranked)
    RecordProvenance((*inputs)->profile, (*inputs)->cluster, &c.plan);
  const Candidate& best = result->ranked.front();
  if (Status s = WriteFileAtomic(o.output, PlanToYaml(best.plan)); !s.ok()) return PrintError(s);
  if (!o.trace.empty()) {
    Status s = WriteFileAtomic(o.trace, TimelineToChromeTrace(best.evaluation.simulation));
    if (!s.ok()) return PrintError(s);
  }
  ReportContext context = MakeReportContext(best.plan, (*inputs)->cluster);
  if (o.json) {
    nlohmann::json json = SearchJson(*result, context, o.output);
    if (*baseline) {
      const Baseline& b = **baseline;
      json["baseline"] = {{"file", o.baseline},
                          {"step_time_ms", b.evaluation.step_ms},
                          {"peak_memory_bytes", b.evaluation.peak_memory_bytes},
                          {"fits", b.evaluation.Fits()},
                          {"changes", ChangedChoices(b.plan, best.plan)}};
    }
    std::cout << JsonText(json);
    return 0;
  }
  std::cout << PlanSummary(best.plan, best.evaluation, context) << "\nsearched "
            << result->configurations << " configurations (" << result->infeasible
            << " did not fit in memory)";
  if (o.exact) {
    std::cout << "; --exact enumerated " << result->exact_branches
              << " partial partitions, and simulated " << result->exact_simulated
              << " whose bound beat the best plan";
  }
  std::cout << "\n";
  if (result->ranked.size() > 1) std::cout << "runners-up:\n" << RunnersUp(result->ranked);
  if (*baseline) {
    const Baseline& b = **baseline;
    std::cout << "\n"
              << BaselineComparison(b.plan, b.evaluation, o.baseline, best.plan, best.evaluation);
  }
  std::cout << "\nwrote " << o.output << (o.trace.empty() ? "" : " and " + o.trace) << "\n";
  return 0;
}

}  // namespace

void AddPlanCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd =
      app.add_subcommand("plan", "Find the fastest plan that fits in memory and write it");
  cmd->add_option("--model", o->model, "Model file, e.g. configs/models/gpt3-175b.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  AddCostOptions(cmd, &o->cost, /*cluster_required=*/true);
  cmd->add_option("--devices", o->devices, "Devices to use [default: all of the cluster]")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--global-batch", o->global_batch, "Sequences per optimizer step")
      ->required()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--seq", o->seq_len, "Sequence length [default: the model's max_seq_len]")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--dtype", o->dtype, "Training dtype [default: the model's]")
      ->check(CLI::IsMember(NamesOf(DTypeNames())));
  cmd->add_option("--fix", o->fix,
                  "Fixed degrees, e.g. tp=8,pp=4 (keys tp, pp, dp, cp, mb, and dp_shard: the "
                  "replicas of a shard group, a sharded level only; dp_shard=dp is no hybrid)")
      ->delimiter(',');
  cmd->add_option("--schedule", o->schedules, "Schedules to consider [default: all synchronous]")
      ->delimiter(',')
      ->check(CLI::IsMember(NamesOf(ScheduleKindNames())));
  cmd->add_option("--recompute", o->recompute, "Recompute modes to consider [default: all]")
      ->delimiter(',')
      ->check(CLI::IsMember(NamesOf(RecomputeModeNames())));
  std::vector<std::string> levels = NamesOf(DpShardingNames());
  levels.push_back("all");
  cmd->add_option("--dp-sharding", o->dp_sharding,
                  "Data-parallel sharding levels to consider: none, optimizer (ZeRO-1), "
                  "gradients (ZeRO-2), full (ZeRO-3/FSDP), or all")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember(levels));
  cmd->add_option("--sequence-parallel", o->sequence_parallel,
                  "Megatron's sequence parallelism in tp groups (norms, dropout and residuals "
                  "split along the sequence): on (wherever tp > 1), off, or auto (both)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--baseline", o->baseline,
                  "A plan you run today (e.g. from trident import megatron), set beside the "
                  "search's with what differs")
      ->check(CLI::ExistingFile);
  cmd->add_option("--max-memory", o->max_memory_gib,
                  "Memory per device to plan for, GiB [default: the device's]")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--cuts", o->cuts, "First layer of each stage, e.g. 0,10,20 (only evaluated)")
      ->delimiter(',');
  cmd->add_option("--replicas", o->replicas,
                  "Replicas of each pipeline stage, e.g. 3,1 (summing to devices / (tp·cp)); "
                  "the cuts are searched for them, micro-batches go round robin over a "
                  "stage's replicas")
      ->delimiter(',');
  cmd->add_flag("--exact", o->exact,
                "Also simulate every partition (cuts and per-stage replicas) whose lower bound "
                "beats the best plan found, except under interleaved 1F1B: the fastest "
                "simulated step, slower to find on large meshes");
  cmd->add_option("--runners-up", o->runners_up, "Runners-up to report")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  cmd->add_option("-o,--output", o->output, "Plan file to write")->capture_default_str();
  cmd->add_option("--trace", o->trace, "Also write the simulated step as a Chrome trace");
  cmd->add_flag("--json", o->json, "Print the result as JSON");
  cmd->callback([o, exit_code] { *exit_code = RunPlan(*o); });
}

}  // namespace trident
