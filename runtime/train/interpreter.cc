#include "runtime/train/interpreter.h"

#include <cmath>
#include <set>

#include "core/check.h"
#include "models/layer_shapes.h"
#include "runtime/layers/layer_ops.h"

namespace trident {
namespace {

std::string Str(int64_t value) { return std::to_string(value); }

bool IsGradientEnd(const Action& a, bool split) {
  return a.kind == (split ? ActionKind::kWeight : ActionKind::kBackward);
}

// Per list index: whether the action completes its stage's gradients of its step.
std::vector<char> StageCompletions(const std::vector<Action>& program, bool split, int m) {
  std::vector<char> out(program.size(), 0);
  std::set<std::pair<int, int>> seen;  // (stage, step)
  for (size_t i = program.size(); i-- > 0;) {
    const Action& a = program[i];
    if (IsGradientEnd(a, split) && seen.insert({a.stage, a.micro_batch / m}).second) out[i] = 1;
  }
  return out;
}

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

bool AllFinite(Compute& compute, const Tensor& x) {
  for (float v : compute.CopyToHost(x)) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

}  // namespace

Interpreter::Interpreter(const JobLayout* layout, int rank, Compute* compute,
                         const PipelineLinks* links, StageModel* model, const Dataset* data,
                         InterpreterOptions options)
    : layout_(layout),
      rank_(rank),
      coords_(layout->rank_map().Coords(rank)),
      compute_(compute),
      links_(links),
      model_(model),
      data_(data),
      options_(options),
      program_(&layout->ProgramOf(rank)),
      completes_stage_(
          StageCompletions(*program_, layout->SplitBackward(), layout->plan().num_micro_batches)) {}

std::string Interpreter::Describe(const Action& a) const {
  return "rank " + Str(rank_) + ", action " + ActionToString(a);
}

// tag = (j mod K) · slots + 2 · boundary + direction, with slots = 2 · (stages − 1) and K the
// largest count that keeps tags <= kMaxTag. Two transfers share a tag only when their
// micro-batches differ by a multiple of K (>= 1000 for up to 16 stages), and those are never in
// flight together between one pair of ranks.
int Interpreter::TagOf(const Action& a, bool sending) const {
  const int slots = std::max(1, 2 * layout_->LastStage());
  const int k = std::max(1, (kMaxTag + 1) / slots);
  const bool forward = a.kind == ActionKind::kForward;
  int boundary = forward ? a.stage - (sending ? 0 : 1) : a.stage - (sending ? 1 : 0);
  return (a.micro_batch % k) * slots + 2 * boundary + (forward ? 0 : 1);
}

Tensor Interpreter::ActivationTensor() {
  const Plan& plan = layout_->plan();
  // Each cp rank sends and receives its S/cp tokens, under sequence parallelism each tp rank
  // its S/(cp·t).
  const int64_t local_seq = plan.seq_len / plan.mesh.cp;
  const int64_t seq = plan.sequence_parallel ? local_seq / plan.mesh.tp : local_seq;
  // Activations and their gradients travel in the plan's dtype, as the layers make them.
  return compute_->Allocate({plan.micro_batch_size, seq, plan.model.hidden},
                            ElementTypeOf(plan.dtype));
}

Status Interpreter::PostReceive(size_t index) {
  const Action& a = (*program_)[index];
  std::optional<PipelineTransfer> transfer = layout_->ReceiveOf(rank_, a);
  if (!transfer || receives_.count(index)) return Status::Ok();
  const PipelineLinks::Link link = links_->For(transfer->channel);
  Transfer t{link.comm, Request(), ActivationTensor()};
  StatusOr<Request> request = link.comm->Irecv(WireOf(t.buffer), link.peer, TagOf(a, false));
  if (!request.ok()) return Internal(Describe(a) + ": " + request.status().message());
  t.request = std::move(*request);
  StatusOr<bool> launched = link.comm->Test(t.request);
  if (!launched.ok()) return Internal(Describe(a) + ": " + launched.status().message());
  receives_.emplace(index, std::move(t));
  return Status::Ok();
}

StatusOr<Tensor> Interpreter::TakeInput(size_t index, ActionMarks* marks) {
  const Action& a = (*program_)[index];
  std::optional<PipelineTransfer> transfer = layout_->ReceiveOf(rank_, a);
  if (!transfer) {  // from a stage of this rank
    auto it = local_.find({TagOf(a, false), a.micro_batch});
    if (it == local_.end()) return Internal(Describe(a) + ": its input was never produced");
    Tensor x = std::move(it->second);
    local_.erase(it);
    return x;
  }
  TRIDENT_RETURN_IF_ERROR(PostReceive(index));
  Transfer& t = receives_.at(index);
  marks->waiting = compute_->RecordMark();
  Status waited = t.comm->Wait(t.request, options_.p2p_timeout);
  marks->ready = compute_->RecordMark();
  if (!waited.ok()) {
    return Status(waited.code(), Describe(a) + ": waiting for its input from rank " +
                                     Str(transfer->channel.from) + ": " + waited.message());
  }
  Tensor x = std::move(t.buffer);
  receives_.erase(index);
  return x;
}

Status Interpreter::Send(const Action& a, Tensor tensor) {
  const int tag = TagOf(a, true);
  std::optional<PipelineTransfer> transfer = layout_->SendOf(rank_, a);
  if (!transfer) {  // to a stage of this rank
    local_[{tag, a.micro_batch}] = std::move(tensor);
    return Status::Ok();
  }
  const PipelineLinks::Link link = links_->For(transfer->channel);
  StatusOr<Request> request = link.comm->Isend(WireOf(tensor), link.peer, tag);
  if (!request.ok()) return Internal(Describe(a) + ": " + request.status().message());
  sends_.push_back({link.comm, std::move(*request), std::move(tensor)});
  return Status::Ok();
}

Status Interpreter::ReapSends(bool wait_all, double* wait_ms) {
  auto start = Clock::now();
  for (auto it = sends_.begin(); it != sends_.end();) {
    bool done = false;
    if (wait_all) {
      TRIDENT_RETURN_IF_ERROR(it->comm->Wait(it->request, options_.p2p_timeout));
      done = true;
    } else {
      TRIDENT_ASSIGN_OR_RETURN(done, it->comm->Test(it->request));
    }
    it = done ? sends_.erase(it) : it + 1;
  }
  if (wait_all) *wait_ms += MsSince(start);
  return Status::Ok();
}

// This cp rank's tokens [B, S/cp] of a micro-batch's [B, S] (ContextPositions); all for cp 1.
std::vector<int32_t> Interpreter::MyTokens(const std::vector<int32_t>& tokens_BS) const {
  const Plan& plan = layout_->plan();
  if (plan.mesh.cp == 1) return tokens_BS;
  const std::vector<int64_t> positions = ContextPositions(plan.seq_len, plan.mesh.cp, coords_.cp);
  std::vector<int32_t> mine;
  mine.reserve(tokens_BS.size() / static_cast<size_t>(plan.mesh.cp));
  for (int64_t b = 0; b < plan.micro_batch_size; ++b) {
    for (int64_t p : positions)
      mine.push_back(tokens_BS[static_cast<size_t>(b * plan.seq_len + p)]);
  }
  return mine;
}

// Token ids (stage 0) and targets (last stage) of micro-batch `a.micro_batch`.
Tensor Interpreter::ReadBatch(const Action& a, int64_t first_step) {
  const Plan& plan = layout_->plan();
  const int64_t m = plan.num_micro_batches;
  TokenBatch batch =
      data_->Batch(first_step + a.micro_batch / m, (a.micro_batch % m) * plan.micro_batch_size,
                   plan.micro_batch_size);
  const std::vector<int64_t> shape = {plan.micro_batch_size, plan.seq_len / plan.mesh.cp};
  Tensor ids;
  if (a.stage == 0) {
    ids = compute_->Allocate(shape, ElementType::kInt32);
    compute_->CopyFromHost(std::span<const int32_t>(MyTokens(batch.inputs_BS)), ids);
  }
  if (a.stage == layout_->LastStage()) {
    Tensor targets = compute_->Allocate(shape, ElementType::kInt32);
    compute_->CopyFromHost(std::span<const int32_t>(MyTokens(batch.targets_BS)), targets);
    targets_[a.micro_batch] = std::move(targets);
  }
  return ids;
}

// tp rank 0 holds the whole output, except under sequence parallelism, where every tp rank
// holds its share of the tokens and checks it.
void Interpreter::NoteNonFinite(const Action& a, const Tensor& x, StepRecord* record) {
  const bool checks = coords_.tp == 0 || layout_->plan().sequence_parallel;
  if (!options_.check_finite || !checks || AllFinite(*compute_, x)) return;
  if (record->first_nonfinite_stage < 0 || a.stage < record->first_nonfinite_stage) {
    record->first_nonfinite_stage = a.stage;
  }
}

Status Interpreter::Forward(size_t index, int64_t first_step, const ActionHooks& hooks,
                            StepRecord* record, ActionMarks* marks) {
  const Action& a = (*program_)[index];
  Tensor x;
  if (a.stage > 0) {
    TRIDENT_ASSIGN_OR_RETURN(x, TakeInput(index, marks));
  }
  Tensor ids = ReadBatch(a, first_step);
  if (a.stage == 0) x = std::move(ids);
  const Tensor* targets = a.stage == layout_->LastStage() ? &targets_.at(a.micro_batch) : nullptr;
  StageLayers& stage = model_->Stage(a.stage);
  for (size_t i = 0; i < stage.layers.size(); ++i) {
    const int layer = stage.first_layer + static_cast<int>(i);
    if (hooks.layer_params_needed)
      TRIDENT_RETURN_IF_ERROR(hooks.layer_params_needed(a.stage, layer));
    x = stage.layers[i]->Forward(a.micro_batch, std::move(x), targets);
    if (hooks.layer_params_done) hooks.layer_params_done(a.stage, layer);
  }
  NoteNonFinite(a, x, record);
  if (a.stage < layout_->LastStage()) return Send(a, std::move(x));
  float loss = 0;
  compute_->CopyToHost(x, std::span<float>(&loss, 1));
  if (coords_.tp == 0 && coords_.cp == 0) {  // the loss is the whole group's mean
    const size_t step = static_cast<size_t>(a.micro_batch / layout_->plan().num_micro_batches);
    if (record->loss_sums.size() <= step) record->loss_sums.resize(step + 1, 0.0);
    record->loss_sums[step] += loss;
  }
  return Status::Ok();
}

Status Interpreter::Backward(size_t index, bool with_weights, const ActionHooks& hooks,
                             ActionMarks* marks) {
  const Action& a = (*program_)[index];
  Tensor dy;
  if (a.stage == layout_->LastStage()) {
    dy = compute_->Allocate({1});
    compute_->Fill(options_.dloss, dy);
  } else {
    TRIDENT_ASSIGN_OR_RETURN(dy, TakeInput(index, marks));
  }
  StageLayers& stage = model_->Stage(a.stage);
  for (int i = static_cast<int>(stage.layers.size()) - 1; i >= 0; --i) {
    const int layer = stage.first_layer + i;
    if (hooks.layer_params_needed)
      TRIDENT_RETURN_IF_ERROR(hooks.layer_params_needed(a.stage, layer));
    if (hooks.layer_grads_needed) hooks.layer_grads_needed(a.stage, layer);
    dy = stage.layers[i]->BackwardInput(a.micro_batch, std::move(dy));
    if (hooks.layer_params_done) hooks.layer_params_done(a.stage, layer);
    if (with_weights) {
      TRIDENT_RETURN_IF_ERROR(LayerWeights(a.stage, layer, *stage.layers[i], a.micro_batch, hooks));
    }
  }
  targets_.erase(a.micro_batch);
  if (a.stage > 0) return Send(a, std::move(dy));
  return Status::Ok();
}

Status Interpreter::Weights(const Action& a, const ActionHooks& hooks) {
  StageLayers& stage = model_->Stage(a.stage);
  for (size_t i = 0; i < stage.layers.size(); ++i) {
    const int layer = stage.first_layer + static_cast<int>(i);
    TRIDENT_RETURN_IF_ERROR(LayerWeights(a.stage, layer, *stage.layers[i], a.micro_batch, hooks));
  }
  return Status::Ok();
}

Status Interpreter::LayerWeights(int stage, int layer, Layer& l, int micro_batch,
                                 const ActionHooks& hooks) {
  if (hooks.layer_grads_needed) hooks.layer_grads_needed(stage, layer);
  l.BackwardWeight(micro_batch);
  return hooks.layer_weights_done ? hooks.layer_weights_done(stage, layer) : Status::Ok();
}

Status Interpreter::RunAction(size_t index, int64_t first_step, const ActionHooks& hooks,
                              StepRecord* record) {
  const Action& a = (*program_)[index];
  ActionMarks marks;
  marks.start = marks.waiting = marks.ready = compute_->RecordMark();
  // Receives are posted in list order (this action's, if not yet, before the next one's):
  // NCCL matches a channel's transfers in the order they are posted.
  TRIDENT_RETURN_IF_ERROR(PostReceive(index));
  if (index + 1 < program_->size()) TRIDENT_RETURN_IF_ERROR(PostReceive(index + 1));
  if (hooks.before) TRIDENT_RETURN_IF_ERROR(hooks.before(a));
  if (a.kind == ActionKind::kForward) {
    TRIDENT_RETURN_IF_ERROR(Forward(index, first_step, hooks, record, &marks));
  } else if (a.kind == ActionKind::kBackward) {
    TRIDENT_RETURN_IF_ERROR(Backward(index, !layout_->SplitBackward(), hooks, &marks));
  } else {
    TRIDENT_RETURN_IF_ERROR(Weights(a, hooks));
  }
  // A GPU backend returns once the action's ops are queued: the end mark completes with them.
  marks.end = compute_->RecordMark();
  record->actions.push_back({a, 0, 0, 0});
  marks_.push_back(marks);
  TRIDENT_RETURN_IF_ERROR(ReapSends(false, nullptr));
  if (hooks.after) return hooks.after(a, completes_stage_[index] != 0);
  return Status::Ok();
}

void Interpreter::ResolveTimes(StepRecord* record) {
  const int base = compute_->RecordMark();  // after every mark so far
  compute_->Synchronize();
  const size_t first = record->actions.size() - marks_.size();  // the unresolved actions
  for (size_t i = 0; i < marks_.size(); ++i) {
    const ActionMarks& m = marks_[i];
    ActionRecord& rec = record->actions[first + i];
    rec.start_ms = offset_ms_ + compute_->MarkElapsedMs(step_mark_, m.start);
    rec.wait_ms = compute_->MarkElapsedMs(m.waiting, m.ready);
    rec.end_ms = offset_ms_ + compute_->MarkElapsedMs(step_mark_, m.end);
    record->compute_ms += rec.end_ms - rec.start_ms - rec.wait_ms;
    record->wait_ms += rec.wait_ms;
  }
  // Every mark is read: start again from `base`, so a long run (PipeDream's) holds few marks.
  offset_ms_ += compute_->MarkElapsedMs(step_mark_, base);
  compute_->ClearMarks();
  marks_.clear();
  step_mark_ = compute_->RecordMark();
}

Status Interpreter::Run(int64_t first_step, const ActionHooks& hooks, StepRecord* record) {
  step_start_ = Clock::now();
  compute_->ClearMarks();
  marks_.clear();
  offset_ms_ = 0;
  step_mark_ = compute_->RecordMark();
  for (size_t i = 0; i < program_->size(); ++i) {
    Status status = RunAction(i, first_step, hooks, record);
    if (!status.ok()) {
      Abandon();
      return status;
    }
  }
  // The device's work first: the sends' wait below is then only the peers'.
  ResolveTimes(record);
  Status status = ReapSends(true, &record->wait_ms);
  record->schedule_ms = MsSince(step_start_);
  if (!status.ok()) return Status(status.code(), "rank " + Str(rank_) + ": " + status.message());
  return Status::Ok();
}

// Frees every stash and withdraws the receives. Sends stay pending (their buffers with them)
// until the interpreter is destroyed: the job is about to abort.
void Interpreter::Abandon() {
  for (const Action& a : *program_) {
    if (a.kind != ActionKind::kForward) continue;
    for (auto& layer : model_->Stage(a.stage).layers) layer->Discard(a.micro_batch);
  }
  for (auto& [index, t] : receives_) (void)t.comm->Cancel(t.request);
  receives_.clear();
  local_.clear();
  targets_.clear();
}

}  // namespace trident
