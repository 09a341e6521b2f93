// trident import pipedream GRAPH -o DIR --micro-batch N: another tool's layer profile as a
// Trident model of generic layers and its profile (models/pipedream_import.h), so it can be
// planned, simulated and explained.
// trident import megatron FILE -o PLAN --cluster C: a Megatron-LM configuration as a Trident
// plan (launcher/megatron_import.h), so it can be simulated and explained.
// trident import torchtitan JOB.toml | deepspeed ds_config.json -o PLAN --cluster C --devices N:
// likewise for torchtitan's job file and DeepSpeed's configuration (launcher/torchtitan_import.h,
// launcher/deepspeed_import.h).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <utility>

#include "cli/command.h"
#include "cli/format.h"
#include "core/cluster.h"
#include "core/file_util.h"
#include "core/version.h"
#include "launcher/deepspeed_import.h"
#include "launcher/megatron_import.h"
#include "launcher/torchtitan_import.h"
#include "models/layer_shapes.h"
#include "models/pipedream_import.h"

namespace trident {
namespace {

struct ImportOptions {
  std::string graph;
  std::string out_dir;
  std::string name;  // "": the folder holding the graph file
  int micro_batch = 0;
};

// PipeDream keeps each profile as <model>/graph.txt, so the folder names the model.
std::string DefaultName(const std::string& graph) {
  std::filesystem::path path = std::filesystem::absolute(graph).lexically_normal();
  std::string folder = path.parent_path().filename().string();
  return folder.empty() ? path.stem().string() : folder;
}

struct Totals {
  double fwd_ms = 0;
  double bwd_ms = 0;
  int64_t param_bytes = 0;
};

Totals Sum(const Profile& profile) {
  Totals t;
  for (const LayerProfile& layer : profile.layers) {
    const ProfileEntry& e = layer.entries.front();
    t.fwd_ms += e.fwd_ms;
    t.bwd_ms += e.bwd_input_ms + e.bwd_weight_ms;
    t.param_bytes += e.param_bytes;
  }
  return t;
}

// Every file is checked before the first is written, and each is written atomically.
Status WriteOutputs(const ImportedModel& imported, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError("-o " + dir + ": cannot create the folder: " + ec.message());
  const std::filesystem::path folder(dir);
  TRIDENT_RETURN_IF_ERROR(
      WriteFileAtomic((folder / "model.yaml").string(), ModelSpecToYaml(imported.model)));
  TRIDENT_RETURN_IF_ERROR(
      WriteFileAtomic((folder / "profile.yaml").string(), ProfileToYaml(imported.profile)));
  return WriteFileAtomic((folder / "layers.tsv").string(), imported.layer_table);
}

void PrintSummary(const ImportOptions& o, const ImportedModel& imported) {
  const Totals t = Sum(imported.profile);
  const std::filesystem::path folder(o.out_dir);
  std::cout << "imported " << o.graph << " as " << imported.model.ToString() << "\n"
            << "per minibatch of " << o.micro_batch << ": forward " << FormatFixed(t.fwd_ms, 2)
            << " ms, backward " << FormatFixed(t.bwd_ms, 2) << " ms, parameters "
            << FormatBytes(static_cast<double>(t.param_bytes)) << "\n"
            << "wrote " << (folder / "model.yaml").string() << ", "
            << (folder / "profile.yaml").string() << " and " << (folder / "layers.tsv").string()
            << " (layer -> PipeDream node)\n"
            << "plan it: trident plan --model " << (folder / "model.yaml").string() << " --profile "
            << (folder / "profile.yaml").string() << " --cluster CLUSTER --global-batch "
            << 8 * o.micro_batch << "\n";
}

int RunImport(const ImportOptions& o) {
  StatusOr<std::string> text = ReadFile(o.graph);
  if (!text.ok()) return PrintError(text.status());
  PipeDreamImportOptions options{o.name.empty() ? DefaultName(o.graph) : o.name, o.micro_batch,
                                 TridentBuild(), UtcTimestamp()};
  StatusOr<ImportedModel> imported = ImportPipeDream(*text, o.graph, options);
  if (!imported.ok()) return PrintError(imported.status());
  if (Status s = WriteOutputs(*imported, o.out_dir); !s.ok()) return PrintError(s);
  PrintSummary(o, *imported);
  return 0;
}

struct MegatronFlags {
  std::string file;
  std::string output;
  std::string cluster;
  MegatronImportOptions options;
};

// The imported plan written atomically, the ignored keys listed, a note for each way the
// framework would run other than Trident predicts the plan, and what to run next.
int WriteImported(const std::string& file, const std::string& output,
                  const std::string& cluster_path, const Plan& plan,
                  const std::vector<std::string>& ignored,
                  const std::vector<std::string>& notes = {}) {
  if (Status s = WriteFileAtomic(output, PlanToYaml(plan)); !s.ok()) return PrintError(s);
  std::cout << "imported " << file << " as " << plan.ToString() << "\nwrote " << output << "\n";
  if (!ignored.empty()) {
    std::cout << "ignored (not part of a plan):";
    for (const std::string& key : ignored) std::cout << " " << key;
    std::cout << "\n";
  }
  for (const std::string& note : notes) std::cout << "note: " << note << "\n";
  std::cout << "predict it: trident simulate " << output << " --cluster " << cluster_path
            << "\nexplain it: trident explain " << output << " --cluster " << cluster_path << "\n";
  return 0;
}

// The file's text and the cluster's name, or the error already printed.
std::optional<std::pair<std::string, std::string>> ReadConfig(const std::string& file,
                                                              const std::string& cluster_path) {
  StatusOr<std::string> text = ReadFile(file);
  if (!text.ok()) return PrintError(text.status()), std::nullopt;
  StatusOr<ClusterSpec> cluster = LoadClusterSpec(cluster_path);
  if (!cluster.ok()) return PrintError(cluster.status()), std::nullopt;
  return std::make_pair(*std::move(text), cluster->name);
}

int RunMegatronImport(MegatronFlags f) {
  auto read = ReadConfig(f.file, f.cluster);
  if (!read) return 1;
  f.options.cluster = read->second;
  StatusOr<MegatronImport> imported = ImportMegatron(read->first, f.file, f.options);
  if (!imported.ok()) return PrintError(imported.status());
  return WriteImported(f.file, f.output, f.cluster, imported->plan, imported->ignored,
                       imported->notes);
}

void AddMegatronImport(CLI::App* cmd, int* exit_code) {
  auto f = std::make_shared<MegatronFlags>();
  CLI::App* megatron = cmd->add_subcommand(
      "megatron", "A Megatron-LM argument list or launch script as a Trident plan");
  megatron->add_option("file", f->file, "Argument list or script, e.g. run.sh")
      ->required()
      ->check(CLI::ExistingFile);
  megatron->add_option("-o,--output", f->output, "Plan file to write")->required();
  megatron->add_option("--cluster", f->cluster, "Cluster file: its name goes into the plan")
      ->required()
      ->check(CLI::ExistingFile);
  megatron->add_option("--name", f->options.name, "The model's name")->capture_default_str();
  megatron
      ->add_option("--vocab-size", f->options.vocab_size,
                   "Vocabulary (Megatron-LM takes it from the tokenizer) [default: the file's "
                   "--vocab-size]")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  megatron
      ->add_option("--devices", f->options.devices,
                   "World size [default: torchrun's --nnodes × --nproc-per-node in the file]")
      ->check(CLI::Range(1, 1 << 20));
  megatron
      ->add_option("--devices-per-node", f->options.devices_per_node,
                   "Devices a node [default: --nproc-per-node in the file]")
      ->check(CLI::Range(1, 1 << 16));
  megatron->footer(
      "Every --flag of the file is read wherever it stands (the last of a repeated flag wins);\n"
      "flags that are not part of a plan are listed as ignored; a note names each overlap flag\n"
      "(given or left out) that makes Megatron-LM run other than Trident predicts the plan.\n"
      "Exit status: 0 written, 1 a configuration Megatron-LM or Trident would refuse (the flag\n"
      "named; nothing written).");
  megatron->callback([f, exit_code] { *exit_code = RunMegatronImport(*f); });
}

// What torchtitan's and DeepSpeed's imports share: the file, the plan to write, the cluster.
struct ConfigImport {
  std::string file;
  std::string output;
  std::string cluster;
  int devices = 0;
  int devices_per_node = 0;
};

void AddConfigOptions(CLI::App* cmd, ConfigImport* c, const std::string& what) {
  cmd->add_option("file", c->file, what)->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", c->output, "Plan file to write")->required();
  cmd->add_option("--cluster", c->cluster, "Cluster file: its name goes into the plan")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--devices", c->devices, "World size (the launcher's, not in the file)")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--devices-per-node", c->devices_per_node, "Devices a node [default: 8]")
      ->default_val(8)
      ->check(CLI::Range(1, 1 << 16));
}

int RunTorchtitanImport(const ConfigImport& c) {
  auto read = ReadConfig(c.file, c.cluster);
  if (!read) return 1;
  TorchtitanImportOptions options{read->second, c.devices, std::min(c.devices_per_node, c.devices)};
  StatusOr<TorchtitanImport> imported = ImportTorchtitan(read->first, c.file, options);
  if (!imported.ok()) return PrintError(imported.status());
  return WriteImported(c.file, c.output, c.cluster, imported->plan, imported->ignored);
}

void AddTorchtitanImport(CLI::App* cmd, int* exit_code) {
  auto c = std::make_shared<ConfigImport>();
  CLI::App* sub = cmd->add_subcommand("torchtitan", "A torchtitan job TOML as a Trident plan");
  AddConfigOptions(sub, c.get(), "Job file, e.g. llama3_8b.toml");
  sub->footer(
      "The keys of a plan are read with torchtitan's defaults where absent (split points as\n"
      "torchtitan generates them); other keys are listed as ignored. Exit status: 0 written, 1 a\n"
      "file torchtitan or Trident would refuse (the key named; nothing written).");
  sub->callback([c, exit_code] { *exit_code = RunTorchtitanImport(*c); });
}

struct DeepSpeedFlags {
  ConfigImport config;
  std::string model;
  int64_t seq_len = 0;
  DeepSpeedImportOptions options;
};

// Each layer's trainable parameters, as PipelineModule's "parameters" partition counts them: it
// builds every LayerSpec alone, so a tied head (a TiedLayerSpec) counts its own [V, h] weight,
// which Trident's shapes give to the embedding only.
std::vector<double> LayerParams(const ModelSpec& model) {
  std::vector<double> out;
  for (LayerKind kind : model.ExpandLayers()) {
    double params = 0;
    for (const ParamShape& p : MakeLayerShapes(model, kind, RankSplit{}).params)
      params += static_cast<double>(p.FullElements());
    if (kind == LayerKind::kLmHead && model.tied_embeddings) {
      params = static_cast<double>(model.vocab_size) * static_cast<double>(model.hidden);
    }
    out.push_back(params);
  }
  return out;
}

int RunDeepSpeedImport(DeepSpeedFlags f) {
  auto read = ReadConfig(f.config.file, f.config.cluster);
  if (!read) return 1;
  StatusOr<ModelSpec> model = LoadModelSpec(f.model);
  if (!model.ok()) return PrintError(model.status());
  DeepSpeedImportOptions& o = f.options;
  o.model = *model;
  o.cluster = read->second;
  o.devices = f.config.devices;
  o.devices_per_node = std::min(f.config.devices_per_node, f.config.devices);
  o.seq_len = f.seq_len > 0 ? f.seq_len : model->max_seq_len;
  if (o.partition_method == "parameters" && o.parts.empty()) {
    if (model->IsGeneric()) {
      return PrintError(
          InvalidArgument(f.model +
                          ": generic layers have no parameter shapes to partition by; give "
                          "--partition-method uniform or --parts"));
    }
    o.layer_params = LayerParams(*model);
  }
  StatusOr<DeepSpeedImport> imported = ImportDeepSpeed(read->first, f.config.file, o);
  if (!imported.ok()) return PrintError(imported.status());
  return WriteImported(f.config.file, f.config.output, f.config.cluster, imported->plan,
                       imported->ignored);
}

void AddDeepSpeedImport(CLI::App* cmd, int* exit_code) {
  auto f = std::make_shared<DeepSpeedFlags>();
  CLI::App* sub = cmd->add_subcommand(
      "deepspeed", "A DeepSpeed ds_config.json and its PipelineModule's arguments as a plan");
  AddConfigOptions(sub, &f->config, "DeepSpeed configuration, e.g. ds_config.json");
  sub->add_option("--model", f->model, "The training script's model, e.g. configs/models/...")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--seq", f->seq_len, "Sequence length [default: the model's max_seq_len]")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  sub->add_option("--num-stages", f->options.num_stages, "PipelineModule num_stages")
      ->default_val(1)
      ->check(CLI::Range(1, 1 << 16));
  sub->add_option("--partition-method", f->options.partition_method,
                  "PipelineModule partition_method: parameters, uniform or type:REGEX (matched "
                  "against Trident's layer kinds, e.g. type:block)")
      ->capture_default_str()
      ->check(
          [](const std::string& m) {
            return m == "parameters" || m == "uniform" || m.starts_with("type:")
                       ? std::string()
                       : "expected parameters, uniform or type:REGEX, got " + m;
          },
          "parameters|uniform|type:REGEX");
  sub->add_option("--parts", f->options.parts,
                  "Explicit stage starts and the layer count (pipeline.json's parts), e.g. "
                  "0,10,18,26,35")
      ->delimiter(',');
  sub->add_option("--activation-checkpoint-interval", f->options.activation_checkpoint_interval,
                  "PipelineModule activation_checkpoint_interval (ds_config's pipeline section "
                  "overrides it)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 16));
  sub->footer(
      "Reads train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps,\n"
      "zero_optimization.stage, bf16/fp16.enabled, tensor_parallel.autotp_size and\n"
      "pipeline.activation_checkpoint_interval; other keys are listed as ignored. Stages are cut\n"
      "as PipelineModule cuts them. Exit status: 0 written, 1 a configuration DeepSpeed or\n"
      "Trident would refuse (the key named; nothing written).");
  sub->callback([f, exit_code] { *exit_code = RunDeepSpeedImport(*f); });
}

}  // namespace

void AddImportCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ImportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "import", "Read another tool's layer profile or training configuration as Trident files");
  cmd->require_subcommand(1);
  CLI::App* pipedream = cmd->add_subcommand(
      "pipedream", "A PipeDream graph.txt: a chain of generic layers and their profile");
  pipedream->add_option("graph", o->graph, "PipeDream profile, e.g. profiles/vgg16/graph.txt")
      ->required();
  pipedream
      ->add_option("-o,--output", o->out_dir, "Folder for model.yaml, profile.yaml, layers.tsv")
      ->required();
  pipedream
      ->add_option("--micro-batch", o->micro_batch,
                   "The minibatch size PipeDream profiled at (its times are per minibatch)")
      ->required()
      ->check(CLI::Range(1, 1 << 16));
  pipedream->add_option("--name", o->name,
                        "Model name [default: the folder holding the graph file]");
  pipedream->callback([o, exit_code] { *exit_code = RunImport(*o); });
  AddMegatronImport(cmd, exit_code);
  AddTorchtitanImport(cmd, exit_code);
  AddDeepSpeedImport(cmd, exit_code);
}

}  // namespace trident
