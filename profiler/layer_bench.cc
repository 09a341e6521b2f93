// Legend as in runtime/layers/layer.h: B micro-batch, S sequence, H hidden, V vocabulary.
#include "profiler/layer_bench.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "runtime/checkpoint/host_tensor.h"
#include "runtime/layers/layer.h"

namespace trident {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kInitSeed = 1;     // the layers' initializer seed
constexpr uint32_t kInputSeed = 7;    // the random inputs'
constexpr int kMicroBatch = 0;        // the micro-batch id every pass uses
constexpr float kTiedWeight = 0.02f;  // the tied head's table (timing does not depend on it)

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Now on `clock`, in milliseconds from an arbitrary origin.
double NowMs(TimingClock clock) {
  if (clock == TimingClock::kThreadCpu) {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
  }
  return std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch()).count();
}

// The recompute modes that change what `kind` does (layers/README.md: only the blocks
// recompute, and the MLP block has no attention for selective recompute to drop).
std::vector<RecomputeMode> ModesOf(LayerKind kind) {
  switch (kind) {
    case LayerKind::kGptBlock:
    case LayerKind::kLlamaBlock:
      return {RecomputeMode::kNone, RecomputeMode::kSelective, RecomputeMode::kFull};
    case LayerKind::kMlpBlock:
      return {RecomputeMode::kNone, RecomputeMode::kFull};
    default:
      return {RecomputeMode::kNone};
  }
}

int FirstIndexOf(const ModelSpec& model, LayerKind kind) {
  std::vector<LayerKind> kinds = model.ExpandLayers();
  auto it = std::find(kinds.begin(), kinds.end(), kind);
  return it == kinds.end() ? 0 : static_cast<int>(it - kinds.begin());
}

// What one micro-batch through one layer took (this rank's times) and held.
struct PassResult {
  double fwd_ms = 0;
  double bwd_input_ms = 0;
  double bwd_weight_ms = 0;  // the first mode only; the others end with Discard
  int64_t output_bytes = 0;
  int64_t stashed_bytes = 0;
  int64_t workspace_bytes = 0;
};

// One repeat: a pass per mode, in ModesOf order.
struct RepeatResult {
  std::vector<PassResult> passes;
  double wall_ms = 0;

  // The forward's time: the median over the modes, which all run the same forward (they
  // differ in what it keeps), so a block's one repeat a turn is three forward samples.
  double FwdMs() const {
    std::vector<double> fwd;
    for (const PassResult& mode : passes) fwd.push_back(mode.fwd_ms);
    return Median(std::move(fwd));
  }
  // F + B + W: FwdMs and mode none's backward.
  double TotalMs() const {
    return FwdMs() + passes.front().bwd_input_ms + passes.front().bwd_weight_ms;
  }
};

class Bench {
 public:
  Bench(const ModelSpec& model, const LayerBenchSetup& setup);

  // Builds a layer per mode; fills the parameter, gradient and optimizer bytes of `entry`.
  Status Build(ProfileEntry* entry);
  // The inputs of the next repeats: a micro-batch of `micro_batch` sequences.
  void SetMicroBatch(int micro_batch);
  // One repeat, its times the job's slowest.
  StatusOr<RepeatResult> Repeat();
  // An untimed micro-batch through the first mode: the first call at a new size takes fresh
  // memory from the system and runs on cold caches, which a layer of seconds a repeat, whose
  // warm-up is its only sample, would otherwise count. A layer with recompute modes runs its
  // backward too: a block's backward allocates buffers its forward never does (the
  // attention-score and MLP gradients), and its first BackwardInput at a size ran 40% slower
  // than the next (gpt2-small, mb 1), which also hid the recompute figures (a cold mode none
  // made the others' extra time negative). Other layers' backward reuses the forward's buffer
  // sizes, and priming it would double the LM head's share of a profile.
  void Prime();
  const std::vector<RecomputeMode>& modes() const { return modes_; }
  int tp() const { return tp_comm_ == nullptr ? 1 : tp_comm_->Size(); }
  bool sequence_parallel() const { return setup_.sequence_parallel && tp() > 1; }
  int tp_rank() const { return tp_comm_ == nullptr ? 0 : tp_comm_->Rank(); }
  int cp() const { return cp_comm_ == nullptr ? 1 : cp_comm_->Size(); }
  int cp_rank() const { return cp_comm_ == nullptr ? 0 : cp_comm_->Rank(); }
  // The tokens of a sequence this rank holds before any tp split: S/cp.
  int64_t LocalSeq() const { return setup_.seq_len / cp(); }

 private:
  int64_t Current() const { return compute_.memory_stats().current_bytes; }
  LayerContext Context(RecomputeMode mode);
  Tensor MakeInput();
  Tensor MakeOutputGrad();
  int64_t OptimizerStateBytes(Layer& layer);
  Status Align();
  // Runs `call` on the setup's clock once the tp group has met; returns its milliseconds and
  // raises *workspace_bytes to its workspace.
  template <typename Call>
  StatusOr<double> Timed(const Call& call, int64_t* workspace_bytes);
  Status CheckStash(const Layer& layer, int64_t held_bytes) const;
  StatusOr<PassResult> Pass(Layer& layer, bool weight);
  Status TakeSlowest(RepeatResult& result);

  const ModelSpec& model_;
  LayerBenchSetup setup_;
  Compute& compute_;
  Comm* tp_comm_;   // null for a group of one
  Comm* cp_comm_;   // null for a group of one
  Comm* job_comm_;  // the ranks that measure together: the world, else the tp group; or null
  std::vector<RecomputeMode> modes_;
  int micro_batch_ = 1;
  std::vector<int64_t> activation_shape_;  // [B, S, H]
  std::vector<int32_t> host_ids_;          // [B, S]: the embedding's input, the head's targets
  std::vector<float> host_x_;              // [B, S, H]
  std::vector<float> host_dy_;             // [B, S, H], or the head's dloss
  Tensor targets_BS_;                      // LM head only
  Tensor tied_table_VlH_;                  // tied LM head only: the embedding's table
  Tensor tied_grad_VlH_;
  std::vector<std::unique_ptr<Layer>> layers_;  // one per mode; destroyed before the tensors
};

Bench::Bench(const ModelSpec& model, const LayerBenchSetup& setup)
    : model_(model),
      setup_(setup),
      compute_(*setup.compute),
      tp_comm_(setup.tp_comm != nullptr && setup.tp_comm->Size() > 1 ? setup.tp_comm : nullptr),
      cp_comm_(setup.cp_comm != nullptr && setup.cp_comm->Size() > 1 ? setup.cp_comm : nullptr),
      job_comm_(setup.world != nullptr && setup.world->Size() > 1 ? setup.world : tp_comm_),
      modes_(ModesOf(setup.kind)) {}

void Bench::SetMicroBatch(int micro_batch) {
  micro_batch_ = micro_batch;
  // The layer's input and output: this rank's S/cp tokens, S/(cp·t) under sequence parallelism.
  const int64_t seq = sequence_parallel() ? LocalSeq() / tp() : LocalSeq();
  activation_shape_ = {micro_batch, seq, model_.hidden};
  std::mt19937 rng(kInputSeed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(model_.vocab_size - 1));
  host_ids_.resize(static_cast<size_t>(micro_batch * LocalSeq()));
  for (int32_t& x : host_ids_) x = id(rng);
  host_x_.resize(static_cast<size_t>(NumElements(activation_shape_)));
  for (float& x : host_x_) x = value(rng);
  host_dy_.resize(host_x_.size());
  for (float& x : host_dy_) x = value(rng);
  if (setup_.kind == LayerKind::kLmHead) {
    host_dy_ = {1.0f};  // dloss of a lone loss
    targets_BS_ = compute_.Allocate({micro_batch, LocalSeq()}, ElementType::kInt32);
    compute_.CopyFromHost(std::span<const int32_t>(host_ids_), targets_BS_);
  }
}

LayerContext Bench::Context(RecomputeMode mode) {
  LayerContext c;
  c.compute = &compute_;
  c.tp_comm = tp_comm_;
  c.tp_rank = tp_rank();
  c.tp_size = tp();
  c.seed = kInitSeed;
  c.dtype = setup_.dtype;
  c.layer_index = FirstIndexOf(model_, setup_.kind);
  c.recompute = mode;
  c.sequence_parallel = sequence_parallel();
  c.cp_comm = cp_comm_;
  c.cp_rank = cp_rank();
  c.cp_size = cp();
  if (setup_.kind == LayerKind::kLmHead && model_.tied_embeddings) {
    c.tied_weight = &tied_table_VlH_;
    c.tied_weight_grad = &tied_grad_VlH_;
  }
  return c;
}

Status Bench::Build(ProfileEntry* entry) {
  if (setup_.kind == LayerKind::kLmHead && model_.tied_embeddings) {
    Shape full = {model_.vocab_size, model_.hidden};
    Shape mine = SliceShape(full, ShardSlice(full, SliceAxis::kRows, tp(), tp_rank()));
    tied_table_VlH_ = compute_.Allocate(mine, setup_.dtype);
    tied_grad_VlH_ = compute_.Allocate(mine);
    compute_.Fill(kTiedWeight, tied_table_VlH_);
  }
  for (RecomputeMode mode : modes_) {
    const int64_t before = Current();
    layers_.push_back(MakeLayer(model_, setup_.kind, Context(mode)));
    if (mode != RecomputeMode::kNone) continue;
    for (const Parameter& p : layers_.back()->Parameters()) {
      entry->param_bytes += p.value->bytes();
      entry->grad_bytes += p.grad->bytes();
    }
    if (entry->param_bytes + entry->grad_bytes != Current() - before) {
      return Internal(NameOf(LayerKindNames(), setup_.kind) + ": building the layer allocated " +
                      std::to_string(Current() - before) + " bytes but its parameters and " +
                      "gradients hold " + std::to_string(entry->param_bytes + entry->grad_bytes));
    }
    entry->optimizer_bytes = OptimizerStateBytes(*layers_.back());
  }
  return Status::Ok();
}

// AdamW's two moments per parameter, and the fp32 master weights of a value of another type,
// allocated as runtime/train/optimizer.cc does, and freed.
int64_t Bench::OptimizerStateBytes(Layer& layer) {
  const int64_t before = Current();
  std::vector<Tensor> state;
  for (const Parameter& p : layer.Parameters()) {
    const int copies = p.value->type() == ElementType::kFp32 ? 2 : 3;
    for (int i = 0; i < copies; ++i) state.push_back(compute_.Allocate({p.numel()}));
  }
  return Current() - before;
}

Tensor Bench::MakeInput() {
  if (setup_.kind == LayerKind::kEmbedding) {
    Tensor ids_BS = compute_.Allocate({micro_batch_, LocalSeq()}, ElementType::kInt32);
    compute_.CopyFromHost(std::span<const int32_t>(host_ids_), ids_BS);
    return ids_BS;
  }
  Tensor x_BSH = compute_.Allocate(activation_shape_, setup_.dtype);
  compute_.CopyFromHost(std::span<const float>(host_x_), x_BSH);
  return x_BSH;
}

Tensor Bench::MakeOutputGrad() {
  Tensor dy = setup_.kind == LayerKind::kLmHead
                  ? compute_.Allocate({1})
                  : compute_.Allocate(activation_shape_, setup_.dtype);
  compute_.CopyFromHost(std::span<const float>(host_dy_), dy);
  return dy;
}

Status Bench::Align() { return job_comm_ == nullptr ? Status::Ok() : job_comm_->Barrier(); }

// One call's workspace: the peak above what was alive at its start or its end.
int64_t Workspace(const MemoryStats& stats, int64_t start_bytes) {
  return stats.peak_bytes - std::max(start_bytes, stats.current_bytes);
}

template <typename Call>
StatusOr<double> Bench::Timed(const Call& call, int64_t* workspace_bytes) {
  compute_.Synchronize();  // a GPU's queue is empty when the clock starts
  TRIDENT_RETURN_IF_ERROR(Align());
  compute_.ResetPeak();
  const int64_t start = Current();
  const double t = NowMs(setup_.clock);
  call();
  compute_.Synchronize();
  const double ms = NowMs(setup_.clock) - t;
  *workspace_bytes = std::max(*workspace_bytes, Workspace(compute_.memory_stats(), start));
  return ms;
}

Status Bench::CheckStash(const Layer& layer, int64_t held_bytes) const {
  if (held_bytes == layer.StashBytes(kMicroBatch)) return Status::Ok();
  return Internal(NameOf(LayerKindNames(), setup_.kind) + " holds " + std::to_string(held_bytes) +
                  " bytes after Forward but reports a stash of " +
                  std::to_string(layer.StashBytes(kMicroBatch)));
}

StatusOr<PassResult> Bench::Pass(Layer& layer, bool weight) {
  PassResult r;
  Tensor x = MakeInput();
  const int64_t base = Current() - x.bytes();
  const Tensor* targets = targets_BS_.defined() ? &targets_BS_ : nullptr;
  Tensor y, dx;
  TRIDENT_ASSIGN_OR_RETURN(
      r.fwd_ms,
      Timed([&] { y = layer.Forward(kMicroBatch, std::move(x), targets); }, &r.workspace_bytes));
  const int64_t with_output = Current();
  y = Tensor();
  r.output_bytes = with_output - Current();
  r.stashed_bytes = Current() - base;
  TRIDENT_RETURN_IF_ERROR(CheckStash(layer, r.stashed_bytes));
  Tensor dy = MakeOutputGrad();
  TRIDENT_ASSIGN_OR_RETURN(
      r.bwd_input_ms,
      Timed([&] { dx = layer.BackwardInput(kMicroBatch, std::move(dy)); }, &r.workspace_bytes));
  dx = Tensor();
  if (weight) {
    TRIDENT_ASSIGN_OR_RETURN(r.bwd_weight_ms,
                             Timed([&] { layer.BackwardWeight(kMicroBatch); }, &r.workspace_bytes));
  } else {
    layer.Discard(kMicroBatch);
  }
  if (Current() == base) return r;
  return Internal(NameOf(LayerKindNames(), setup_.kind) + " still holds " +
                  std::to_string(Current() - base) + " bytes after its micro-batch ended");
}

void Bench::Prime() {
  Layer& layer = *layers_.front();
  const Tensor* targets = targets_BS_.defined() ? &targets_BS_ : nullptr;
  Tensor y = layer.Forward(kMicroBatch, MakeInput(), targets);
  y = Tensor();
  if (modes_.size() == 1) {
    layer.Discard(kMicroBatch);
    return;
  }
  Tensor dx = layer.BackwardInput(kMicroBatch, MakeOutputGrad());
  dx = Tensor();
  layer.BackwardWeight(kMicroBatch);
}

StatusOr<RepeatResult> Bench::Repeat() {
  RepeatResult result;
  Clock::time_point start = Clock::now();
  for (size_t i = 0; i < layers_.size(); ++i) {
    TRIDENT_ASSIGN_OR_RETURN(PassResult pass, Pass(*layers_[i], i == 0));
    result.passes.push_back(pass);
  }
  result.wall_ms = MsSince(start);
  TRIDENT_RETURN_IF_ERROR(TakeSlowest(result));
  return result;
}

// Replaces every time of `result` by the largest over the job.
Status Bench::TakeSlowest(RepeatResult& result) {
  if (job_comm_ == nullptr) return Status::Ok();
  std::vector<double*> times = {&result.wall_ms};
  for (PassResult& p : result.passes) {
    times.insert(times.end(), {&p.fwd_ms, &p.bwd_input_ms, &p.bwd_weight_ms});
  }
  std::vector<float> mine;
  for (double* t : times) mine.push_back(static_cast<float>(*t));
  std::vector<float> all(mine.size() * static_cast<size_t>(job_comm_->Size()));
  TRIDENT_RETURN_IF_ERROR(job_comm_->AllGather(mine, all));
  for (size_t i = 0; i < times.size(); ++i) {
    float slowest = 0;
    for (size_t r = 0; r < all.size(); r += mine.size()) slowest = std::max(slowest, all[r + i]);
    *times[i] = slowest;
  }
  return Status::Ok();
}

// The counted repeats of one measurement, turn by turn.
struct Samples {
  // Per turn: the median of its repeats' times (RepeatResult::FwdMs, mode none's backward).
  std::vector<double> fwd_ms, bwd_input_ms, bwd_weight_ms;
  // Per repeat, over every turn.
  std::vector<double> total_ms, wall_ms;
  std::vector<std::vector<double>> extra_ms;  // per mode: its BackwardInput minus mode none's
  std::vector<PassResult> last;               // memory figures (the same every repeat)
  std::vector<int64_t> workspace_bytes;       // per mode: the largest of any repeat

  // REQUIRES: `turn` not empty.
  void AddTurn(std::span<const RepeatResult> turn) {
    std::vector<double> fwd, bwd_input, bwd_weight;
    for (const RepeatResult& r : turn) {
      const PassResult& none = r.passes.front();
      fwd.push_back(r.FwdMs());
      bwd_input.push_back(none.bwd_input_ms);
      bwd_weight.push_back(none.bwd_weight_ms);
      total_ms.push_back(r.TotalMs());
      wall_ms.push_back(r.wall_ms);
      extra_ms.resize(r.passes.size());
      workspace_bytes.resize(r.passes.size());
      for (size_t i = 0; i < r.passes.size(); ++i) {
        extra_ms[i].push_back(r.passes[i].bwd_input_ms - none.bwd_input_ms);
        workspace_bytes[i] = std::max(workspace_bytes[i], r.passes[i].workspace_bytes);
      }
      last = r.passes;
    }
    fwd_ms.push_back(Median(fwd));
    bwd_input_ms.push_back(Median(bwd_input));
    bwd_weight_ms.push_back(Median(bwd_weight));
  }
};

constexpr int kMsDecimals = 6;  // times to the nanosecond: the file stays readable

void Summarize(const Samples& s, const std::vector<RecomputeMode>& modes, ProfileEntry* e) {
  auto quietest = [](const std::vector<double>& turns_ms) {
    return RoundedTo(*std::min_element(turns_ms.begin(), turns_ms.end()), kMsDecimals);
  };
  e->fwd_ms = quietest(s.fwd_ms);
  e->bwd_input_ms = quietest(s.bwd_input_ms);
  e->bwd_weight_ms = quietest(s.bwd_weight_ms);
  e->spread_pct = RoundedTo(SpreadPct(s.total_ms), 2);
  e->output_bytes = s.last.front().output_bytes;
  e->stashed_none_bytes = s.last.front().stashed_bytes;
  e->stashed_selective_bytes = e->stashed_none_bytes;
  e->stashed_full_bytes = e->stashed_none_bytes;
  e->workspace_none_bytes = s.workspace_bytes.front();
  e->workspace_selective_bytes = e->workspace_none_bytes;
  e->workspace_full_bytes = e->workspace_none_bytes;
  for (size_t i = 1; i < modes.size(); ++i) {
    double extra_ms = RoundedTo(std::max(0.0, Median(s.extra_ms[i])), kMsDecimals);
    if (modes[i] == RecomputeMode::kSelective) {
      e->recompute_selective_ms = extra_ms;
      e->stashed_selective_bytes = s.last[i].stashed_bytes;
      e->workspace_selective_bytes = s.workspace_bytes[i];
    } else {
      e->recompute_full_ms = extra_ms;
      e->stashed_full_bytes = s.last[i].stashed_bytes;
      e->workspace_full_bytes = s.workspace_bytes[i];
    }
  }
}

}  // namespace

struct LayerBench::Impl {
  Impl(const ModelSpec& model, const LayerBenchSetup& setup) : bench(model, setup) {}

  Bench bench;
  ProfileEntry built;              // the memory figures of building the layer
  std::map<int, Samples> by_size;  // by micro-batch size
};

LayerBench::LayerBench(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LayerBench::~LayerBench() = default;

StatusOr<std::unique_ptr<LayerBench>> LayerBench::Create(const ModelSpec& model,
                                                         const LayerBenchSetup& setup) {
  auto impl = std::make_unique<Impl>(model, setup);
  impl->built.tp = impl->bench.tp();
  impl->built.sequence_parallel = impl->bench.sequence_parallel();
  impl->built.cp = impl->bench.cp();
  TRIDENT_RETURN_IF_ERROR(impl->bench.Build(&impl->built));
  return std::unique_ptr<LayerBench>(new LayerBench(std::move(impl)));
}

Status LayerBench::Measure(int micro_batch, const RepeatPolicy& policy) {
  Bench& bench = impl_->bench;
  bench.SetMicroBatch(micro_batch);
  // A slow size's turn is one repeat, the warm-up, which is its sample: primed every turn (a
  // fast size's warm-up repeat, left out of the figures, warms it).
  auto known = impl_->by_size.find(micro_batch);
  if (known == impl_->by_size.end() || Median(known->second.wall_ms) > policy.budget_ms) {
    bench.Prime();
  }
  std::vector<RepeatResult> repeats;
  std::vector<double> totals_ms, walls_ms;
  double spent_ms = 0;
  while (policy.WantsMore(totals_ms, spent_ms, walls_ms.empty() ? 0 : Median(walls_ms))) {
    TRIDENT_ASSIGN_OR_RETURN(RepeatResult r, bench.Repeat());
    spent_ms += r.wall_ms;
    walls_ms.push_back(r.wall_ms);
    totals_ms.push_back(r.TotalMs());
    repeats.push_back(std::move(r));
  }
  const int taken = static_cast<int>(repeats.size());
  impl_->by_size[micro_batch].AddTurn(std::span(repeats).subspan(policy.Skipped(taken)));
  return Status::Ok();
}

LayerMeasurement LayerBench::Result(int micro_batch) const {
  const Samples& samples = impl_->by_size.at(micro_batch);
  LayerMeasurement m;
  m.entry = impl_->built;
  m.entry.micro_batch = micro_batch;
  Summarize(samples, impl_->bench.modes(), &m.entry);
  m.repeats = static_cast<int>(samples.total_ms.size());
  m.repeat_ms = Median(samples.wall_ms);
  const double quietest_ms = m.entry.fwd_ms + m.entry.bwd_input_ms + m.entry.bwd_weight_ms;
  if (quietest_ms > 0) m.load = std::max(1.0, Median(samples.total_ms) / quietest_ms);
  return m;
}

}  // namespace trident
