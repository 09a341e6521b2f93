// The schedule interpreter: runs one rank's list of actions (JobLayout::ProgramOf) over its
// StageModel, moving activations and gradients between pipeline neighbours.
//
// For action F(s, j): the input is micro-batch j's token ids (stage 0) or the activation
// received from stage s-1; the stage's layers run forward; the output goes to stage s+1 (the
// LM head's output is the micro-batch loss). For B(s, j): the gradient comes from stage s+1
// (the last stage starts from InterpreterOptions::dloss: 1 / M, M micro-batches a step, makes
// the gradients of a step those of the mean loss over its global batch); the layers run their input
// gradient in reverse order and, unless the schedule splits backward, their weight gradient right
// after each; the input gradient goes to stage s-1. W(s, j) runs the weight gradients.
//
// Transfers. Sends are non-blocking; the sent tensor is kept until its send completes and
// freed then (completed sends are reaped after every action). The receive an action needs is
// posted, and launched by a Test (NCCL queues a transfer until then), no later than the action
// before it (one action of look-ahead), so the transfer overlaps that action's compute; the
// waits follow the list order, which JobLayout::CheckNoDeadlock proves cannot deadlock. Each
// transfer travels on its channel's link (pipeline_links.h: the world, or on NCCL a
// communicator of its own). Message tags encode the boundary, the direction and
// the micro-batch, so transfers of different micro-batches never match each other.
// Transfers between stages of the same rank (pp 1 with virtual stages) stay in memory.
//
// Memory: a stage's layers keep what backward needs (per their recompute mode); the
// interpreter keeps only in-flight transfers and each micro-batch's targets until the
// LM head's backward.
//
// Failures: a receive not matched within `p2p_timeout` returns DeadlineExceeded naming this
// rank, the action and the peer it waited for; the caller aborts the job.
// Thread-safety: one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "runtime/comm/comm.h"
#include "runtime/compute/compute.h"
#include "runtime/data/dataset.h"
#include "runtime/train/job_layout.h"
#include "runtime/train/pipeline_links.h"
#include "runtime/train/stage_model.h"

namespace trident {

// One executed action, times in ms since the start of the step, read from the compute
// backend's timing marks (Compute::RecordMark: a GPU's events, so no action waits for the
// device): start, the input's arrival (start + wait) and the completion of its ops (end).
struct ActionRecord {
  Action action;
  double start_ms = 0;
  double end_ms = 0;
  double wait_ms = 0;  // of it, blocked on the action's input
};

struct StepRecord {
  std::vector<ActionRecord> actions;
  double compute_ms = 0;   // layer work: Σ (end − start − wait) over the actions
  double wait_ms = 0;      // blocked on pipeline inputs and on sends at the end
  double schedule_ms = 0;  // from the step's start to the end of its last send
  // Per step of the list (index: micro-batch id / M): Σ micro-batch losses on this rank (last
  // stage, tp and cp rank 0: the head's loss is already the cp group's mean), else 0.
  std::vector<double> loss_sums;
  // The lowest stage of this rank whose forward output (or loss) was not finite, or -1.
  int first_nonfinite_stage = -1;
};

// What the caller runs around each action (either may be empty): `before` just before its
// layer work; `after` once it has run and its output is sent, told whether it completed its
// stage's gradients of its step (the stage's last B of the step, or W when backward is split).
// Around each layer's work (any may be empty; `layer` is the model's layer index):
// `layer_params_needed` before its forward or input gradient and `layer_params_done` after
// it; `layer_grads_needed` before its input or weight gradient, `layer_weights_done` after its
// weight gradient.
struct ActionHooks {
  std::function<Status(const Action&)> before;
  std::function<Status(const Action&, bool completes_stage)> after;
  std::function<Status(int stage, int layer)> layer_params_needed;
  std::function<void(int stage, int layer)> layer_params_done;
  std::function<void(int stage, int layer)> layer_grads_needed;
  std::function<Status(int stage, int layer)> layer_weights_done;
};

struct InterpreterOptions {
  std::chrono::milliseconds p2p_timeout{std::chrono::minutes(5)};
  // Check every forward output for NaN and infinity (tp rank 0 only).
  bool check_finite = true;
  // The gradient each backward starts from at the loss.
  float dloss = 1.0f;
};

class Interpreter {
 public:
  // Keeps pointers to everything; all must outlive it. `links` carry the transfers (ranks as
  // in the layout), `data` is the training data.
  Interpreter(const JobLayout* layout, int rank, Compute* compute, const PipelineLinks* links,
              StageModel* model, const Dataset* data, InterpreterOptions options);

  // Runs the rank's whole list once. Micro-batch id g of the list reads step
  // first_step + g / M, micro-batch g mod M of it. On error the step is abandoned (stashes
  // discarded, receives cancelled) and the status names the rank and the action. The actions'
  // times are filled in at the end (one Synchronize).
  Status Run(int64_t first_step, const ActionHooks& hooks, StepRecord* record);
  // Fills in the times of the actions `record` holds so far (a Synchronize first), and adds
  // them to its compute and wait sums: for a hook that reads an action's times during Run.
  // The marks read are then released, so a run of many steps holds few.
  void ResolveTimes(StepRecord* record);

 private:
  struct Transfer {
    Comm* comm = nullptr;  // its link's
    Request request;
    Tensor buffer;
  };
  using Clock = std::chrono::steady_clock;
  // An action's timing marks (Compute::RecordMark): its start, the start and end of its wait
  // for its input (both the start when it waits for none) and the completion of its ops.
  struct ActionMarks {
    int start = 0;
    int waiting = 0;
    int ready = 0;
    int end = 0;
  };

  Status RunAction(size_t index, int64_t first_step, const ActionHooks& hooks, StepRecord* record);
  Tensor ReadBatch(const Action& a, int64_t first_step);
  std::vector<int32_t> MyTokens(const std::vector<int32_t>& tokens_BS) const;
  void NoteNonFinite(const Action& a, const Tensor& x, StepRecord* record);
  Status Forward(size_t index, int64_t first_step, const ActionHooks& hooks, StepRecord* record,
                 ActionMarks* marks);
  Status Backward(size_t index, bool with_weights, const ActionHooks& hooks, ActionMarks* marks);
  Status Weights(const Action& a, const ActionHooks& hooks);
  // One layer's weight gradient, between the hooks.
  Status LayerWeights(int stage, int layer, Layer& l, int micro_batch, const ActionHooks& hooks);

  // The tag of `a`'s transfer.
  int TagOf(const Action& a, bool sending) const;
  Status PostReceive(size_t index);
  // The action's input; a transfer's wait is marked before and after (marks->waiting, ready).
  StatusOr<Tensor> TakeInput(size_t index, ActionMarks* marks);
  Status Send(const Action& a, Tensor tensor);
  Status ReapSends(bool wait_all, double* wait_ms);
  void Abandon();
  Tensor ActivationTensor();
  std::string Describe(const Action& a) const;

  const JobLayout* layout_;
  int rank_;
  MeshCoords coords_;
  Compute* compute_;
  const PipelineLinks* links_;
  StageModel* model_;
  const Dataset* data_;
  InterpreterOptions options_;
  const std::vector<Action>* program_;
  std::vector<char> completes_stage_;            // per list index: the stage's last gradient action
  std::map<size_t, Transfer> receives_;          // by list index
  std::map<std::pair<int, int>, Tensor> local_;  // same-rank transfers by (tag, micro-batch)
  std::vector<Transfer> sends_;
  std::map<int, Tensor> targets_;  // by micro-batch id, until the head's backward
  Clock::time_point step_start_;
  int step_mark_ = 0;  // the mark times are measured from, offset_ms_ into the step
  double offset_ms_ = 0;
  std::vector<ActionMarks> marks_;  // of the record's last actions, whose times are not read yet
};

}  // namespace trident
