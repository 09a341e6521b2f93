// trident model FILE: the per-layer analytic costs of a model (parameters, FLOPs, activation
// and stashed bytes, tensor- and context-parallel traffic) for one micro-batch on one rank.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "cli/format.h"
#include "core/model_spec.h"
#include "models/model_cost.h"
#include "planner/plan_inputs.h"

namespace trident {
namespace {

struct ModelOptions {
  std::string file;
  int64_t micro_batch = 1;
  int64_t seq_len = 0;  // 0: the model's max_seq_len
  int tp = 1;
  std::string recompute = "none";
  std::string dtype;  // "": the model's dtype
  bool sequence_parallel = false;
  int cp = 1;
  bool json = false;
};

nlohmann::json CallsJson(const GroupCalls& calls) {
  return {{"count", calls.count}, {"bytes", calls.bytes}};
}

nlohmann::json TrafficJson(const GroupTraffic& t) {
  return {{"all_reduce", CallsJson(t.all_reduce)},
          {"all_gather", CallsJson(t.all_gather)},
          {"reduce_scatter", CallsJson(t.reduce_scatter)}};
}

nlohmann::json CostJson(const LayerCost& c) {
  return {{"params", c.params},
          {"total_params", c.total_params},
          {"param_bytes", c.param_bytes},
          {"fwd_flops", c.fwd_flops},
          {"bwd_input_flops", c.bwd_input_flops},
          {"bwd_weight_flops", c.bwd_weight_flops},
          {"recompute_flops", c.recompute_flops},
          {"output_bytes", c.output_bytes},
          {"stashed_bytes", c.stashed_bytes},
          {"tp_fwd", TrafficJson(c.tp_fwd)},
          {"tp_bwd", TrafficJson(c.tp_bwd)},
          {"tp_wgrad", TrafficJson(c.tp_wgrad)},
          {"cp_fwd", TrafficJson(c.cp_fwd)},
          {"cp_bwd", TrafficJson(c.cp_bwd)}};
}

std::vector<std::string> CostRow(std::string label, int count, const LayerCost& c) {
  return {std::move(label),
          std::to_string(count),
          FormatCount(c.params),
          FormatFlops(c.fwd_flops),
          FormatFlops(c.bwd_input_flops + c.bwd_weight_flops + c.recompute_flops),
          FormatBytes(static_cast<double>(c.output_bytes)),
          FormatBytes(static_cast<double>(c.stashed_bytes))};
}

void PrintTable(const ModelSpec& model, const LayerShape& shape, const ModelCost& cost) {
  std::cout << model.ToString() << "\n"
            << "per rank, one micro-batch: micro-batch " << shape.micro_batch << ", seq "
            << shape.seq_len << ", tp " << shape.tp
            << (shape.sequence_parallel ? " with sequence parallelism" : "")
            << (shape.cp > 1 ? ", cp " + std::to_string(shape.cp) + " (seq / cp tokens)" : "")
            << ", " << DTypeName(shape.dtype) << ", recompute "
            << NameOf(RecomputeModeNames(), shape.recompute) << "\n\n";
  TextTable table({"layers", "count", "params/layer", "fwd/layer", "bwd/layer", "output/layer",
                   "stashed/layer"});
  int first = 0;
  for (const LayerGroup& group : model.layers) {
    std::string label = std::to_string(first);
    if (group.repeat > 1) label += "-" + std::to_string(first + group.repeat - 1);
    label += " " + NameOf(LayerKindNames(), group.kind);
    table.AddRow(CostRow(label, group.repeat, cost.layers[first]));
    first += group.repeat;
  }
  std::vector<std::string> total = CostRow("total", model.NumLayers(), cost.total);
  total[5] = "";  // outputs are handed on, not summed
  table.AddTotalRow(total);
  std::cout << table.ToString() << "\nparameters: " << FormatCount(cost.total.total_params) << " ("
            << FormatCount(cost.total.params) << " on each of " << shape.tp << " tp ranks)\n"
            << "training FLOPs per micro-batch (all ranks): "
            << FormatFlops(cost.total.TotalFlops() * shape.tp * shape.cp) << "\n";
}

void PrintJson(const ModelSpec& model, const LayerShape& shape, const ModelCost& cost) {
  nlohmann::json layers = nlohmann::json::array();
  for (size_t i = 0; i < cost.layers.size(); ++i) {
    nlohmann::json layer = CostJson(cost.layers[i]);
    layer["index"] = i;
    layer["kind"] = NameOf(LayerKindNames(), model.LayerAt(static_cast<int>(i)));
    layers.push_back(layer);
  }
  nlohmann::json out = {{"model", model.name},
                        {"micro_batch", shape.micro_batch},
                        {"seq_len", shape.seq_len},
                        {"tp", shape.tp},
                        {"sequence_parallel", shape.sequence_parallel},
                        {"cp", shape.cp},
                        {"dtype", DTypeName(shape.dtype)},
                        {"recompute", NameOf(RecomputeModeNames(), shape.recompute)},
                        {"layers", layers},
                        {"total", CostJson(cost.total)}};
  std::cout << JsonText(out);
}

Status ResolveShape(const ModelOptions& options, const ModelSpec& model, LayerShape* shape) {
  shape->micro_batch = options.micro_batch;
  shape->seq_len = options.seq_len > 0 ? options.seq_len : model.max_seq_len;
  shape->tp = options.tp;
  shape->recompute = ValueOf(RecomputeModeNames(), options.recompute).value();
  shape->dtype = ValueOf(DTypeNames(), options.dtype).value_or(model.dtype);
  TRIDENT_RETURN_IF_ERROR(CheckSequenceLength(model, shape->seq_len));
  if (std::string problem = model.TensorParallelProblem(options.tp); !problem.empty()) {
    return InvalidArgument("--tp: " + problem + " of " + model.name);
  }
  shape->sequence_parallel = options.sequence_parallel;
  shape->cp = options.cp;
  if (options.cp > 1 && shape->seq_len % (2 * options.cp) != 0) {
    return InvalidArgument("--cp " + std::to_string(options.cp) + ": 2·cp does not divide --seq " +
                           std::to_string(shape->seq_len) +
                           " (each cp rank holds 2 of a sequence's 2·cp chunks); pick a cp "
                           "whose double divides the sequence length");
  }
  if (options.sequence_parallel && options.tp == 1) {
    return InvalidArgument(
        "--sp needs --tp 2 or more: sequence parallelism splits what a tp group leaves whole");
  }
  const int64_t local_seq = shape->seq_len / options.cp;
  if (options.sequence_parallel && local_seq % options.tp != 0) {
    return InvalidArgument("--sp: tp " + std::to_string(options.tp) + " does not divide " +
                           (options.cp > 1 ? "--seq / --cp = " : "--seq ") +
                           std::to_string(local_seq) + "; pick a sequence length it divides");
  }
  return Status::Ok();
}

// A generic model has no shapes to cost: say where its costs are instead.
void PrintGeneric(const ModelSpec& model, bool json) {
  const std::string where =
      "its costs are in the profile it was imported with (trident import); plan, simulate and "
      "explain it with --profile that file";
  if (json) {
    std::cout << JsonText({{"model", model.name},
                           {"generic", true},
                           {"num_layers", model.NumLayers()},
                           {"seq_len", model.max_seq_len},
                           {"note", "no analytic costs: " + where}});
    return;
  }
  std::cout << model.ToString() << "\n"
            << "no analytic costs (generic layers have no shapes): " << where << "\n";
}

int RunModel(const ModelOptions& options) {
  StatusOr<ModelSpec> model = LoadModelSpec(options.file);
  if (!model.ok()) return PrintError(model.status());
  if (model->IsGeneric()) {
    PrintGeneric(*model, options.json);
    return 0;
  }
  LayerShape shape;
  if (Status status = ResolveShape(options, *model, &shape); !status.ok())
    return PrintError(status);
  ModelCost cost = AnalyticModelCost(*model, shape);
  if (options.json) {
    PrintJson(*model, shape, cost);
  } else {
    PrintTable(*model, shape, cost);
  }
  return 0;
}

}  // namespace

void AddModelCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ModelOptions>();
  CLI::App* cmd = app.add_subcommand(
      "model", "Per-layer parameters, FLOPs and activation memory of a model (analytic)");
  cmd->add_option("file", options->file, "Model file, e.g. configs/models/gpt2-small.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--micro-batch", options->micro_batch, "Sequences per micro-batch")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--seq", options->seq_len, "Sequence length [default: the model's max_seq_len]")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--tp", options->tp, "Tensor-parallel degree (per-rank figures)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--recompute", options->recompute,
                  "Activation recomputation: none, selective, full")
      ->capture_default_str()
      ->check(CLI::IsMember(NamesOf(RecomputeModeNames())));
  cmd->add_option("--dtype", options->dtype, "Training dtype [default: the model's]")
      ->check(CLI::IsMember(NamesOf(DTypeNames())));
  cmd->add_flag("--sp,--sequence-parallel", options->sequence_parallel,
                "Megatron's sequence parallelism in the tp group (needs --tp 2 or more)");
  cmd->add_option("--cp", options->cp,
                  "Context-parallel degree: each rank holds seq / cp tokens of every sequence")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_flag("--json", options->json, "Print JSON with every layer instead of the table");
  cmd->callback([options, exit_code] { *exit_code = RunModel(*options); });
}

}  // namespace trident
