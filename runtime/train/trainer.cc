#include "runtime/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/file_util.h"
#include "core/text_format.h"
#include "runtime/data/corpus.h"
#include "runtime/data/synthetic_dataset.h"
#include "runtime/layers/layer_ops.h"
#include "runtime/train/float_message.h"
#include "runtime/train/trainer_state.h"

namespace trident {
namespace {

using Clock = std::chrono::steady_clock;

std::string Str(int64_t value) { return std::to_string(value); }

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

StatusOr<std::unique_ptr<Dataset>> OpenData(const TrainOptions& options, const Plan& plan) {
  DataOptions data{plan.seq_len, plan.global_batch, options.seed};
  std::unique_ptr<Dataset> dataset;
  if (options.data == "synthetic") {
    TRIDENT_ASSIGN_OR_RETURN(
        dataset, SyntheticDataset::Create(data, SyntheticOptions{plan.model.vocab_size}));
  } else {
    TRIDENT_ASSIGN_OR_RETURN(dataset, OpenTextCorpus(options.data, data));
  }
  if (dataset->VocabSize() > plan.model.vocab_size) {
    return InvalidArgument(dataset->Description() + " has tokens up to " +
                           Str(dataset->VocabSize() - 1) + " but model " + plan.model.name +
                           " has vocab_size " + Str(plan.model.vocab_size));
  }
  return dataset;
}

// Every rank of the embedding's position and of the head's (each replica and cp rank) with tp
// rank `tp`.
std::vector<int> TieGroup(const JobLayout& layout, int tp) {
  std::vector<int> ranks;
  for (int position : {layout.PositionOf(0), layout.PositionOf(layout.LastStage())}) {
    const int first = layout.rank_map().Rank({.dp = 0, .pp = position, .tp = tp});
    std::vector<int> group = layout.rank_map().GradGroup(first);
    ranks.insert(ranks.end(), group.begin(), group.end());
  }
  return ranks;
}

}  // namespace

Status TrainOptions::Validate() const {
  if (steps < 1) return InvalidArgument("--steps must be >= 1, got " + Str(steps));
  if (bucket_bytes < 4) return InvalidArgument("--bucket-mb must be > 0");
  if (save_every < 0) return InvalidArgument("--save-every must be >= 0");
  if (save_every > 0 && save_dir.empty()) {
    return InvalidArgument("--save-every needs --save DIR (where checkpoints go)");
  }
  for (int64_t s : trace_steps) {
    if (s < 1 || s > steps) {
      return InvalidArgument("--trace-steps: step " + Str(s) + " is outside 1.." + Str(steps));
    }
  }
  return optimizer.Validate();
}

Status Trainer::State::SplitComms() {
  const RankMap& map = layout->rank_map();
  TRIDENT_ASSIGN_OR_RETURN(tp_comm, world->Split(map.TpGroup(rank)));
  TRIDENT_ASSIGN_OR_RETURN(cp_comm, world->Split(map.CpGroup(rank)));
  std::vector<int> grad = map.GradGroup(rank);
  if (grad.size() > 1) {
    TRIDENT_ASSIGN_OR_RETURN(grad_comm, world->Split(grad));
  }
  TRIDENT_RETURN_IF_ERROR(SplitShardComms(grad));
  if (plan.model.tied_embeddings &&
      layout->PositionOf(0) != layout->PositionOf(layout->LastStage())) {
    std::vector<int> tie = TieGroup(*layout, coords.tp);
    if (std::find(tie.begin(), tie.end(), rank) != tie.end()) {
      TRIDENT_ASSIGN_OR_RETURN(tie_comm, world->Split(tie));
    }
  }
  std::vector<int> all(static_cast<size_t>(world->Size()));
  for (int r = 0; r < world->Size(); ++r) all[r] = r;
  TRIDENT_ASSIGN_OR_RETURN(ctl_comm, world->Split(all));
  if (!options.backend.in_order_transfers) {
    links = PipelineLinks::ByTag(world);
    return Status::Ok();
  }
  TRIDENT_ASSIGN_OR_RETURN(
      links, PipelineLinks::PerChannel(*layout, rank, world, compute, options.comm_timeout));
  return Status::Ok();
}

// Without sharding: the rank alone, first when dp rank 0 and cp rank 0.
Status Trainer::State::SplitShardComms(const std::vector<int>& grad_group) {
  shard = DpShard{};
  shard.first_block = coords.dp == 0 && coords.cp == 0;
  if (plan.dp_sharding == DpSharding::kNone) return Status::Ok();
  const int shard_ranks = plan.ShardReplicas(coords.pp) * plan.mesh.cp;
  std::vector<int> group = ShardGroupOf(grad_group, shard_ranks, rank);
  std::vector<int> replicate = ReplicateGroupOf(grad_group, shard_ranks, rank);
  shard.n = shard_ranks;
  shard.shard_grads = plan.dp_sharding >= DpSharding::kGradients;
  shard.shard_params = plan.dp_sharding == DpSharding::kFull;
  shard.r = static_cast<int>(std::find(group.begin(), group.end(), rank) - group.begin());
  shard.first_block = group.front() == grad_group.front();
  if (shard.n > 1) {
    TRIDENT_ASSIGN_OR_RETURN(shard_comm, world->Split(group));
    shard.shard_comm = shard_comm.get();
  }
  if (replicate.size() > 1) {
    TRIDENT_ASSIGN_OR_RETURN(replicate_comm, world->Split(replicate));
    shard.replicate_comm = replicate_comm.get();
  }
  return Status::Ok();
}

Status Trainer::State::Build() {
  if (world->Size() != layout->NumRanks()) {
    return InvalidArgument("the plan needs " + Str(layout->NumRanks()) + " ranks (" +
                           plan.ToString() + ") but the job has " + Str(world->Size()) +
                           "; hint: mpirun -np " + Str(layout->NumRanks()));
  }
  rank = world->Rank();
  coords = layout->rank_map().Coords(rank);
  TRIDENT_ASSIGN_OR_RETURN(data, OpenData(options, plan));
  TRIDENT_RETURN_IF_ERROR(SplitComms());
  model = std::make_unique<StageModel>(*layout, rank, compute, tp_comm.get(), cp_comm.get(),
                                       options.seed);
  optimizer = std::make_unique<Optimizer>(compute, &model->parameters(), options.optimizer, shard);
  if (plan.schedule != ScheduleKind::kPipeDream) {  // PipeDream's segments make their own
    interpreter = std::make_unique<Interpreter>(&*layout, rank, compute, &*links, model.get(),
                                                data.get(), MakeInterpreterOptions());
  }
  TRIDENT_RETURN_IF_ERROR(InitializeWeights());
  // Once the weights are final: with parameter sharding it keeps this rank's chunks of them.
  grad_sync = std::make_unique<GradSync>(compute, model.get(), grad_comm.get(), tie_comm.get(),
                                         plan.mesh.tp > 1 ? tp_comm.get() : nullptr, shard,
                                         options.bucket_bytes);
  return Status::Ok();
}

InterpreterOptions Trainer::State::MakeInterpreterOptions() const {
  InterpreterOptions io;
  io.p2p_timeout = options.comm_timeout;
  // The mean over a step's global batch; PipeDream updates per micro-batch group, each on the
  // mean loss of its own micro-batches.
  io.dloss = plan.schedule == ScheduleKind::kPipeDream
                 ? 1.0f
                 : 1.0f / static_cast<float>(plan.num_micro_batches);
  return io;
}

// Weights come from the plan-independent initializer (in the layers) or the checkpoint; a
// split tie's copy then takes the table from the embedding's side (tie rank 0), and under mixed
// precision its master weights from the table it took (a checkpoint holds both sides' masters:
// the copy reads the table's).
Status Trainer::State::InitializeWeights() {
  if (!options.load_path.empty()) {
    TRIDENT_ASSIGN_OR_RETURN(start_step, LoadTrainCheckpoint(CheckpointState(), options.load_path));
  }
  if (tie_comm == nullptr) return Status::Ok();
  std::vector<ModelParameter>& params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].tied_copy && !params[i].tied_source) continue;
    TRIDENT_RETURN_IF_ERROR(tie_comm->Broadcast(WireOf(*params[i].param.value), 0));
    if (options.load_path.empty()) optimizer->ResetMaster(i);
  }
  return Status::Ok();
}

// The summed gradients are equal in every block of a grad group, so the first block's chunks
// (the whole gradients of dp rank 0, cp rank 0, without sharding) count.
double Trainer::State::LocalNormSquared() {
  double sum = 0;
  if (!shard.first_block) return 0;
  const std::vector<Tensor> chunks = grad_sync->Chunks().grads;
  const std::vector<ModelParameter>& params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const ModelParameter& p = params[i];
    if (p.tied_copy || (p.tp_replicated && coords.tp != 0) || !chunks[i].defined()) continue;
    for (float v : compute->CopyToHost(chunks[i])) sum += static_cast<double>(v) * v;
  }
  return sum;
}

void Trainer::State::ZeroGrads() { grad_sync->ZeroGrads(); }

std::vector<float> Trainer::State::StepValues(double loss_sum, double norm_squared,
                                              int first_nonfinite_stage) const {
  std::vector<float> v(static_cast<size_t>(2 + layout->NumStages()), 0.0f);
  v[0] = static_cast<float>(loss_sum);
  v[1] = static_cast<float>(norm_squared);
  if (first_nonfinite_stage >= 0) v[2 + first_nonfinite_stage] = 1;
  return v;
}

Status Trainer::State::SummarizeStep(const float* v, StepSummary* summary) const {
  summary->loss = v[0] / plan.num_micro_batches;
  summary->grad_norm = std::sqrt(static_cast<double>(v[1]));
  if (std::isfinite(summary->loss)) return Status::Ok();
  std::string where = "the loss itself";
  for (int s = 0; s < layout->NumStages(); ++s) {
    if (v[2 + s] == 0) continue;
    const PlanStage& st = plan.stages[s];
    where = "stage " + Str(s) + " (layers " + Str(st.first_layer) + "-" +
            Str(st.first_layer + st.num_layers - 1) + ")";
    break;
  }
  return FailedPrecondition("step " + Str(summary->step) + ": the loss is not finite (" +
                            FormatFixed(summary->loss, 4) +
                            "); the first non-finite output came from " + where +
                            "; hint: lower --lr or set --clip-grad");
}

StepSummary Trainer::State::NewSummary(int64_t step) const {
  StepSummary summary;
  summary.step = step;
  summary.steps = options.steps;
  summary.lr = options.optimizer.schedule.At(step);
  summary.tokens = plan.global_batch * plan.seq_len;
  return summary;
}

// Loss, gradient norm and non-finite stages of the step, summed over the job.
Status Trainer::State::ReduceStep(const StepRecord& record, StepSummary* summary) {
  std::vector<float> v = StepValues(record.loss_sums.empty() ? 0.0 : record.loss_sums.front(),
                                    LocalNormSquared(), record.first_nonfinite_stage);
  TRIDENT_RETURN_IF_ERROR(ctl_comm->AllReduceSum(std::span<float>(v)));
  return SummarizeStep(v.data(), summary);
}

StatusOr<StepResult> Trainer::State::RunStep(int64_t step) {
  const auto start = Clock::now();
  compute->ResetPeak();
  StepRecord record;
  ActionHooks hooks;
  hooks.after = [this](const Action& a, bool completes_stage) {
    return completes_stage ? grad_sync->StageDone(a.stage) : Status::Ok();
  };
  if (shard.shard_grads) {
    hooks.layer_grads_needed = [this](int stage, int layer) {
      grad_sync->LayerGradsNeeded(stage, layer);
    };
    hooks.layer_weights_done = [this](int stage, int layer) {
      return grad_sync->LayerWeightsDone(stage, layer, options.comm_timeout);
    };
  }
  if (shard.shard_params) {
    hooks.layer_params_needed = [this](int stage, int layer) {
      return grad_sync->LayerParamsNeeded(stage, layer);
    };
    hooks.layer_params_done = [this](int stage, int layer) {
      grad_sync->LayerParamsDone(stage, layer);
    };
  }
  TRIDENT_RETURN_IF_ERROR(interpreter->Run(step - 1, hooks, &record));
  const auto sync_start = Clock::now();
  TRIDENT_RETURN_IF_ERROR(grad_sync->Finish(options.comm_timeout));
  StepResult result;
  result.summary = NewSummary(step);
  TRIDENT_RETURN_IF_ERROR(ReduceStep(record, &result.summary));
  const double sync_ms = MsSince(sync_start);
  const auto opt_start = Clock::now();
  optimizer->Step(step, step,
                  ClipCoefficient(result.summary.grad_norm, options.optimizer.clip_grad_norm),
                  grad_sync->Chunks());
  TRIDENT_RETURN_IF_ERROR(grad_sync->GatherParameters());
  ZeroGrads();
  compute->Synchronize();
  RankStepStats mine{MsSince(start),
                     record.schedule_ms,
                     record.compute_ms,
                     record.wait_ms,
                     sync_ms,
                     MsSince(opt_start),
                     compute->memory_stats().peak_bytes};
  std::vector<float> all(static_cast<size_t>(kStatsFloats * world->Size()));
  TRIDENT_RETURN_IF_ERROR(ctl_comm->AllGather(EncodeStats(mine), all));
  TRIDENT_RETURN_IF_ERROR(Trace(record.actions, step, 1));
  TRIDENT_RETURN_IF_ERROR(Publish(all.data(), &result));
  TRIDENT_RETURN_IF_ERROR(Checkpoint(step));
  return result;
}

Status Trainer::State::Publish(const float* all_stats, StepResult* result) {
  if (rank != 0) return Status::Ok();
  for (int r = 0; r < world->Size(); ++r)
    result->ranks.push_back(DecodeStats(all_stats + kStatsFloats * r));
  if (!options.metrics_path.empty()) {
    std::ofstream out(options.metrics_path, std::ios::app);
    for (int r = 0; r < world->Size(); ++r) {
      out << MetricsLine(result->summary, r, layout->rank_map().Coords(r), result->ranks[r])
          << "\n";
    }
    if (!out) return IoError(options.metrics_path + ": cannot append the step's metrics");
  }
  if (!options.quiet) std::cout << StepLine(result->summary, result->ranks) << std::endl;
  return Status::Ok();
}

bool Trainer::State::Traced(int64_t step) const {
  const auto& steps = options.trace_steps;
  return !options.trace_path.empty() && std::find(steps.begin(), steps.end(), step) != steps.end();
}

// Every rank sends rank 0 its actions of the traced steps among `actions` (micro-batch j of
// the list belongs to step first_step + j / M, of `steps`); rank 0 appends them to the trace,
// after what it already holds, and rewrites the file.
Status Trainer::State::Trace(const std::vector<ActionRecord>& actions, int64_t first_step,
                             int64_t steps) {
  const int64_t m = plan.num_micro_batches;
  bool any = false;
  for (int64_t step = first_step; step < first_step + steps; ++step) any = any || Traced(step);
  if (!any) return Status::Ok();
  FloatWriter w;
  for (const ActionRecord& a : actions) {
    if (!Traced(first_step + a.action.micro_batch / m)) continue;
    w.Int(static_cast<int>(a.action.kind));
    w.Int(a.action.stage);
    w.Int(a.action.micro_batch);
    w.Value(static_cast<float>(a.start_ms));
    w.Value(static_cast<float>(a.end_ms));
  }
  if (rank != 0) return SendMessage(*ctl_comm, w.out(), 0, options.comm_timeout);
  double extent_ms = 0;
  for (int r = 0; r < world->Size(); ++r) {
    std::vector<float> message = w.out();
    if (r != 0) {
      TRIDENT_ASSIGN_OR_RETURN(message, ReceiveMessage(*ctl_comm, r, options.comm_timeout));
    }
    FloatReader in(message);
    while (!in.AtEnd()) {
      TraceEvent e;
      e.rank = r;
      TRIDENT_ASSIGN_OR_RETURN(int64_t kind, in.Int());
      TRIDENT_ASSIGN_OR_RETURN(int64_t stage, in.Int());
      TRIDENT_ASSIGN_OR_RETURN(int64_t mb, in.Int());
      e.step = first_step + mb / m;
      e.action = {static_cast<ActionKind>(kind), static_cast<int>(stage), static_cast<int>(mb % m)};
      TRIDENT_ASSIGN_OR_RETURN(float start, in.Value());
      TRIDENT_ASSIGN_OR_RETURN(float end, in.Value());
      e.start_ms = trace_cursor_ms + start;
      e.end_ms = trace_cursor_ms + end;
      extent_ms = std::max(extent_ms, static_cast<double>(end));
      trace.push_back(e);
    }
  }
  trace_cursor_ms += extent_ms;
  return WriteFileAtomic(options.trace_path, TraceToChromeJson(trace, layout->rank_map()));
}

Status Trainer::State::Checkpoint(int64_t step) {
  if (options.save_dir.empty()) return Status::Ok();
  const bool due =
      step == options.steps || (options.save_every > 0 && step % options.save_every == 0);
  if (!due) return Status::Ok();
  if (rank == 0) {
    std::error_code ec;
    std::filesystem::create_directories(options.save_dir, ec);
    if (ec) return IoError(options.save_dir + ": cannot create the folder: " + ec.message());
  }
  std::string path = options.save_dir + "/step-" + Str(step) + ".safetensors";
  TRIDENT_RETURN_IF_ERROR(SaveTrainCheckpoint(CheckpointState(), step, path));
  if (rank == 0 && !options.quiet) std::cout << "checkpoint: " << path << std::endl;
  return Status::Ok();
}

Trainer::Trainer(std::unique_ptr<State> state) : state_(std::move(state)) {}
Trainer::~Trainer() = default;

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const Plan& plan, const TrainOptions& options,
                                                   Comm* world, Compute* compute) {
  TRIDENT_RETURN_IF_ERROR(options.Validate());
  TRIDENT_RETURN_IF_ERROR(CheckPipeDream(plan, options));
  TRIDENT_RETURN_IF_ERROR(PlanContractStatus(plan, "the plan", options.backend));
  auto state = std::make_unique<State>();
  state->plan = plan;
  state->options = options;
  TRIDENT_ASSIGN_OR_RETURN(JobLayout layout, JobLayout::Create(plan));
  state->layout.emplace(std::move(layout));
  state->world = world;
  state->compute = compute;
  TRIDENT_RETURN_IF_ERROR(state->Build());
  if (state->start_step >= options.steps) {
    return InvalidArgument(options.load_path + " is at step " + Str(state->start_step) +
                           "; --steps " + Str(options.steps) + " leaves nothing to train");
  }
  if (state->rank == 0 && !options.metrics_path.empty() && options.load_path.empty()) {
    TRIDENT_RETURN_IF_ERROR(WriteFileAtomic(options.metrics_path, ""));
  }
  return std::unique_ptr<Trainer>(new Trainer(std::move(state)));
}

int64_t Trainer::start_step() const { return state_->start_step; }

Status Trainer::Run(const std::function<void(const StepResult&)>& on_step) {
  std::vector<StepSummary> steps;
  std::vector<std::vector<RankStepStats>> ranks;
  auto collect = [&](const StepResult& result) {
    steps.push_back(result.summary);
    ranks.push_back(result.ranks);
    if (on_step) on_step(result);
  };
  if (state_->plan.schedule == ScheduleKind::kPipeDream) {
    TRIDENT_RETURN_IF_ERROR(state_->RunPipeDream(collect));
  } else {
    for (int64_t step = state_->start_step + 1; step <= state_->options.steps; ++step) {
      TRIDENT_ASSIGN_OR_RETURN(StepResult result, state_->RunStep(step));
      collect(result);
    }
  }
  if (state_->rank != 0) return Status::Ok();
  const RunFigures figures = MeasureRun(state_->plan, steps, ranks);
  std::cout << RunSummary(figures) << std::flush;
  const std::string& path = state_->options.summary_path;
  return path.empty() ? Status::Ok() : WriteFileAtomic(path, RunSummaryJson(figures));
}

}  // namespace trident
