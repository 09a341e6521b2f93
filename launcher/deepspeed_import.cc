#include "launcher/deepspeed_import.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "launcher/deepspeed_export.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

class Config {
 public:
  Config(nlohmann::json json, std::string file) : json_(std::move(json)), file_(std::move(file)) {}

  Status Error(const std::string& key, const std::string& what) const {
    return InvalidArgument(file_ + ": " + key + ": " + what);
  }
  // The value at "a" or "a.b", or nullptr.
  const nlohmann::json* Find(const std::string& key) const {
    const size_t dot = key.find('.');
    auto top = json_.find(key.substr(0, dot));
    if (top == json_.end()) return nullptr;
    if (dot == std::string::npos) return &*top;
    if (!top->is_object()) return nullptr;
    auto inner = top->find(key.substr(dot + 1));
    return inner == top->end() ? nullptr : &*inner;
  }
  // std::nullopt when absent; DeepSpeed's "auto" is absent too (set by an integration).
  StatusOr<std::optional<int64_t>> Int(const std::string& key) const {
    const nlohmann::json* v = Find(key);
    if (v == nullptr || (v->is_string() && *v == "auto")) return std::optional<int64_t>();
    if (!v->is_number_integer()) return Error(key, "expected a whole number, got " + v->dump());
    return std::optional<int64_t>(v->get<int64_t>());
  }
  StatusOr<bool> Bool(const std::string& key) const {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return false;
    if (!v->is_boolean()) return Error(key, "expected true or false, got " + v->dump());
    return v->get<bool>();
  }
  // Every key that DeepSpeedKeys() does not hold, nested ones as "section.key".
  std::vector<std::string> Unread() const {
    std::vector<std::string> out;
    auto unread = [&](const std::string& path) {
      const auto& keys = DeepSpeedKeys();
      if (std::find(keys.begin(), keys.end(), path) == keys.end()) out.push_back(path);
    };
    for (const auto& [key, value] : json_.items()) {
      if (!value.is_object() || value.empty()) {
        unread(key);
        continue;
      }
      for (const auto& [inner, unused] : value.items()) unread(key + "." + inner);
    }
    return out;
  }

 private:
  nlohmann::json json_;
  std::string file_;
};

// PipelineModule's "type:REGEX" partition: weight 1 for each layer whose name the regex finds
// (case-insensitive search, as _find_layer_type), 0 for the others. DeepSpeed matches the
// training script's class names; Trident matches its layer kind names (embedding, gpt_block,
// llama_block, mlp_block, final_norm, lm_head), so "type:block" counts the blocks.
StatusOr<std::vector<double>> TypeWeights(const ModelSpec& model, const std::string& method) {
  const std::string pattern = method.substr(method.find(':') + 1);
  std::regex type_regex;
  try {
    type_regex = std::regex(pattern, std::regex::icase | std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return InvalidArgument("--partition-method " + method + ": not a regular expression (" +
                           e.what() + ")");
  }
  std::vector<double> weights;
  for (LayerKind kind : model.ExpandLayers()) {
    weights.push_back(std::regex_search(NameOf(LayerKindNames(), kind), type_regex) ? 1 : 0);
  }
  if (std::find(weights.begin(), weights.end(), 1.0) == weights.end()) {
    return InvalidArgument("--partition-method " + method + ": matches no layer of " + model.name +
                           " (Trident's layer kinds: embedding, gpt_block, llama_block, "
                           "mlp_block, final_norm, lm_head); DeepSpeed refuses it too");
  }
  return weights;
}

// DeepSpeed's _set_batch_related_parameters: any two of the three give the third; then
// _batch_assertion. `dp` is the data-parallel size (DeepSpeed's world size for batches).
Status ReadBatches(const Config& c, int64_t dp, Plan* plan) {
  TRIDENT_ASSIGN_OR_RETURN(std::optional<int64_t> train, c.Int("train_batch_size"));
  TRIDENT_ASSIGN_OR_RETURN(std::optional<int64_t> micro, c.Int("train_micro_batch_size_per_gpu"));
  TRIDENT_ASSIGN_OR_RETURN(std::optional<int64_t> gas, c.Int("gradient_accumulation_steps"));
  if (!train && !micro) {
    return c.Error("train_batch_size",
                   "either train_batch_size or train_micro_batch_size_per_gpu is needed");
  }
  if (train && micro && !gas) gas = *train / *micro / dp;
  if (train && gas && !micro) micro = *train / dp / *gas;
  if (!train) train = *micro * gas.value_or(1) * dp;
  if (!micro) micro = *train / dp;
  if (!gas) gas = 1;
  if (*train < 1 || *micro < 1 || *gas < 1 || *train != *micro * *gas * dp) {
    return c.Error("train_batch_size", Str(*train) + " is not train_micro_batch_size_per_gpu " +
                                           Str(*micro) + " × gradient_accumulation_steps " +
                                           Str(*gas) + " × data-parallel size " + Str(dp) +
                                           ", as DeepSpeed requires");
  }
  plan->global_batch = *train;
  plan->micro_batch_size = static_cast<int>(*micro);
  plan->num_micro_batches = static_cast<int>(*gas * dp);
  return Status::Ok();
}

// zero_optimization.stage as the sharding level (none with dp 1, where nothing is shared), and
// MiCS's shard groups (mics_shard_size, stage 3, consecutive ranks) as hybrid sharding.
Status ReadSharding(const Config& c, Plan* plan) {
  TRIDENT_ASSIGN_OR_RETURN(std::optional<int64_t> stage, c.Int("zero_optimization.stage"));
  const int64_t level = stage.value_or(0);
  if (level < 0 || level > 3) return c.Error("zero_optimization.stage", Str(level) + ": 0 to 3");
  if (plan->mesh.pp > 1 && level > 1) {
    return c.Error("zero_optimization.stage",
                   Str(level) + " with a pipeline of " + Str(plan->mesh.pp) +
                       " stages: DeepSpeed's pipeline engine refuses ZeRO stages 2 and 3");
  }
  plan->dp_sharding = plan->mesh.dp > 1 ? static_cast<DpSharding>(level) : DpSharding::kNone;
  TRIDENT_ASSIGN_OR_RETURN(std::optional<int64_t> mics, c.Int("zero_optimization.mics_shard_size"));
  if (mics.value_or(-1) <= 0) return Status::Ok();
  const int64_t dp = plan->mesh.dp;
  if (level != 3) {
    return c.Error("zero_optimization.mics_shard_size", "MiCS shards parameters: stage 3 only");
  }
  if (plan->mesh.tp > 1) {
    return c.Error("zero_optimization.mics_shard_size",
                   "MiCS groups consecutive ranks, which with tensor_parallel.autotp_size " +
                       Str(plan->mesh.tp) + " are not data-parallel replicas");
  }
  if (*mics < 2 || dp % *mics != 0) {
    return c.Error("zero_optimization.mics_shard_size",
                   Str(*mics) + " does not divide the data-parallel size " + Str(dp) +
                       " into shard groups of two or more");
  }
  plan->dp_shard = *mics < dp ? static_cast<int>(*mics) : 0;
  return Status::Ok();
}

Status ReadPrecisionAndSharding(const Config& c, Plan* plan) {
  TRIDENT_ASSIGN_OR_RETURN(bool bf16, c.Bool("bf16.enabled"));
  TRIDENT_ASSIGN_OR_RETURN(bool fp16, c.Bool("fp16.enabled"));
  if (bf16 && fp16) return c.Error("bf16.enabled", "and fp16.enabled cannot both be true");
  plan->dtype = bf16 ? DType::kBf16 : fp16 ? DType::kFp16 : DType::kFp32;
  plan->model.dtype = plan->dtype;
  return ReadSharding(c, plan);
}

// The stages' first layers (then the layer count), as PipelineModule partitions them.
StatusOr<std::vector<int>> Parts(const DeepSpeedImportOptions& o, int layers,
                                 const std::string& file) {
  const int stages = o.num_stages;
  if (!o.parts.empty()) {
    bool ok = static_cast<int>(o.parts.size()) == stages + 1 && o.parts.front() == 0 &&
              o.parts.back() == layers;
    for (size_t i = 1; ok && i < o.parts.size(); ++i) ok = o.parts[i] > o.parts[i - 1];
    if (!ok) {
      return InvalidArgument(file + ": --parts: expected " + Str(stages + 1) +
                             " increasing layer indices from 0 to " + Str(layers));
    }
    return o.parts;
  }
  if (o.partition_method == "uniform") return PartitionUniform(layers, stages);
  if (o.partition_method == "parameters") {
    if (static_cast<int>(o.layer_params.size()) != layers)
      return InvalidArgument(file + ": the parameter count of every layer is needed");
    return PartitionBalanced(o.layer_params, stages);
  }
  if (o.partition_method.starts_with("type:")) {
    TRIDENT_ASSIGN_OR_RETURN(std::vector<double> weights, TypeWeights(o.model, o.partition_method));
    return PartitionBalanced(weights, stages);
  }
  return InvalidArgument(file + ": --partition-method " + o.partition_method +
                         ": Trident reads parameters (PipelineModule's default), uniform or "
                         "type:REGEX; give other cuts with --parts");
}

StatusOr<RecomputeMode> Recompute(const Config& c, int interval) {
  TRIDENT_ASSIGN_OR_RETURN(std::optional<int64_t> configured,
                           c.Int("pipeline.activation_checkpoint_interval"));
  const int64_t k = configured.value_or(0) > 0 ? *configured : interval;
  if (k == 0) return RecomputeMode::kNone;
  if (k == 1) return RecomputeMode::kFull;
  return c.Error("pipeline.activation_checkpoint_interval",
                 Str(k) + ": Trident recomputes every layer (1) or none (0), not every " + Str(k));
}

Status ReadStages(const Config& c, const DeepSpeedImportOptions& o, const std::string& file,
                  Plan* plan) {
  const int layers = plan->model.NumLayers();
  TRIDENT_ASSIGN_OR_RETURN(std::vector<int> parts, Parts(o, layers, file));
  TRIDENT_ASSIGN_OR_RETURN(RecomputeMode recompute, Recompute(c, o.activation_checkpoint_interval));
  for (int s = 0; s < o.num_stages; ++s) {
    if (parts[s + 1] == parts[s]) {
      return InvalidArgument(file + ": " + Str(o.num_stages) + " pipeline stages for " +
                             Str(layers) + " layers leave stage " + Str(s) + " empty");
    }
    plan->stages.push_back({parts[s], parts[s + 1] - parts[s], plan->mesh.dp, recompute, 0.0, 0});
  }
  plan->schedule = ScheduleKind::k1F1B;  // the pipeline engine's TrainSchedule
  return Status::Ok();
}

Status ReadMesh(const Config& c, const DeepSpeedImportOptions& o, Plan* plan) {
  TRIDENT_ASSIGN_OR_RETURN(std::optional<int64_t> autotp, c.Int("tensor_parallel.autotp_size"));
  const int64_t tp = std::max<int64_t>(1, autotp.value_or(0));
  const int64_t pp = o.num_stages;
  if (pp < 1 || plan->devices % (tp * pp) != 0) {
    return c.Error("tensor_parallel.autotp_size",
                   "tp " + Str(tp) + " × " + Str(pp) + " pipeline stages does not divide the " +
                       "world size " + Str(plan->devices) + " (--devices)");
  }
  plan->mesh = {static_cast<int>(plan->devices / (tp * pp)), static_cast<int>(pp),
                static_cast<int>(tp)};
  return Status::Ok();
}

}  // namespace

std::vector<int> PartitionUniform(int items, int parts) {
  std::vector<int> out(parts + 1);
  if (items <= parts) {
    for (int p = 0; p <= parts; ++p) out[p] = std::min(p, items);
    return out;
  }
  const int chunk = items / parts;
  const int residual = items - chunk * parts;
  for (int p = 0; p <= parts; ++p) out[p] = p * chunk + std::min(p, residual);
  return out;
}

// DeepSpeed's dynamic program: for the first i items in j parts, the cut k whose parts have the
// least spread (heaviest minus lightest), keeping one (max, min) pair a state; ties go to the
// largest k.
std::vector<int> PartitionBalanced(const std::vector<double>& weights, int parts) {
  const int n = static_cast<int>(weights.size());
  const int m = parts;
  if (n <= m) return PartitionUniform(n, m);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> max_sum(n + 1, std::vector<double>(m + 1, kInf));
  std::vector<std::vector<double>> min_sum = max_sum, cost = max_sum;
  std::vector<std::vector<int>> position(n + 1, std::vector<int>(m + 1, 0));
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + weights[i];
  max_sum[0][0] = 0;
  cost[0][0] = 0;
  for (int i = 1; i <= n; ++i) {
    for (int j = 1; j <= std::min(i, m); ++j) {
      for (int k = 0; k < i; ++k) {
        const double part = prefix[i] - prefix[k];
        const double hi = std::max(max_sum[k][j - 1], part);
        const double lo = std::min(min_sum[k][j - 1], part);
        const double spread = hi - lo;
        if (cost[i][j] >= spread) {  // an impossible state's spread is infinite
          cost[i][j] = spread;
          max_sum[i][j] = hi;
          min_sum[i][j] = lo;
          position[i][j] = k;
        }
      }
    }
  }
  std::vector<int> out = {n};
  for (int j = m; j >= 1; --j) out.push_back(position[out.back()][j]);
  std::reverse(out.begin(), out.end());
  return out;
}

StatusOr<DeepSpeedImport> ImportDeepSpeed(std::string_view json_text, const std::string& file,
                                          const DeepSpeedImportOptions& options) {
  nlohmann::json json = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object())
    return InvalidArgument(file + ": not a JSON object (a ds_config.json)");
  Config config(std::move(json), file);
  DeepSpeedImport out;
  Plan& plan = out.plan;
  plan.model = options.model;
  plan.cluster = options.cluster;
  plan.devices = options.devices;
  plan.devices_per_node = options.devices_per_node > 0 ? options.devices_per_node : options.devices;
  plan.seq_len = options.seq_len;
  if (plan.devices < 1) {
    return InvalidArgument(file +
                           ": a ds_config.json does not say the world size (the "
                           "launcher does); give it with --devices N");
  }
  TRIDENT_RETURN_IF_ERROR(ReadMesh(config, options, &plan));
  TRIDENT_RETURN_IF_ERROR(ReadBatches(config, plan.mesh.dp, &plan));
  TRIDENT_RETURN_IF_ERROR(ReadPrecisionAndSharding(config, &plan));
  TRIDENT_RETURN_IF_ERROR(ReadStages(config, options, file, &plan));
  out.ignored = config.Unread();
  if (Status valid = plan.Validate(); !valid.ok())
    return valid.WithPrefix(file + ": the plan it describes");
  return out;
}

}  // namespace trident
