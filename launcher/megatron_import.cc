#include "launcher/megatron_import.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

#include "launcher/megatron_export.h"

namespace trident {
namespace {

using Kind = MegatronFlagKind;

// The flags read: Megatron-LM's of a plan, its --vocab-size (which a plan's export leaves to
// the tokenizer), and torchrun's node counts.
const std::map<std::string, Kind>& FlagKinds() {
  static const std::map<std::string, Kind> kinds = [] {
    std::map<std::string, Kind> out = {{"--vocab-size", Kind::kInt},
                                       {"--nnodes", Kind::kInt},
                                       {"--nproc-per-node", Kind::kInt},
                                       {"--nproc_per_node", Kind::kInt}};
    for (const MegatronFlag& flag : MegatronFlags()) out.emplace(flag.name, flag.kind);
    return out;
  }();
  return kinds;
}

std::string Str(int64_t value) { return std::to_string(value); }

// Which words are Megatron-LM's arguments: in a command that gives one of the flags read or
// names a Python script (pretrain_gpt.py), the words after the script, or without one all of
// an array's words and an argument list's from the first word that begins with '-' on. The rest is
// the script's shell (set -e, mkdir -p, unset NAME) and the launcher's (torchrun before the
// script).
std::vector<bool> MegatronArguments(const std::vector<std::string>& words,
                                    const std::vector<int>& commands) {
  std::vector<bool> out(words.size(), false);
  auto ends_with_py = [](const std::string& w) {
    return w.size() > 3 && w.compare(w.size() - 3, 3, ".py") == 0;
  };
  for (size_t begin = 0, end = 0; begin < words.size(); begin = end) {
    bool flags = false;
    size_t script = words.size(), first_dash = words.size();
    for (end = begin; end < words.size() && commands[end] == commands[begin]; ++end) {
      const std::string& w = words[end];
      if (FlagKinds().count(w.substr(0, w.find('='))) > 0) flags = true;
      if (ends_with_py(w)) script = end;
      if (w.rfind("-", 0) == 0 && first_dash == words.size()) first_dash = end;
    }
    if (!flags && script == words.size()) continue;
    // An array's words (NAME=( ... ), the word before them NAME=) are all arguments.
    const bool array = begin > 0 && commands[begin - 1] + 1 == commands[begin] &&
                       !words[begin - 1].empty() && words[begin - 1].back() == '=';
    const size_t from = script < words.size() ? script + 1 : array ? begin : first_dash;
    for (size_t i = from; i < end; ++i) out[i] = true;
  }
  return out;
}

// The flags of one configuration, typed, with the file for messages.
class Flags {
 public:
  explicit Flags(std::string file) : file_(std::move(file)) {}

  // Reads every `--flag [value]` of `words` (`commands` numbers the command of each, as
  // ShellWords says). A value is the next word of the same command that does not begin with
  // '-'. In Megatron-LM's arguments (MegatronArguments) a word that is neither a flag nor a
  // flag's value, a single-dash flag among them, is listed with the flags not read.
  Status Read(const std::vector<std::string>& words, const std::vector<int>& commands,
              std::vector<std::string>* ignored) {
    const std::vector<bool> megatron = MegatronArguments(words, commands);
    auto list = [ignored](const std::string& word) {
      if (std::find(ignored->begin(), ignored->end(), word) == ignored->end()) {
        ignored->push_back(word);
      }
    };
    for (size_t i = 0; i < words.size(); ++i) {
      const bool next_is_value =
          i + 1 < words.size() && commands[i + 1] == commands[i] && words[i + 1].rfind("-", 0) != 0;
      if (words[i].rfind("--", 0) != 0 || words[i].size() == 2) {
        if (!megatron[i] || words[i].rfind("$", 0) == 0) continue;
        list(words[i]);
        if (words[i].size() > 1 && words[i][0] == '-' && next_is_value) ++i;
        continue;
      }
      std::string name = words[i];
      std::optional<std::string> value;
      if (size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
      }
      auto known = FlagKinds().find(name);
      if (known == FlagKinds().end()) {
        list(name);
        if (!value && next_is_value) ++i;
        continue;
      }
      if (known->second == Kind::kSwitch) {
        values_[name] = "";
        continue;
      }
      if (!value && !next_is_value) return Error(name, "needs a value");
      values_[name] = value ? *value : words[++i];
    }
    return Status::Ok();
  }

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string Text(const std::string& name, std::string fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
  }
  StatusOr<int64_t> Int(const std::string& name, int64_t fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    int64_t value = 0;
    const std::string& text = it->second;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0) {
      return Error(name, "expected a whole number, got '" + text + "'");
    }
    return value;
  }
  StatusOr<double> Float(const std::string& name, double fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    try {
      size_t used = 0;
      const double value = std::stod(it->second, &used);
      if (used == it->second.size()) return value;
    } catch (const std::exception&) {
    }
    return Error(name, "expected a number, got '" + it->second + "'");
  }
  Status Error(const std::string& name, const std::string& what) const {
    return InvalidArgument(file_ + ": " + name + ": " + what);
  }

 private:
  std::string file_;
  std::map<std::string, std::string> values_;
};

// Megatron-LM's attention backends: flash and fused (cuDNN) keep no scores, like Transformer
// Engine's choice under auto, the default; unfused and local do. --use-flash-attn, the older
// flag, says flash.
Status ReadAttention(const Flags& f, ModelSpec* m) {
  const std::string backend = f.Text("--attention-backend", "auto");
  if (backend == "unfused" || backend == "local") {
    if (f.Has("--use-flash-attn"))
      return f.Error("--use-flash-attn", "contradicts --attention-backend " + backend);
    m->attention = AttentionKind::kUnfused;
    return Status::Ok();
  }
  if (backend != "flash" && backend != "fused" && backend != "auto") {
    return f.Error("--attention-backend",
                   backend + " is not one of Megatron-LM's (flash, fused, unfused, local, auto)");
  }
  m->attention = AttentionKind::kFlash;
  return Status::Ok();
}

Status ReadModel(const Flags& f, const MegatronImportOptions& o, Plan* plan) {
  ModelSpec& m = plan->model;
  m.name = o.name;
  TRIDENT_ASSIGN_OR_RETURN(int64_t blocks, f.Int("--num-layers", 0));
  if (blocks < 1) return f.Error("--num-layers", "is required (the transformer layers)");
  TRIDENT_ASSIGN_OR_RETURN(m.hidden, f.Int("--hidden-size", 0));
  TRIDENT_ASSIGN_OR_RETURN(m.heads, f.Int("--num-attention-heads", 0));
  const bool llama = f.Has("--swiglu");
  TRIDENT_ASSIGN_OR_RETURN(int64_t groups, f.Int("--num-query-groups", 1));
  m.kv_heads = f.Has("--group-query-attention") ? groups : m.heads;
  const int64_t default_ffn = llama ? (4 * m.hidden * 2 / 3) / 64 * 64 : 4 * m.hidden;
  TRIDENT_ASSIGN_OR_RETURN(m.ffn_hidden, f.Int("--ffn-hidden-size", default_ffn));
  TRIDENT_ASSIGN_OR_RETURN(plan->seq_len, f.Int("--seq-length", 0));
  TRIDENT_ASSIGN_OR_RETURN(m.max_seq_len, f.Int("--max-position-embeddings", plan->seq_len));
  TRIDENT_ASSIGN_OR_RETURN(m.vocab_size, f.Int("--vocab-size", o.vocab_size));
  if (o.vocab_size > 0) m.vocab_size = o.vocab_size;
  if (m.vocab_size < 1) {
    return f.Error("--vocab-size",
                   "absent: Megatron-LM takes the vocabulary from the tokenizer; "
                   "give it with trident import megatron --vocab-size V");
  }
  const std::string norm = f.Text("--normalization", "LayerNorm");
  if (norm != "LayerNorm" && norm != "RMSNorm")
    return f.Error("--normalization", norm + " has no Trident norm (LayerNorm, RMSNorm)");
  m.norm = norm == "RMSNorm" ? NormKind::kRmsNorm : NormKind::kLayerNorm;
  const std::string positions = f.Text("--position-embedding-type", "learned_absolute");
  if (positions != "learned_absolute" && positions != "rope")
    return f.Error("--position-embedding-type",
                   positions + " has no Trident form (learned_absolute, rope)");
  m.positions = positions == "rope" ? PositionKind::kRope : PositionKind::kLearned;
  TRIDENT_ASSIGN_OR_RETURN(int64_t base, f.Int("--rotary-base", 10000));
  m.rope_theta = static_cast<double>(base);
  TRIDENT_ASSIGN_OR_RETURN(m.norm_eps, f.Float("--norm-epsilon", 1e-5));
  m.tied_embeddings = !f.Has("--untie-embeddings-and-output-weights");
  TRIDENT_RETURN_IF_ERROR(ReadAttention(f, &m));
  TRIDENT_ASSIGN_OR_RETURN(m.dropout, f.Float("--hidden-dropout", 0.1));
  TRIDENT_ASSIGN_OR_RETURN(double attention_dropout, f.Float("--attention-dropout", 0.1));
  if (attention_dropout != m.dropout) {
    return f.Error("--attention-dropout",
                   "differs from --hidden-dropout; a Trident model has one dropout");
  }
  if (llama != f.Has("--disable-bias-linear")) {
    return f.Error("--swiglu",
                   "Trident's blocks are GPT's (GELU, biases) or Llama's (SwiGLU, no "
                   "biases): give --swiglu and --disable-bias-linear together or neither");
  }
  m.dtype = f.Has("--bf16") ? DType::kBf16 : f.Has("--fp16") ? DType::kFp16 : DType::kFp32;
  plan->dtype = m.dtype;
  m.layers = {{LayerKind::kEmbedding, 1},
              {llama ? LayerKind::kLlamaBlock : LayerKind::kGptBlock, static_cast<int>(blocks)},
              {LayerKind::kFinalNorm, 1},
              {LayerKind::kLmHead, 1}};
  return Status::Ok();
}

// The transformer layers of each stage, in model order, for --decoder-first/last-pipeline-num-
// layers: as Megatron-LM's get_transformer_layer_offset counts them, the first and the last
// pipeline rank hold those many (split evenly over the rank's virtual stages) and the middle
// ranks the rest evenly; the model's stage c · pp + r is virtual stage c of rank r.
StatusOr<std::vector<int>> UnevenBlocks(const Flags& f, int64_t blocks, int64_t pp, int64_t v) {
  TRIDENT_ASSIGN_OR_RETURN(int64_t first, f.Int("--decoder-first-pipeline-num-layers", 0));
  TRIDENT_ASSIGN_OR_RETURN(int64_t last, f.Int("--decoder-last-pipeline-num-layers", 0));
  const int64_t ends = (first > 0) + (last > 0);
  const int64_t middle = blocks - first - last;
  if (pp <= ends && middle != 0) {
    return f.Error("--decoder-first-pipeline-num-layers",
                   "with --decoder-last-pipeline-num-layers leaves " + Str(middle) + " of the " +
                       Str(blocks) + " transformer layers and no stage for them");
  }
  if (pp > ends && middle % (pp - ends) != 0) {
    return f.Error("--num-layers", Str(middle) + " transformer layers do not split evenly over " +
                                       Str(pp - ends) + " stages");
  }
  std::vector<int64_t> rank(pp, pp > ends ? middle / (pp - ends) : 0);
  if (first > 0) rank.front() = first;
  if (last > 0) rank.back() = last;
  for (int64_t r = 0; r < pp; ++r) {
    if (rank[r] % v != 0) {
      return f.Error(r == 0 && first > 0       ? "--decoder-first-pipeline-num-layers"
                     : r == pp - 1 && last > 0 ? "--decoder-last-pipeline-num-layers"
                                               : "--num-layers",
                     "pipeline rank " + Str(r) + "'s " + Str(rank[r]) +
                         " transformer layers do not split evenly over its " + Str(v) +
                         " virtual stages");
    }
  }
  std::vector<int> out;
  for (int64_t c = 0; c < v; ++c) {
    for (int64_t r = 0; r < pp; ++r) out.push_back(static_cast<int>(rank[r] / v));
  }
  return out;
}

// The transformer layers of each stage, in model order (pp · virtual stages of them).
StatusOr<std::vector<int>> StageBlocks(const Flags& f, int64_t blocks, int64_t pp,
                                       int* virtual_stages) {
  TRIDENT_ASSIGN_OR_RETURN(int64_t v, f.Int("--num-virtual-stages-per-pipeline-rank", 1));
  if (v < 1) return f.Error("--num-virtual-stages-per-pipeline-rank", "must be 1 or more");
  if (f.Has("--num-layers-per-virtual-pipeline-stage")) {
    if (f.Has("--decoder-first-pipeline-num-layers") ||
        f.Has("--decoder-last-pipeline-num-layers")) {
      return f.Error("--num-layers-per-virtual-pipeline-stage",
                     "Megatron-LM refuses it with --decoder-first/last-pipeline-num-layers "
                     "(give --num-virtual-stages-per-pipeline-rank)");
    }
    TRIDENT_ASSIGN_OR_RETURN(int64_t per, f.Int("--num-layers-per-virtual-pipeline-stage", 1));
    if (per < 1 || blocks % (pp * per) != 0)
      return f.Error("--num-layers-per-virtual-pipeline-stage", "must divide --num-layers / pp");
    v = blocks / (pp * per);
  }
  std::vector<int> out;
  if (f.Has("--pipeline-model-parallel-layout")) {
    TRIDENT_ASSIGN_OR_RETURN(std::vector<std::string> stages,
                             ExpandPipelineLayout(f.Text("--pipeline-model-parallel-layout", "")));
    if (stages.size() % pp != 0)
      return f.Error("--pipeline-model-parallel-layout",
                     Str(stages.size()) + " stages are not a multiple of pp " + Str(pp));
    for (size_t s = 0; s < stages.size(); ++s) {
      const std::string& st = stages[s];
      const bool e_ok = (st.find('E') != std::string::npos) == (s == 0) &&
                        (st.find('E') == std::string::npos || st.find('E') == 0);
      const bool l_ok = (st.find('L') != std::string::npos) == (s + 1 == stages.size()) &&
                        (st.find('L') == std::string::npos || st.find('L') + 1 == st.size());
      if (!e_ok || !l_ok)
        return f.Error("--pipeline-model-parallel-layout",
                       "E must open the first stage and L close the last");
      out.push_back(static_cast<int>(std::count(st.begin(), st.end(), 't')));
    }
    v = static_cast<int64_t>(stages.size()) / pp;
  } else {
    TRIDENT_ASSIGN_OR_RETURN(out, UnevenBlocks(f, blocks, pp, v));
  }
  int64_t total = 0;
  for (int b : out) total += b;
  if (total != blocks)
    return f.Error("--pipeline-model-parallel-layout",
                   "holds " + Str(total) + " transformer layers, --num-layers says " + Str(blocks));
  *virtual_stages = static_cast<int>(v);
  return out;
}

StatusOr<RecomputeMode> Recompute(const Flags& f) {
  const std::string granularity =
      f.Has("--recompute-activations") ? "selective" : f.Text("--recompute-granularity", "");
  if (granularity.empty()) return RecomputeMode::kNone;
  if (granularity == "selective") return RecomputeMode::kSelective;
  TRIDENT_ASSIGN_OR_RETURN(int64_t layers, f.Int("--recompute-num-layers", 1));
  if (granularity == "full" && f.Text("--recompute-method", "uniform") == "uniform" &&
      layers == 1) {
    return RecomputeMode::kFull;
  }
  return f.Error("--recompute-granularity",
                 "Trident recomputes none, selective or every layer (full "
                 "with --recompute-method uniform --recompute-num-layers 1), not this");
}

// PyTorch's FSDP2 under Megatron-LM: full sharding, or gradients with
// --torch-fsdp2-no-reshard-after-forward (its help: "FSDP ZeRO-2"); validate_args refuses it
// with a pipeline and with the distributed optimizer.
StatusOr<DpSharding> TorchFsdp2Level(const Flags& f, int64_t pp) {
  for (const char* other : {"--use-distributed-optimizer", "--use-megatron-fsdp"}) {
    if (f.Has(other)) return f.Error("--use-torch-fsdp2", std::string("contradicts ") + other);
  }
  if (pp > 1) {
    return f.Error("--use-torch-fsdp2", "Megatron-LM refuses it with pipeline parallelism");
  }
  if (f.Has("--num-distributed-optimizer-instances")) {
    return f.Error("--num-distributed-optimizer-instances",
                   "Trident reads hybrid groups of Megatron FSDP and the distributed optimizer, "
                   "not of --use-torch-fsdp2");
  }
  return f.Has("--torch-fsdp2-no-reshard-after-forward") ? DpSharding::kGradients
                                                         : DpSharding::kFull;
}

// The sharding level: Megatron FSDP's strategy under --use-megatron-fsdp, PyTorch FSDP2's under
// --use-torch-fsdp2, else optimizer sharding with the distributed optimizer. None with dp 1,
// where a shard group would be one replica.
StatusOr<DpSharding> ShardingLevel(const Flags& f, int64_t dp, int64_t pp) {
  if (f.Has("--use-torch-fsdp2")) {
    TRIDENT_ASSIGN_OR_RETURN(DpSharding level, TorchFsdp2Level(f, pp));
    return dp == 1 ? DpSharding::kNone : level;
  }
  const std::string strategy = f.Text("--data-parallel-sharding-strategy", "no_shard");
  DpSharding level =
      f.Has("--use-distributed-optimizer") ? DpSharding::kOptimizer : DpSharding::kNone;
  if (f.Has("--use-megatron-fsdp")) {
    const std::vector<DpSharding> levels = {DpSharding::kNone, DpSharding::kOptimizer,
                                            DpSharding::kGradients, DpSharding::kFull};
    auto it = std::find_if(levels.begin(), levels.end(),
                           [&](DpSharding l) { return MegatronShardingStrategy(l) == strategy; });
    if (it == levels.end()) {
      return f.Error("--data-parallel-sharding-strategy",
                     strategy + " is not one of no_shard, optim, optim_grads, optim_grads_params");
    }
    if (f.Text("--ckpt-format", "torch_dist") != "fsdp_dtensor") {
      return f.Error("--ckpt-format", "Megatron-LM requires fsdp_dtensor with --use-megatron-fsdp");
    }
    level = *it;
  } else if (strategy != "no_shard") {
    return f.Error("--data-parallel-sharding-strategy",
                   strategy + " takes effect only with --use-megatron-fsdp");
  }
  return dp == 1 ? DpSharding::kNone : level;
}

// The sharding level and hybrid groups: --num-distributed-optimizer-instances k cuts each
// data-parallel group into k consecutive shard groups of dp / k replicas.
Status ReadSharding(const Flags& f, int64_t dp, int64_t pp, Plan* plan) {
  TRIDENT_ASSIGN_OR_RETURN(plan->dp_sharding, ShardingLevel(f, dp, pp));
  const std::string outer = f.Text("--outer-dp-sharding-strategy", "no_shard");
  if (outer != "no_shard") {
    return f.Error("--outer-dp-sharding-strategy",
                   outer +
                       " shards the optimizer state across the shard groups too; Trident's "
                       "hybrid sharding replicates across them (no_shard)");
  }
  TRIDENT_ASSIGN_OR_RETURN(int64_t instances, f.Int("--num-distributed-optimizer-instances", 1));
  if (instances < 1 || dp % instances != 0) {
    return f.Error("--num-distributed-optimizer-instances",
                   Str(instances) + " does not divide the data-parallel size " + Str(dp));
  }
  if (instances == 1) return Status::Ok();
  if (plan->dp_sharding == DpSharding::kNone) {
    return f.Error("--num-distributed-optimizer-instances",
                   Str(instances) +
                       " copies of a state nothing shards: give "
                       "--use-distributed-optimizer or --use-megatron-fsdp");
  }
  if (instances == dp) {
    return f.Error("--num-distributed-optimizer-instances",
                   Str(instances) +
                       " leaves each shard group one data-parallel replica; "
                       "Trident shards over two or more (set 1, or fewer)");
  }
  plan->dp_shard = static_cast<int>(dp / instances);
  return Status::Ok();
}

Status ReadParallel(const Flags& f, const MegatronImportOptions& o, Plan* plan) {
  TRIDENT_ASSIGN_OR_RETURN(int64_t tp, f.Int("--tensor-model-parallel-size", 1));
  TRIDENT_ASSIGN_OR_RETURN(int64_t pp, f.Int("--pipeline-model-parallel-size", 1));
  TRIDENT_ASSIGN_OR_RETURN(int64_t cp, f.Int("--context-parallel-size", 1));
  // torchrun's counts are read only when the options do not give them ("--nproc-per-node gpu"
  // is torchrun's too).
  const bool given = o.devices > 0 && o.devices_per_node > 0;
  int64_t nodes = 1, per_node = 0;
  if (!given) {
    TRIDENT_ASSIGN_OR_RETURN(nodes, f.Int("--nnodes", 1));
    TRIDENT_ASSIGN_OR_RETURN(int64_t per_node_dash, f.Int("--nproc-per-node", 0));
    TRIDENT_ASSIGN_OR_RETURN(per_node, f.Int("--nproc_per_node", per_node_dash));
  }
  plan->devices = o.devices > 0 ? o.devices : static_cast<int>(nodes * per_node);
  if (plan->devices < 1)
    return f.Error(
        "--nproc-per-node",
        "absent, so the world size is unknown; give it with trident import megatron --devices N");
  plan->devices_per_node = o.devices_per_node > 0 ? o.devices_per_node
                           : per_node > 0         ? static_cast<int>(per_node)
                                                  : plan->devices;
  if (tp < 1 || pp < 1 || cp < 1 || plan->devices % (tp * pp * cp) != 0) {
    return f.Error("--tensor-model-parallel-size",
                   "tp " + Str(tp) + " × pp " + Str(pp) + (cp > 1 ? " × cp " + Str(cp) : "") +
                       " does not divide the world size " + Str(plan->devices));
  }
  const int64_t dp = plan->devices / (tp * pp * cp);
  plan->mesh = {static_cast<int>(dp), static_cast<int>(pp), static_cast<int>(tp),
                static_cast<int>(cp)};
  TRIDENT_ASSIGN_OR_RETURN(int64_t mbs, f.Int("--micro-batch-size", 0));
  if (mbs < 1) return f.Error("--micro-batch-size", "is required");
  TRIDENT_ASSIGN_OR_RETURN(plan->global_batch, f.Int("--global-batch-size", mbs * dp));
  if (plan->global_batch % (mbs * dp) != 0) {
    return f.Error("--global-batch-size", Str(plan->global_batch) +
                                              " is not divisible by micro batch size (" + Str(mbs) +
                                              ") times data parallel size (" + Str(dp) + ")");
  }
  plan->micro_batch_size = static_cast<int>(mbs);
  plan->num_micro_batches = static_cast<int>(plan->global_batch / mbs);
  TRIDENT_RETURN_IF_ERROR(ReadSharding(f, dp, pp, plan));
  // Megatron-LM turns sequence parallelism off by itself when tp is 1.
  plan->sequence_parallel = f.Has("--sequence-parallel") && tp > 1;
  TRIDENT_ASSIGN_OR_RETURN(std::vector<int> blocks,
                           StageBlocks(f, plan->model.NumLayers() - 3, pp, &plan->virtual_stages));
  plan->schedule = plan->virtual_stages > 1 ? ScheduleKind::kInterleaved1F1B : ScheduleKind::k1F1B;
  TRIDENT_ASSIGN_OR_RETURN(RecomputeMode recompute, Recompute(f));
  int first = 0;
  for (size_t s = 0; s < blocks.size(); ++s) {
    const int layers = blocks[s] + (s == 0) + 2 * (s + 1 == blocks.size());
    plan->stages.push_back({first, layers, static_cast<int>(dp), recompute, 0.0, 0});
    first += layers;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<MegatronImport> ImportMegatron(std::string_view text, const std::string& file,
                                        const MegatronImportOptions& options) {
  MegatronImport out;
  Flags flags(file);
  std::vector<int> commands;
  std::vector<std::string> words = SubstituteVariables(ShellWords(text, &commands));
  TRIDENT_RETURN_IF_ERROR(flags.Read(words, commands, &out.ignored));
  Plan& plan = out.plan;
  plan.cluster = options.cluster;
  TRIDENT_RETURN_IF_ERROR(ReadModel(flags, options, &plan));
  TRIDENT_RETURN_IF_ERROR(ReadParallel(flags, options, &plan));
  if (Status valid = plan.Validate(); !valid.ok())
    return valid.WithPrefix(file + ": the plan it describes");
  auto has = [&flags](const std::string& name) { return flags.Has(name); };
  TRIDENT_ASSIGN_OR_RETURN(out.notes, MegatronOverlapNotes(has, plan, file));
  return out;
}

}  // namespace trident
