// trident import pipedream GRAPH -o DIR --micro-batch N: another tool's layer profile as a
// Trident model of generic layers and its profile (models/pipedream_import.h), so it can be
// planned, simulated and explained.
// trident import megatron FILE -o PLAN --cluster C: a Megatron-LM configuration as a Trident
// plan (launcher/megatron_import.h), so it can be simulated and explained.
#include <filesystem>
#include <iostream>
#include <string>

#include "cli/command.h"
#include "cli/format.h"
#include "core/cluster.h"
#include "core/file_util.h"
#include "core/version.h"
#include "launcher/megatron_import.h"
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

int RunMegatronImport(MegatronFlags f) {
  StatusOr<std::string> text = ReadFile(f.file);
  if (!text.ok()) return PrintError(text.status());
  StatusOr<ClusterSpec> cluster = LoadClusterSpec(f.cluster);
  if (!cluster.ok()) return PrintError(cluster.status());
  f.options.cluster = cluster->name;
  StatusOr<MegatronImport> imported = ImportMegatron(*text, f.file, f.options);
  if (!imported.ok()) return PrintError(imported.status());
  if (Status s = WriteFileAtomic(f.output, PlanToYaml(imported->plan)); !s.ok()) {
    return PrintError(s);
  }
  std::cout << "imported " << f.file << " as " << imported->plan.ToString() << "\nwrote "
            << f.output << "\n";
  if (!imported->ignored.empty()) {
    std::cout << "ignored (not part of a plan):";
    for (const std::string& flag : imported->ignored) std::cout << " " << flag;
    std::cout << "\n";
  }
  std::cout << "predict it: trident simulate " << f.output << " --cluster " << f.cluster
            << "\nexplain it: trident explain " << f.output << " --cluster " << f.cluster << "\n";
  return 0;
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
      "flags that are not part of a plan are listed as ignored. Exit status: 0 written, 1 a\n"
      "configuration Megatron-LM or Trident would refuse (the flag named; nothing written).");
  megatron->callback([f, exit_code] { *exit_code = RunMegatronImport(*f); });
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
}

}  // namespace trident
