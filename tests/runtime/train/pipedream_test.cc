// PipeDream's asynchronous training (runtime/train/pipedream.cc) against a one-process
// re-implementation of its update rule: the whole model in one process, micro-batches in order,
// every position keeping the history of its weight versions. Position p with r replicas and
// w = pp − p − 1 warm-up forwards runs the forward of its local micro-batch i on its weights
// after max(0, i − w) updates, the backward on the same weights, and update u on the mean of
// the gradients of local micro-batch u of its r replicas. The trainer, over in-process ranks,
// must give the same losses and the same final weights.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint.h"
#include "runtime/compute/cpu_compute.h"
#include "runtime/data/synthetic_dataset.h"
#include "runtime/train/job_layout.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/stage_model.h"
#include "runtime/train/weight_stash.h"
#include "tests/runtime/train/train_test_util.h"

namespace trident {
namespace {

using ::testing::HasSubstr;

constexpr int kSteps = 3;
constexpr double kLossTolerance = 1e-5;
constexpr double kParamTolerance = 1e-5;  // relative to the largest weight of the tensor

using Values = std::vector<std::vector<float>>;  // one per parameter of a position

class PipeDreamReference {
 public:
  PipeDreamReference(const Plan& plan, const TrainOptions& options) : plan_(plan) {
    PlanShape one;
    one.num_micro_batches = plan.num_micro_batches;
    one.micro_batch_size = plan.micro_batch_size;
    one.seq_len = plan.seq_len;
    layout_.emplace(*JobLayout::Create(MakePlan(plan.model, one)));
    model_ = std::make_unique<StageModel>(*layout_, 0, &compute_, nullptr, nullptr, options.seed);
    StatusOr<std::unique_ptr<SyntheticDataset>> data = SyntheticDataset::Create(
        {plan.seq_len, plan.global_batch, options.seed}, SyntheticOptions{plan.model.vocab_size});
    data_ = std::move(*data);
    const int pp = plan.mesh.pp;
    params_.resize(pp);
    for (const ModelParameter& p : model_->parameters()) params_[PositionOf(p.layer)].push_back(p);
    for (int pos = 0; pos < pp; ++pos) {
      optimizers_.push_back(
          std::make_unique<Optimizer>(&compute_, &params_[pos], options.optimizer));
      versions_.push_back({Read(pos)});
      sums_.push_back(Zeros(pos));
    }
    updates_.assign(pp, 0);
  }

  // Losses of steps 1..steps.
  std::vector<double> Train(int steps) {
    std::vector<double> losses;
    const int m = plan_.num_micro_batches;
    for (int k = 0; k < steps; ++k) {
      double sum = 0;
      for (int i = 0; i < m; ++i) sum += MicroBatch(k, i);
      losses.push_back(sum / m);
    }
    return losses;
  }

  // The newest weights of layer `layer`'s parameter `name`.
  std::vector<float> Weights(int layer, const std::string& name) const {
    const int pos = PositionOf(layer);
    for (size_t q = 0; q < params_[pos].size(); ++q) {
      const ModelParameter& p = params_[pos][q];
      if (p.layer == layer && p.param.name == name) return versions_[pos].back()[q];
    }
    ADD_FAILURE() << "no parameter " << name << " in layer " << layer;
    return {};
  }
  const std::vector<ModelParameter>& Parameters() const { return model_->parameters(); }

 private:
  int PositionOf(int layer) const {
    for (size_t s = 0; s < plan_.stages.size(); ++s) {
      const PlanStage& st = plan_.stages[s];
      if (layer >= st.first_layer && layer < st.first_layer + st.num_layers) return int(s);
    }
    ADD_FAILURE() << "layer " << layer << " is in no stage";
    return 0;
  }
  int Replicas(int pos) const { return plan_.stages[pos].replicas; }

  Values Read(int pos) {
    Values out;
    for (ModelParameter& p : params_[pos]) out.push_back(compute_.CopyToHost(*p.param.value));
    return out;
  }
  Values Zeros(int pos) {
    Values out;
    for (ModelParameter& p : params_[pos]) out.emplace_back(p.param.value->numel(), 0.0f);
    return out;
  }
  void Write(int pos, const Values& values, bool grads) {
    for (size_t q = 0; q < params_[pos].size(); ++q) {
      Parameter& p = params_[pos][q].param;
      compute_.CopyFromHost(std::span<const float>(values[q]), grads ? *p.grad : *p.value);
    }
  }

  // Micro-batch i of step k (0-based) through the whole model; returns its loss.
  double MicroBatch(int k, int i) {
    const int pp = plan_.mesh.pp;
    const int m = plan_.num_micro_batches;
    for (int pos = 0; pos < pp; ++pos) {
      const int r = Replicas(pos);
      const int local = k * (m / r) + i / r;
      Write(pos, versions_[pos][std::max(0, local - (pp - pos - 1))], false);
    }
    const double loss = ForwardBackward(k, i);
    for (int pos = 0; pos < pp; ++pos) {
      Values grads = Read(pos, /*grads=*/true);
      for (size_t q = 0; q < grads.size(); ++q) {
        for (size_t e = 0; e < grads[q].size(); ++e) sums_[pos][q][e] += grads[q][e];
      }
      for (ModelParameter& p : params_[pos]) compute_.Fill(0.0f, *p.param.grad);
      if (i % Replicas(pos) == Replicas(pos) - 1) Update(pos, k + 1);
    }
    return loss;
  }
  Values Read(int pos, bool grads) {
    if (!grads) return Read(pos);
    Values out;
    for (ModelParameter& p : params_[pos]) out.push_back(compute_.CopyToHost(*p.param.grad));
    return out;
  }

  double ForwardBackward(int k, int i) {
    const int64_t b = plan_.micro_batch_size;
    TokenBatch batch = data_->Batch(k, i * b, b);
    const std::vector<int64_t> shape = {b, plan_.seq_len};
    Tensor x = compute_.Allocate(shape, ElementType::kInt32);
    compute_.CopyFromHost(std::span<const int32_t>(batch.inputs_BS), x);
    Tensor targets = compute_.Allocate(shape, ElementType::kInt32);
    compute_.CopyFromHost(std::span<const int32_t>(batch.targets_BS), targets);
    auto& layers = model_->stages().front().layers;
    for (auto& layer : layers) x = layer->Forward(i, std::move(x), &targets);
    const double loss = compute_.CopyToHost(x).front();
    Tensor dy = compute_.Allocate({1});
    compute_.Fill(1.0f, dy);
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
      dy = (*it)->BackwardInput(i, std::move(dy));
      (*it)->BackwardWeight(i);
    }
    return loss;
  }

  void Update(int pos, int step) {
    Write(pos, versions_[pos].back(), false);
    Write(pos, sums_[pos], true);
    optimizers_[pos]->Step(step, ++updates_[pos], 1.0 / Replicas(pos));
    for (ModelParameter& p : params_[pos]) compute_.Fill(0.0f, *p.param.grad);
    versions_[pos].push_back(Read(pos));
    sums_[pos] = Zeros(pos);
  }

  Plan plan_;
  CpuCompute compute_;
  std::optional<JobLayout> layout_;
  std::unique_ptr<StageModel> model_;
  std::unique_ptr<Dataset> data_;
  std::vector<std::vector<ModelParameter>> params_;  // by position
  std::vector<std::unique_ptr<Optimizer>> optimizers_;
  std::vector<std::vector<Values>> versions_;  // by position: every version so far
  std::vector<Values> sums_;                   // by position: the open update's gradient sum
  std::vector<int64_t> updates_;
};

PlanShape PipeDreamShape(std::vector<int> replicas, int tp = 1) {
  PlanShape shape;
  shape.schedule = ScheduleKind::kPipeDream;
  shape.replicas = std::move(replicas);
  shape.tp = tp;
  shape.num_micro_batches = 4;
  return shape;
}

TrainOptions Options(OptimizerKind kind) {
  TrainOptions options = QuietOptions(kSteps);
  options.optimizer.kind = kind;
  options.optimizer.schedule = {kind == OptimizerKind::kSgd ? 0.05 : 3e-3, 0.0, 2, 0};
  options.optimizer.momentum = kind == OptimizerKind::kSgd ? 0.9 : 0.0;
  return options;
}

void ExpectLossesMatch(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_LE(RelativeError(got[k], want[k]), kLossTolerance)
        << "step " << k + 1 << ": loss " << got[k] << " vs the reference's " << want[k];
  }
}

// Trains `plan` in process and in the reference; compares losses, and (SGD) final weights
// through the checkpoint the run writes at its end.
void ExpectMatchesReference(const Plan& plan, OptimizerKind kind) {
  TempDir dir;
  TrainOptions options = Options(kind);
  options.save_dir = dir.path();
  TrainRun run = TrainInProcess(plan, options);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  PipeDreamReference reference(plan, options);
  ExpectLossesMatch(run.Losses(), reference.Train(kSteps));
  if (kind != OptimizerKind::kSgd) return;  // AdamW: see runtime/train/README.md
  StatusOr<CheckpointReader> saved =
      CheckpointReader::Open(dir.path() + "/step-" + std::to_string(kSteps) + ".safetensors");
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  for (const ModelParameter& p : reference.Parameters()) {
    StatusOr<HostTensor> got = saved->Read(ParamKey(p.layer, p.param.name), p.param.full_shape);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    std::vector<float> want = reference.Weights(p.layer, p.param.name);
    float scale = 1e-3f;
    for (float v : want) scale = std::max(scale, std::abs(v));
    for (size_t e = 0; e < want.size(); ++e) {
      ASSERT_NEAR(got->values[e], want[e], kParamTolerance * scale)
          << "layer " << p.layer << " " << p.param.name << "[" << e << "]";
    }
  }
}

TEST(PipeDreamTest, TwoStagesMatchTheReference) {
  ExpectMatchesReference(MakePlan(TinyGpt(2, false), PipeDreamShape({1, 1})), OptimizerKind::kSgd);
}

TEST(PipeDreamTest, TwoStagesMatchTheReferenceUnderAdamW) {
  ExpectMatchesReference(MakePlan(TinyGpt(2, false), PipeDreamShape({1, 1})),
                         OptimizerKind::kAdamW);
}

TEST(PipeDreamTest, FourStagesMatchTheReference) {
  ExpectMatchesReference(MakePlan(TinyGpt(2, false), PipeDreamShape({1, 1, 1, 1})),
                         OptimizerKind::kSgd);
}

TEST(PipeDreamTest, ReplicatedFirstStageMatchesTheReference) {
  ExpectMatchesReference(MakePlan(TinyGpt(2, false), PipeDreamShape({2, 1})), OptimizerKind::kSgd);
}

TEST(PipeDreamTest, DataParallelPipelineMatchesTheReference) {
  ExpectMatchesReference(MakePlan(TinyGpt(2, false), PipeDreamShape({2, 2})), OptimizerKind::kSgd);
}

TEST(PipeDreamTest, TensorParallelPipelineMatchesTheReference) {
  ExpectMatchesReference(MakePlan(TinyGpt(2, false), PipeDreamShape({1, 1}, 2)),
                         OptimizerKind::kSgd);
}

TEST(PipeDreamTest, OneStageIsPlainPerMicroBatchTraining) {
  ExpectMatchesReference(MakePlan(TinyGpt(2, true), PipeDreamShape({1})), OptimizerKind::kSgd);
}

// The reference is not the synchronous rule in disguise: stale weights change the losses.
TEST(PipeDreamTest, StaleWeightsDifferFromFlushedTraining) {
  Plan async = MakePlan(TinyGpt(2, false), PipeDreamShape({1, 1}));
  Plan flushed = async;
  flushed.schedule = ScheduleKind::k1F1B;
  TrainRun a = TrainInProcess(async, Options(OptimizerKind::kSgd));
  TrainRun f = TrainInProcess(flushed, Options(OptimizerKind::kSgd));
  ASSERT_TRUE(a.status.ok()) << a.status.ToString();
  ASSERT_TRUE(f.status.ok()) << f.status.ToString();
  EXPECT_GT(RelativeError(a.Losses().back(), f.Losses().back()), 1e-3);
}

TEST(PipeDreamTest, ResumeContinuesTheSameLosses) {
  const Plan plan = MakePlan(TinyGpt(2, false), PipeDreamShape({1, 1}));
  TempDir dir;
  TrainOptions options = Options(OptimizerKind::kAdamW);
  options.steps = 4;
  options.save_dir = dir.path();
  options.save_every = 2;
  TrainRun whole = TrainInProcess(plan, options);
  ASSERT_TRUE(whole.status.ok()) << whole.status.ToString();
  TrainOptions resumed = options;
  resumed.save_dir = "";
  resumed.save_every = 0;
  resumed.load_path = dir.path() + "/step-2.safetensors";
  TrainRun second = TrainInProcess(plan, resumed);
  ASSERT_TRUE(second.status.ok()) << second.status.ToString();
  const std::vector<double> losses = whole.Losses();
  ASSERT_EQ(losses.size(), 4u);
  std::vector<double> tail(losses.begin() + 2, losses.end());
  ExpectLossesMatch(second.Losses(), tail);
}

TEST(PipeDreamTest, RefusesClippingAndASplitTie) {
  TrainOptions clip = Options(OptimizerKind::kAdamW);
  clip.optimizer.clip_grad_norm = 1.0;
  TrainRun clipped = TrainInProcess(MakePlan(TinyGpt(2, false), PipeDreamShape({1, 1})), clip);
  EXPECT_THAT(clipped.status.message(), HasSubstr("--clip-grad"));
  TrainRun tied = TrainInProcess(MakePlan(TinyGpt(2, true), PipeDreamShape({1, 1})),
                                 Options(OptimizerKind::kAdamW));
  EXPECT_THAT(tied.status.message(), HasSubstr("tied_embeddings: false"));
}

TEST(WeightStashTest, KeepsOnlyTheVersionsInFlight) {
  CpuCompute compute;
  Tensor value = compute.Allocate({2});
  Tensor grad = compute.Allocate({2});
  std::vector<ModelParameter> params(1);
  params[0].param = {"w", &value, &grad, {2}, {}};
  WeightStash stash(&compute, &params);
  auto set = [&](float v) { compute.Fill(v, value); };
  auto now = [&] { return compute.CopyToHost(value).front(); };
  set(0.0f);
  stash.Forward(0);
  stash.Forward(1);  // both on version 0
  stash.BeginBackward(0);
  EXPECT_EQ(now(), 0.0f);
  stash.EndBackward(0);
  stash.BeforeUpdate();  // micro-batch 1 still needs version 0: copied
  set(1.0f);
  stash.AfterUpdate();
  EXPECT_EQ(stash.StashedVersions(), 1u);
  stash.Forward(2);  // version 1
  stash.BeginBackward(1);
  EXPECT_EQ(now(), 0.0f);  // the weights micro-batch 1's forward used
  stash.EndBackward(1);
  EXPECT_EQ(now(), 1.0f);                  // the current weights are back
  EXPECT_EQ(stash.StashedVersions(), 0u);  // nothing in flight needs version 0 any more
  stash.BeforeUpdate();
  set(2.0f);
  stash.AfterUpdate();
  stash.BeginBackward(2);
  EXPECT_EQ(now(), 1.0f);
  stash.EndBackward(2);
  EXPECT_EQ(now(), 2.0f);
  EXPECT_EQ(stash.InFlight(), 0);
  EXPECT_EQ(stash.version(), 2);
}

}  // namespace
}  // namespace trident
