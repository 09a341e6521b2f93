// trident profile MODEL --analytic --cluster C: the per-layer costs a device of the cluster
// would measure, computed from its hardware description, written as a profile file.
#include <iostream>

#include "cli/command.h"
#include "cli/format.h"
#include "core/file_util.h"
#include "profiler/analytic_profile.h"

namespace trident {
namespace {

struct ProfileOptions {
  std::string model;
  std::string cluster;
  bool analytic = false;
  std::vector<int> micro_batches = {1, 2, 4, 8};
  std::vector<int> tps;
  int64_t seq_len = 0;
  std::string dtype;
  std::string output = "profile.yaml";
};

void PrintSummary(const Profile& profile) {
  std::cout << profile.ToString() << "\n\n";
  TextTable table(
      {"layers", "kind", "entries", "fwd (mb 1, tp 1)", "bwd input", "bwd weight", "stashed"});
  for (const LayerProfile& layer : profile.layers) {
    std::string range = std::to_string(layer.first_layer);
    if (layer.num_layers > 1)
      range += "-" + std::to_string(layer.first_layer + layer.num_layers - 1);
    const ProfileEntry& e = layer.entries.front();
    table.AddRow({range, NameOf(LayerKindNames(), layer.kind), std::to_string(layer.entries.size()),
                  FormatMs(e.fwd_ms), FormatMs(e.bwd_input_ms), FormatMs(e.bwd_weight_ms),
                  FormatBytes(static_cast<double>(e.stashed_none_bytes))});
  }
  std::cout << table.ToString();
}

int RunProfile(const ProfileOptions& o) {
  auto fail = [](const Status& s) {
    std::cerr << "error: " << s.message() << "\n";
    return 1;
  };
  if (!o.analytic) {
    std::cerr << "error: measuring on this device is not available yet; pass --analytic to "
                 "compute the profile from --cluster's hardware description\n";
    return 2;
  }
  StatusOr<ModelSpec> model = LoadModelSpec(o.model);
  if (!model.ok()) return fail(model.status());
  StatusOr<ClusterSpec> cluster = LoadClusterSpec(o.cluster);
  if (!cluster.ok()) return fail(cluster.status());
  AnalyticProfileOptions options{o.micro_batches, o.tps, o.seq_len,
                                 ValueOf(DTypeNames(), o.dtype).value_or(model->dtype)};
  if (o.seq_len > model->max_seq_len) {
    return fail(InvalidArgument("--seq " + std::to_string(o.seq_len) + " exceeds " + model->name +
                                "'s max_seq_len " + std::to_string(model->max_seq_len)));
  }
  StatusOr<Profile> profile = AnalyticProfile(*model, *cluster, options);
  if (!profile.ok()) return fail(profile.status());
  if (Status s = WriteFileAtomic(o.output, ProfileToYaml(*profile)); !s.ok()) return fail(s);
  PrintSummary(*profile);
  std::cout << "\nwrote " << o.output << "\n";
  return 0;
}

}  // namespace

void AddProfileCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ProfileOptions>();
  CLI::App* cmd = app.add_subcommand("profile", "Write a model's per-layer cost profile");
  cmd->add_option("model", o->model, "Model file")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--analytic", o->analytic,
                "Compute the costs from the cluster's hardware description (required for now)");
  cmd->add_option("--cluster", o->cluster, "Cluster file whose device is profiled")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--micro-batch", o->micro_batches, "Micro-batch sizes")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--tp", o->tps, "Tensor-parallel degrees [default: every one that fits a node]")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--seq", o->seq_len, "Sequence length [default: the model's max_seq_len]")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--dtype", o->dtype, "Training dtype [default: the model's]")
      ->check(CLI::IsMember(NamesOf(DTypeNames())));
  cmd->add_option("-o,--output", o->output, "Profile file to write")->capture_default_str();
  cmd->callback([o, exit_code] { *exit_code = RunProfile(*o); });
}

}  // namespace trident
