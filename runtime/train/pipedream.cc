// PipeDream's asynchronous training (Narayanan et al., SOSP 2019, §3): the steps run back to
// back as one 1F1B stream (core's UnrollSteps) with no flush, and every position updates its
// weights after each backward, the forward of a later micro-batch running on the newest weights
// while the backward of an earlier one uses the weights its forward used (WeightStash).
//
// The update rule, which tests/runtime/train/pipedream_test.cc re-implements in one process:
// position p with r replicas and w = pp − p − 1 warm-up forwards counts its micro-batches
// locally (replica d runs global micro-batches d, d + r, ...; local index i); update u takes
// the mean over the r replicas of the gradients of their local micro-batch u (each the gradient
// of that micro-batch's mean loss), at the learning rate of u's training step, as AdamW step
// u + 1; the forward of local micro-batch i runs on the weights after max(0, i − w) updates.
//
// Per step (M micro-batches) every rank reports once it has run its last action of the step:
// the loss (mean of the step's micro-batch losses), the root mean square over the step's
// updates of the gradient norm, and its figures, summed over the job with a non-blocking
// all-reduce so that no rank waits for the report. A checkpoint drains the pipeline: the
// stream is cut after every step that saves, and the next part starts afresh from the saved
// weights, so a run resumed from a checkpoint continues exactly as the run that wrote it.
#include <algorithm>
#include <deque>
#include <memory>

#include "runtime/train/run_report.h"
#include "runtime/train/trainer_state.h"
#include "runtime/train/weight_stash.h"

namespace trident {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// What one rank adds up for one step of the stream.
struct StepTally {
  double compute_ms = 0;
  double wait_ms = 0;
  double sync_ms = 0;
  double optimizer_ms = 0;
  double norm_squared = 0;  // mean over the step's updates
};

// A step whose sums over the job are on their way.
struct PendingStep {
  int64_t step = 0;
  std::vector<float> values;  // StepValues, then kStatsFloats per rank
  Request request;
};

// Steps first..last of the run as one stream.
class Segment {
 public:
  // `layout` holds the segment's steps.
  Segment(Trainer::State* state, JobLayout layout, int64_t first, WeightStash* stash,
          int64_t* updates, const Trainer::State::StepCallback& on_step);
  Status Run();

 private:
  Status After(const Action& a);
  Status Update(const Action& a);
  Status CloseStep(int64_t k);
  Status Poll(bool wait);
  Status Finish(PendingStep& pending);
  int64_t StepOf(const Action& a) const { return a.micro_batch / s_.plan.num_micro_batches; }

  Trainer::State& s_;
  int64_t first_;
  JobLayout layout_;
  WeightStash* stash_;
  int64_t* updates_;
  const Trainer::State::StepCallback& on_step_;
  int replicas_;
  StepRecord record_;
  std::vector<StepTally> tally_;
  std::vector<size_t> last_index_;  // per step: the index of the rank's last action of it
  size_t index_ = 0;
  int64_t next_close_ = 0;
  Clock::time_point start_;
  double closed_ms_ = 0;
  std::deque<PendingStep> pending_;
};

Segment::Segment(Trainer::State* state, JobLayout layout, int64_t first, WeightStash* stash,
                 int64_t* updates, const Trainer::State::StepCallback& on_step)
    : s_(*state),
      first_(first),
      layout_(std::move(layout)),
      stash_(stash),
      updates_(updates),
      on_step_(on_step),
      replicas_(layout_.ReplicasOf(state->coords.pp)),
      tally_(static_cast<size_t>(layout_.Steps())),
      last_index_(tally_.size(), 0) {
  const std::vector<Action>& program = layout_.ProgramOf(s_.rank);
  for (size_t i = 0; i < program.size(); ++i) last_index_[StepOf(program[i])] = i;
}

Status Segment::Run() {
  Interpreter interpreter(&layout_, s_.rank, s_.compute, &*s_.links, s_.model.get(), s_.data.get(),
                          s_.MakeInterpreterOptions());
  ActionHooks hooks;
  hooks.before = [this](const Action& a) {
    if (a.kind == ActionKind::kForward) stash_->Forward(a.micro_batch);
    if (a.kind == ActionKind::kBackward) stash_->BeginBackward(a.micro_batch);
    return Status::Ok();
  };
  hooks.after = [this, &interpreter](const Action& a, bool) {
    interpreter.ResolveTimes(&record_);  // each step's tally closes during the run
    return After(a);
  };
  s_.compute->ResetPeak();
  start_ = Clock::now();
  TRIDENT_RETURN_IF_ERROR(interpreter.Run(first_ - 1, hooks, &record_));
  TRIDENT_RETURN_IF_ERROR(Poll(/*wait=*/true));
  return s_.Trace(record_.actions, first_, layout_.Steps());
}

Status Segment::After(const Action& a) {
  const ActionRecord& rec = record_.actions.back();
  StepTally& t = tally_[StepOf(a)];
  t.compute_ms += rec.end_ms - rec.start_ms - rec.wait_ms;
  t.wait_ms += rec.wait_ms;
  if (a.kind == ActionKind::kBackward) {
    stash_->EndBackward(a.micro_batch);
    TRIDENT_RETURN_IF_ERROR(Update(a));
  }
  while (next_close_ < static_cast<int64_t>(last_index_.size()) &&
         last_index_[next_close_] == index_) {
    TRIDENT_RETURN_IF_ERROR(CloseStep(next_close_++));
  }
  ++index_;
  return Poll(/*wait=*/false);
}

// Sums the micro-batch's gradients over the position's replicas (and, under sequence
// parallelism, the norms' over the tp group, with or without replicas) and takes the update.
Status Segment::Update(const Action& a) {
  StepTally& t = tally_[StepOf(a)];
  const auto sync_start = Clock::now();
  TRIDENT_RETURN_IF_ERROR(s_.grad_sync->StageDone(a.stage));
  TRIDENT_RETURN_IF_ERROR(s_.grad_sync->Finish(s_.options.comm_timeout));
  t.sync_ms += MsSince(sync_start);
  const auto opt_start = Clock::now();
  const double scale = 1.0 / replicas_;
  const double updates_per_step = static_cast<double>(s_.plan.num_micro_batches) / replicas_;
  t.norm_squared += s_.LocalNormSquared() * scale * scale / updates_per_step;
  stash_->BeforeUpdate();
  s_.optimizer->Step(first_ + StepOf(a), ++*updates_, scale);
  stash_->AfterUpdate();
  s_.ZeroGrads();
  t.optimizer_ms += MsSince(opt_start);
  return Status::Ok();
}

// The rank has run its last action of step k: its figures start their way to every rank.
Status Segment::CloseStep(int64_t k) {
  const StepTally& t = tally_[k];
  const double now_ms = MsSince(start_);
  const double step_ms = now_ms - closed_ms_;
  closed_ms_ = now_ms;
  RankStepStats mine{
      step_ms,        step_ms - t.sync_ms - t.optimizer_ms, t.compute_ms, t.wait_ms, t.sync_ms,
      t.optimizer_ms, s_.compute->memory_stats().peak_bytes};
  s_.compute->ResetPeak();
  const size_t k_index = static_cast<size_t>(k);
  const double loss = k_index < record_.loss_sums.size() ? record_.loss_sums[k_index] : 0.0;
  PendingStep& p = pending_.emplace_back();
  p.step = first_ + k;
  p.values = s_.StepValues(loss, t.norm_squared, record_.first_nonfinite_stage);
  const size_t head = p.values.size();
  p.values.resize(head + static_cast<size_t>(kStatsFloats * s_.world->Size()), 0.0f);
  std::vector<float> stats = EncodeStats(mine);
  std::copy(stats.begin(), stats.end(), p.values.begin() + head + kStatsFloats * s_.rank);
  TRIDENT_ASSIGN_OR_RETURN(p.request, s_.ctl_comm->StartAllReduceSum(std::span<float>(p.values)));
  return Status::Ok();
}

Status Segment::Poll(bool wait) {
  while (!pending_.empty()) {
    PendingStep& p = pending_.front();
    if (wait) {
      TRIDENT_RETURN_IF_ERROR(s_.ctl_comm->Wait(p.request, s_.options.comm_timeout));
    } else {
      TRIDENT_ASSIGN_OR_RETURN(bool done, s_.ctl_comm->Test(p.request));
      if (!done) return Status::Ok();
    }
    TRIDENT_RETURN_IF_ERROR(Finish(p));
    pending_.pop_front();
  }
  return Status::Ok();
}

Status Segment::Finish(PendingStep& pending) {
  StepResult result;
  result.summary = s_.NewSummary(pending.step);
  TRIDENT_RETURN_IF_ERROR(s_.SummarizeStep(pending.values.data(), &result.summary));
  const size_t head = pending.values.size() - kStatsFloats * s_.world->Size();
  TRIDENT_RETURN_IF_ERROR(s_.Publish(pending.values.data() + head, &result));
  TRIDENT_RETURN_IF_ERROR(s_.Checkpoint(pending.step));
  if (on_step_) on_step_(result);
  return Status::Ok();
}

}  // namespace

Status CheckPipeDream(const Plan& plan, const TrainOptions& options) {
  if (plan.schedule != ScheduleKind::kPipeDream) return Status::Ok();
  const std::string flushing = "plan with a flushing schedule (e.g. trident plan --schedule 1f1b)";
  if (options.optimizer.clip_grad_norm > 0) {
    return InvalidArgument(
        "--clip-grad: a pipedream plan updates each stage after every micro-batch on its own "
        "clock, so there is no global gradient norm to clip by; hint: drop --clip-grad or " +
        flushing);
  }
  if (plan.model.tied_embeddings && plan.mesh.pp > 1) {
    return InvalidArgument("model " + plan.model.name +
                           " ties its embedding and LM head, which this pipedream plan puts on "
                           "pipeline positions 0 and " +
                           std::to_string(plan.mesh.pp - 1) +
                           "; they update on their own clocks, so the two copies of the table "
                           "would drift apart; hint: set tied_embeddings: false in the model "
                           "file, or " +
                           flushing);
  }
  return Status::Ok();
}

Status Trainer::State::RunPipeDream(const StepCallback& on_step) {
  WeightStash stash(compute, &model->parameters());
  const int replicas = layout->ReplicasOf(coords.pp);
  int64_t updates = start_step * (plan.num_micro_batches / replicas);
  for (int64_t first = start_step + 1; first <= options.steps;) {
    int64_t last = options.steps;
    if (options.save_every > 0 && !options.save_dir.empty()) {
      last = std::min(last, ((first - 1) / options.save_every + 1) * options.save_every);
    }
    TRIDENT_ASSIGN_OR_RETURN(JobLayout steps,
                             JobLayout::Create(plan, static_cast<int>(last - first + 1)));
    TRIDENT_RETURN_IF_ERROR(steps.CheckNoDeadlock());
    TRIDENT_RETURN_IF_ERROR(ToStatus(CheckLayoutOnBackend(steps, options.backend)));
    Segment segment(this, std::move(steps), first, &stash, &updates, on_step);
    TRIDENT_RETURN_IF_ERROR(segment.Run());
    first = last + 1;
  }
  return Status::Ok();
}

}  // namespace trident
