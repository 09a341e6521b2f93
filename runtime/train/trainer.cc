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
#include "runtime/train/float_message.h"
#include "runtime/train/grad_sync.h"
#include "runtime/train/interpreter.h"
#include "runtime/train/job_layout.h"
#include "runtime/train/stage_model.h"
#include "runtime/train/train_checkpoint.h"

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

// Every replica of the embedding's position and of the head's, with tp rank `tp`.
std::vector<int> TieGroup(const JobLayout& layout, int tp) {
  std::vector<int> ranks;
  for (int position : {layout.PositionOf(0), layout.PositionOf(layout.LastStage())}) {
    for (int d = 0; d < layout.ReplicasOf(position); ++d) {
      ranks.push_back(layout.rank_map().Rank({d, position, tp}));
    }
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

struct Trainer::State {
  Plan plan;
  TrainOptions options;
  std::optional<JobLayout> layout;
  int rank = 0;
  MeshCoords coords;
  Comm* world = nullptr;
  Compute* compute = nullptr;
  std::unique_ptr<Comm> tp_comm, dp_comm, tie_comm, ctl_comm;
  std::unique_ptr<Dataset> data;
  std::unique_ptr<StageModel> model;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<GradSync> grad_sync;
  std::unique_ptr<Interpreter> interpreter;
  int64_t start_step = 0;
  std::vector<TraceEvent> trace;
  double trace_cursor_ms = 0;

  Status Build();
  Status SplitComms();
  Status InitializeWeights();
  TrainState CheckpointState() const {
    return {&*layout,
            rank,
            compute,
            ctl_comm.get(),
            model.get(),
            optimizer.get(),
            options.comm_timeout};
  }
  StatusOr<StepResult> RunStep(int64_t step);
  Status ReduceStep(int64_t step, const StepRecord& record, StepSummary* summary);
  double LocalNormSquared();
  void ZeroGrads();
  Status Report(const StepRecord& record, StepResult* result);
  Status Trace(const StepRecord& record, StepResult* result);
  Status Checkpoint(int64_t step);
};

Status Trainer::State::SplitComms() {
  const RankMap& map = layout->rank_map();
  TRIDENT_ASSIGN_OR_RETURN(tp_comm, world->Split(map.TpGroup(rank)));
  std::vector<int> dp = map.DpGroup(rank);
  if (dp.size() > 1) {
    TRIDENT_ASSIGN_OR_RETURN(dp_comm, world->Split(dp));
  }
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
  TRIDENT_RETURN_IF_ERROR(layout->CheckNoDeadlock());
  TRIDENT_ASSIGN_OR_RETURN(data, OpenData(options, plan));
  TRIDENT_RETURN_IF_ERROR(SplitComms());
  model = std::make_unique<StageModel>(*layout, rank, compute, tp_comm.get(), options.seed);
  optimizer = std::make_unique<Optimizer>(compute, &model->parameters(), options.optimizer);
  grad_sync = std::make_unique<GradSync>(compute, model.get(), dp_comm.get(), tie_comm.get(),
                                         options.bucket_bytes);
  InterpreterOptions io;
  io.p2p_timeout = options.comm_timeout;
  interpreter =
      std::make_unique<Interpreter>(&*layout, rank, compute, world, model.get(), data.get(), io);
  return InitializeWeights();
}

// Weights come from the plan-independent initializer (in the layers) or the checkpoint; a
// split tie's copy then takes the table from the embedding's side (tie rank 0).
Status Trainer::State::InitializeWeights() {
  if (!options.load_path.empty()) {
    TRIDENT_ASSIGN_OR_RETURN(start_step, LoadTrainCheckpoint(CheckpointState(), options.load_path));
  }
  if (tie_comm == nullptr) return Status::Ok();
  for (ModelParameter& p : model->parameters()) {
    if (!p.tied_copy && !p.tied_source) continue;
    TRIDENT_RETURN_IF_ERROR(tie_comm->Broadcast(p.param.value->span<float>(), 0));
  }
  return Status::Ok();
}

double Trainer::State::LocalNormSquared() {
  double sum = 0;
  if (coords.dp != 0) return 0;
  for (ModelParameter& p : model->parameters()) {
    if (p.tied_copy || (p.tp_replicated && coords.tp != 0)) continue;
    for (float v : compute->CopyToHost(*p.param.grad)) sum += static_cast<double>(v) * v;
  }
  return sum;
}

void Trainer::State::ZeroGrads() {
  for (ModelParameter& p : model->parameters()) compute->Fill(0.0f, *p.param.grad);
}

// Loss, gradient norm and non-finite stages of the step, summed over the job.
Status Trainer::State::ReduceStep(int64_t step, const StepRecord& record, StepSummary* summary) {
  const int stages = layout->NumStages();
  std::vector<float> v(static_cast<size_t>(2 + stages), 0.0f);
  v[0] = static_cast<float>(record.loss_sum);
  v[1] = static_cast<float>(LocalNormSquared());
  if (record.first_nonfinite_stage >= 0) v[2 + record.first_nonfinite_stage] = 1;
  TRIDENT_RETURN_IF_ERROR(ctl_comm->AllReduceSum(std::span<float>(v)));
  summary->loss = v[0] / plan.num_micro_batches;
  summary->grad_norm = std::sqrt(static_cast<double>(v[1]));
  if (std::isfinite(summary->loss)) return Status::Ok();
  std::string where = "the loss itself";
  for (int s = 0; s < stages; ++s) {
    if (v[2 + s] == 0) continue;
    const PlanStage& st = plan.stages[s];
    where = "stage " + Str(s) + " (layers " + Str(st.first_layer) + "-" +
            Str(st.first_layer + st.num_layers - 1) + ")";
    break;
  }
  return FailedPrecondition("step " + Str(step) + ": the loss is not finite (" +
                            FormatFixed(summary->loss, 4) +
                            "); the first non-finite output "
                            "came from " +
                            where + "; hint: lower --lr or set --clip-grad");
}

StatusOr<StepResult> Trainer::State::RunStep(int64_t step) {
  const auto start = Clock::now();
  compute->ResetPeak();
  StepRecord record;
  auto gradients_done = [this](const Action& a) { return grad_sync->StageDone(a.stage); };
  TRIDENT_RETURN_IF_ERROR(interpreter->Run(step - 1, gradients_done, &record));
  const auto sync_start = Clock::now();
  TRIDENT_RETURN_IF_ERROR(grad_sync->Finish(options.comm_timeout));
  StepResult result;
  result.summary = {step, options.steps,
                    0,    options.optimizer.schedule.At(step),
                    0,    plan.global_batch * plan.seq_len};
  TRIDENT_RETURN_IF_ERROR(ReduceStep(step, record, &result.summary));
  const double sync_ms = MsSince(sync_start);
  const auto opt_start = Clock::now();
  optimizer->Step(step,
                  ClipCoefficient(result.summary.grad_norm, options.optimizer.clip_grad_norm));
  ZeroGrads();
  compute->Synchronize();
  RankStepStats mine{MsSince(start),
                     record.schedule_ms,
                     record.compute_ms,
                     record.wait_ms,
                     sync_ms,
                     MsSince(opt_start),
                     compute->memory_stats().peak_bytes};
  result.ranks.push_back(mine);
  TRIDENT_RETURN_IF_ERROR(Report(record, &result));
  TRIDENT_RETURN_IF_ERROR(Checkpoint(step));
  return result;
}

Status Trainer::State::Report(const StepRecord& record, StepResult* result) {
  std::vector<float> all(static_cast<size_t>(kStatsFloats * world->Size()));
  TRIDENT_RETURN_IF_ERROR(ctl_comm->AllGather(EncodeStats(result->ranks.front()), all));
  TRIDENT_RETURN_IF_ERROR(Trace(record, result));
  result->ranks.clear();
  if (rank != 0) return Status::Ok();
  for (int r = 0; r < world->Size(); ++r)
    result->ranks.push_back(DecodeStats(&all[kStatsFloats * r]));
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

Status Trainer::State::Trace(const StepRecord& record, StepResult* result) {
  const int64_t step = result->summary.step;
  const auto& steps = options.trace_steps;
  if (options.trace_path.empty() || std::find(steps.begin(), steps.end(), step) == steps.end()) {
    return Status::Ok();
  }
  FloatWriter w;
  for (const ActionRecord& a : record.actions) {
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
      e.step = step;
      TRIDENT_ASSIGN_OR_RETURN(int64_t kind, in.Int());
      TRIDENT_ASSIGN_OR_RETURN(int64_t stage, in.Int());
      TRIDENT_ASSIGN_OR_RETURN(int64_t mb, in.Int());
      e.action = {static_cast<ActionKind>(kind), static_cast<int>(stage), static_cast<int>(mb)};
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
  if (plan.schedule == ScheduleKind::kPipeDream) {
    return InvalidArgument("the runtime does not run pipedream plans yet");
  }
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
  for (int64_t step = state_->start_step + 1; step <= state_->options.steps; ++step) {
    TRIDENT_ASSIGN_OR_RETURN(StepResult result, state_->RunStep(step));
    steps.push_back(result.summary);
    ranks.push_back(result.ranks);
    if (on_step) on_step(result);
  }
  if (state_->rank == 0) {
    std::cout << RunSummary(steps, ranks, state_->plan.predicted.step_time_ms) << std::flush;
  }
  return Status::Ok();
}

}  // namespace trident
