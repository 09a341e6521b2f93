#include "launcher/torchtitan_import.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include <toml++/toml.h>

#include "launcher/torchtitan_export.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

// The keys of one job file, typed, with the file for messages.
class JobKeys {
 public:
  JobKeys(toml::table table, std::string file) : table_(std::move(table)), file_(std::move(file)) {}

  Status Error(std::string_view key, const std::string& what) const {
    return InvalidArgument(file_ + ": " + std::string(key) + ": " + what);
  }
  StatusOr<int64_t> Int(std::string_view key, int64_t fallback) const {
    toml::node_view<const toml::node> node = table_.at_path(key);
    if (!node) return fallback;
    if (!node.is_integer()) return Error(key, "expected a whole number");
    return node.as_integer()->get();
  }
  StatusOr<std::string> Text(std::string_view key, std::string fallback) const {
    toml::node_view<const toml::node> node = table_.at_path(key);
    if (!node) return fallback;
    if (!node.is_string()) return Error(key, "expected a string");
    return node.as_string()->get();
  }
  StatusOr<std::vector<std::string>> Texts(std::string_view key) const {
    toml::node_view<const toml::node> node = table_.at_path(key);
    std::vector<std::string> out;
    if (!node) return out;
    if (!node.is_array()) return Error(key, "expected an array of strings");
    for (const toml::node& item : *node.as_array()) {
      if (!item.is_string()) return Error(key, "expected an array of strings");
      out.push_back(item.as_string()->get());
    }
    return out;
  }
  bool Has(std::string_view key) const { return static_cast<bool>(table_.at_path(key)); }

  // "section.key" of every value of the file that TorchtitanKeys() does not hold.
  std::vector<std::string> Unread() const {
    std::vector<std::string> out;
    for (const auto& [section, node] : table_) {
      const toml::table* keys = node.as_table();
      if (keys == nullptr) {
        out.emplace_back(section.str());
        continue;
      }
      for (const auto& [key, value] : *keys) {
        const std::string path = std::string(section.str()) + "." + std::string(key.str());
        const auto& read = TorchtitanKeys();
        if (std::find(read.begin(), read.end(), path) == read.end()) out.push_back(path);
      }
    }
    return out;
  }

 private:
  toml::table table_;
  std::string file_;
};

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

Status ReadModel(const JobKeys& k, Plan* plan) {
  TRIDENT_ASSIGN_OR_RETURN(std::string name, k.Text("model.name", "llama3"));
  TRIDENT_ASSIGN_OR_RETURN(std::string flavor, k.Text("model.flavor", "debugmodel"));
  std::string known;
  for (const TorchtitanFlavor& f : TorchtitanFlavors()) {
    if (f.name == name && f.flavor == flavor) {
      plan->model = f.model;
      return Status::Ok();
    }
    known += (known.empty() ? "" : ", ") + std::string(f.name) + " " + std::string(f.flavor);
  }
  return k.Error("model.flavor", name + " " + flavor + " is not a flavor Trident knows (" + known +
                                     ", as " + std::string(TorchtitanVersion()) + " defines them)");
}

// The pipeline schedule, and whether it runs one stage a rank.
StatusOr<ScheduleKind> ReadSchedule(const JobKeys& k, bool* single_stage) {
  TRIDENT_ASSIGN_OR_RETURN(std::string name,
                           k.Text("parallelism.pipeline_parallel_schedule", "1F1B"));
  for (ScheduleKind s :
       {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kInterleaved1F1B}) {
    if (Lower(name) != Lower(std::string(TorchtitanScheduleName(s)))) continue;
    *single_stage = s != ScheduleKind::kInterleaved1F1B;
    return s;
  }
  return k.Error("parallelism.pipeline_parallel_schedule",
                 name + " is not a schedule Trident plans (GPipe, 1F1B, Interleaved1F1B)");
}

// The block each stage after the first starts at: the file's split points, or torchtitan's.
StatusOr<std::vector<int>> ReadSplits(const JobKeys& k, int blocks, int pp, bool single_stage) {
  constexpr std::string_view kKey = "parallelism.pipeline_parallel_split_points";
  TRIDENT_ASSIGN_OR_RETURN(std::vector<std::string> names, k.Texts(kKey));
  if (names.empty()) {
    TRIDENT_ASSIGN_OR_RETURN(int64_t per_stage,
                             k.Int("parallelism.pipeline_parallel_layers_per_stage", 0));
    return TorchtitanSplitPoints(blocks, pp, single_stage, static_cast<int>(per_stage));
  }
  std::vector<int> out;
  for (const std::string& name : names) {
    int block = -1;
    const char* digits = name.data() + std::min<size_t>(name.size(), 7);
    auto [end, error] = std::from_chars(digits, name.data() + name.size(), block);
    const bool ok = name.rfind("layers.", 0) == 0 && error == std::errc() &&
                    end == name.data() + name.size() && block >= 0 && block < blocks &&
                    (out.empty() || block > out.back());
    if (!ok) {
      return k.Error(kKey, "'" + name + "' is not layers.K for a block K after the previous " +
                               "split (0 <= K < " + Str(blocks) + ")");
    }
    out.push_back(block);
  }
  return out;
}

StatusOr<RecomputeMode> ReadRecompute(const JobKeys& k) {
  StatusOr<std::string> mode = k.Text("activation_checkpoint.mode", "selective");
  if (!mode.ok()) return mode.status();
  if (*mode == "none") return RecomputeMode::kNone;
  if (*mode == "full") return RecomputeMode::kFull;
  return k.Error("activation_checkpoint.mode",
                 *mode +
                     ": torchtitan's selective checkpointing is not the attention-core "
                     "recompute Trident plans; Trident reads none or full");
}

Status ReadStages(const JobKeys& k, int pp, Plan* plan) {
  bool single_stage = true;
  plan->schedule = ScheduleKind::k1F1B;  // without a pipeline torchtitan reads no schedule
  std::vector<int> splits;
  if (pp > 1) {
    TRIDENT_ASSIGN_OR_RETURN(plan->schedule, ReadSchedule(k, &single_stage));
    TRIDENT_ASSIGN_OR_RETURN(splits, ReadSplits(k, plan->model.NumLayers() - 3, pp, single_stage));
  }
  const int stages = static_cast<int>(splits.size()) + 1;
  if (stages % pp != 0 || (single_stage && stages != pp)) {
    return k.Error("parallelism.pipeline_parallel_split_points",
                   Str(stages) + " stages for pipeline_parallel_degree " + Str(pp) + " and " +
                       std::string(TorchtitanScheduleName(plan->schedule)) +
                       (single_stage ? " (one stage a rank)" : " (a multiple of the degree)"));
  }
  plan->virtual_stages = stages / pp;
  if (plan->virtual_stages == 1 && plan->schedule == ScheduleKind::kInterleaved1F1B)
    plan->schedule = ScheduleKind::k1F1B;  // one stage a rank: the same order
  TRIDENT_ASSIGN_OR_RETURN(RecomputeMode recompute, ReadRecompute(k));
  std::vector<int> firsts = {0};
  for (int split : splits) firsts.push_back(split + 1);
  firsts.push_back(plan->model.NumLayers());
  for (int s = 0; s < stages; ++s) {
    plan->stages.push_back(
        {firsts[s], firsts[s + 1] - firsts[s], plan->mesh.dp, recompute, 0.0, 0});
  }
  return Status::Ok();
}

// The degrees, checked as torchtitan's ParallelDims and parallelize functions check them.
Status ReadMesh(const JobKeys& k, Plan* plan) {
  TRIDENT_ASSIGN_OR_RETURN(int64_t replicate,
                           k.Int("parallelism.data_parallel_replicate_degree", 1));
  TRIDENT_ASSIGN_OR_RETURN(int64_t shard, k.Int("parallelism.data_parallel_shard_degree", -1));
  TRIDENT_ASSIGN_OR_RETURN(int64_t tp, k.Int("parallelism.tensor_parallel_degree", 1));
  TRIDENT_ASSIGN_OR_RETURN(int64_t pp, k.Int("parallelism.pipeline_parallel_degree", 1));
  TRIDENT_ASSIGN_OR_RETURN(int64_t cp, k.Int("parallelism.context_parallel_degree", 1));
  TRIDENT_ASSIGN_OR_RETURN(int64_t ep, k.Int("parallelism.expert_parallel_degree", 1));
  if (replicate < 1 || tp < 1 || pp < 1 || cp < 1 || (shard < 1 && shard != -1)) {
    return k.Error("parallelism",
                   "degrees are at least 1 (data_parallel_shard_degree -1: the "
                   "ranks left)");
  }
  if (shard == -1) shard = plan->devices / (replicate * cp * tp * pp);
  if (shard < 1 || replicate * shard * cp * tp * pp != plan->devices) {
    return k.Error("parallelism",
                   "data_parallel_replicate_degree " + Str(replicate) + " × shard " + Str(shard) +
                       " × context " + Str(cp) + " × tensor " + Str(tp) + " × pipeline " + Str(pp) +
                       " is not the world size " + Str(plan->devices) + " (--devices)");
  }
  if (ep > 1)
    return k.Error("parallelism.expert_parallel_degree", "Trident plans no experts; set 1");
  if (replicate > 1 && shard == 1 && (tp > 1 || pp > 1)) {
    return k.Error("parallelism.data_parallel_replicate_degree",
                   "torchtitan refuses DDP beside tensor or pipeline parallelism (\"DDP has not "
                   "supported > 1D parallelism\")");
  }
  TRIDENT_ASSIGN_OR_RETURN(std::string reshard,
                           k.Text("parallelism.fsdp_reshard_after_forward", "default"));
  if (reshard != "default" && reshard != "always" && reshard != "never") {
    return k.Error("parallelism.fsdp_reshard_after_forward",
                   reshard + ": default, always or never");
  }
  plan->mesh = {static_cast<int>(replicate * shard), static_cast<int>(pp), static_cast<int>(tp),
                static_cast<int>(cp)};
  // FSDP over shard groups of `shard` replicas, replicated `replicate` times (HSDP).
  plan->dp_sharding = shard > 1 ? DpSharding::kFull : DpSharding::kNone;
  plan->dp_shard = shard > 1 && replicate > 1 ? static_cast<int>(shard) : 0;
  plan->sequence_parallel = tp > 1;  // torchtitan's tensor parallelism always is
  return Status::Ok();
}

Status ReadTraining(const JobKeys& k, Plan* plan) {
  TRIDENT_ASSIGN_OR_RETURN(int64_t local, k.Int("training.local_batch_size", 8));
  TRIDENT_ASSIGN_OR_RETURN(plan->seq_len, k.Int("training.seq_len", 2048));
  const int cp = plan->mesh.cp;
  if (cp > 1 && plan->seq_len % (2 * cp) != 0) {
    return k.Error("training.seq_len", Str(plan->seq_len) +
                                           " is not divisible by 2 · context_parallel_degree " +
                                           Str(2 * cp) + ", as torchtitan's load balancing needs");
  }
  if (plan->sequence_parallel && (plan->seq_len / cp) % plan->mesh.tp != 0) {
    return k.Error("training.seq_len",
                   Str(plan->seq_len) + (cp > 1 ? " / context_parallel_degree" : "") +
                       " does not divide over tensor_parallel_degree " + Str(plan->mesh.tp) +
                       ", whose norms torchtitan shards along the sequence");
  }
  const int64_t dp = plan->mesh.dp;
  TRIDENT_ASSIGN_OR_RETURN(int64_t global, k.Int("training.global_batch_size", -1));
  if (global < 0) global = local * dp;
  if (local < 1 || global % (local * dp) != 0) {
    return k.Error("training.global_batch_size",
                   Str(global) + " is not a multiple of local_batch_size " + Str(local) +
                       " × data-parallel degree " + Str(dp));
  }
  int64_t micro = local;
  if (plan->mesh.pp > 1) {
    TRIDENT_ASSIGN_OR_RETURN(micro, k.Int("parallelism.pipeline_parallel_microbatch_size", 1));
    if (micro < 1 || local % micro != 0) {
      return k.Error("parallelism.pipeline_parallel_microbatch_size",
                     Str(micro) + " does not divide local_batch_size " + Str(local));
    }
  }
  plan->global_batch = global;
  plan->micro_batch_size = static_cast<int>(micro);
  plan->num_micro_batches = static_cast<int>(global / micro);
  TRIDENT_ASSIGN_OR_RETURN(std::string precision,
                           k.Text("training.mixed_precision_param", "bfloat16"));
  if (precision != "bfloat16" && precision != "float32")
    return k.Error("training.mixed_precision_param", precision + ": bfloat16 or float32");
  // Mixed precision reaches the model through FSDP (applied with a shard degree above 1 or
  // under context parallelism) or, without tp and pp, autocast.
  const bool applied = (plan->mesh.tp == 1 && plan->mesh.pp == 1) || plan->mesh.cp > 1 ||
                       plan->dp_sharding == DpSharding::kFull;
  plan->dtype = precision == "bfloat16" && applied ? DType::kBf16 : DType::kFp32;
  plan->model.dtype = plan->dtype;
  plan->model.max_seq_len = plan->seq_len;  // torchtitan's update_from_config
  return Status::Ok();
}

StatusOr<toml::table> Parse(std::string_view text, const std::string& file) {
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(file + ":" + Str(e.source().begin.line) + ":" +
                           Str(e.source().begin.column) +
                           ": not TOML: " + std::string(e.description()));
  }
}

}  // namespace

StatusOr<std::vector<int>> TorchtitanSplitPoints(int blocks, int pp, bool single_stage,
                                                 int layers_per_stage) {
  const int effective = blocks + 2;  // the embedding and the norm with the output: one each
  int total = pp * (single_stage ? 1 : 2);
  int per_stage = effective / total;
  if (layers_per_stage > 0) {
    const int per_rank = effective / pp;
    if (effective % pp != 0 || per_rank % layers_per_stage != 0 ||
        (single_stage != (per_rank / layers_per_stage == 1))) {
      return InvalidArgument("parallelism.pipeline_parallel_layers_per_stage: " +
                             Str(layers_per_stage) + " does not divide the " + Str(effective) +
                             " layers (blocks, embedding, output) into the schedule's stages "
                             "on " +
                             Str(pp) + " ranks");
    }
    per_stage = layers_per_stage;
    total = effective / per_stage;
  }
  if (total > effective || per_stage < 1) {
    return InvalidArgument("parallelism.pipeline_parallel_degree: " + Str(total) + " stages for " +
                           Str(effective) + " layers");
  }
  int extra = effective - per_stage * total;
  std::vector<int> splits;
  int current = 0;
  for (int i = 0; i + 1 < total; ++i) {
    current += i == 0 ? per_stage - 1 : per_stage;
    if (extra > 0) {
      ++current;
      --extra;
    }
    splits.push_back(current);
  }
  return splits;
}

StatusOr<TorchtitanImport> ImportTorchtitan(std::string_view text, const std::string& file,
                                            const TorchtitanImportOptions& options) {
  TRIDENT_ASSIGN_OR_RETURN(toml::table table, Parse(text, file));
  JobKeys keys(std::move(table), file);
  TorchtitanImport out;
  Plan& plan = out.plan;
  plan.cluster = options.cluster;
  plan.devices = options.devices;
  plan.devices_per_node = options.devices_per_node > 0 ? options.devices_per_node : options.devices;
  if (plan.devices < 1) {
    return InvalidArgument(file +
                           ": a job file does not say the world size (torchrun does); "
                           "give it with --devices N");
  }
  TRIDENT_RETURN_IF_ERROR(ReadModel(keys, &plan));
  TRIDENT_RETURN_IF_ERROR(ReadMesh(keys, &plan));
  TRIDENT_RETURN_IF_ERROR(ReadTraining(keys, &plan));
  TRIDENT_RETURN_IF_ERROR(ReadStages(keys, plan.mesh.pp, &plan));
  out.ignored = keys.Unread();
  if (Status valid = plan.Validate(); !valid.ok())
    return valid.WithPrefix(file + ": the plan it describes");
  return out;
}

}  // namespace trident
