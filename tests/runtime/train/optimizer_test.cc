// The optimizer: the learning-rate schedule's worked example, the clipping coefficient, the
// options' checks (each naming its worker flag), and AdamW and SGD steps of Optimizer on a
// 2-D and a 1-D parameter against the update written out by hand in double precision.
#include "runtime/train/optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "runtime/compute/cpu_compute.h"

namespace trident {
namespace {

using ::testing::StartsWith;

TEST(LrScheduleTest, WorkedExampleOfTheHeader) {
  LrSchedule s{1e-3, 1e-4, 10, 110};
  EXPECT_NEAR(s.At(5), 5e-4, 1e-15);
  EXPECT_NEAR(s.At(10), 1e-3, 1e-15);
  EXPECT_NEAR(s.At(60), 5.5e-4, 1e-15);
  EXPECT_NEAR(s.At(110), 1e-4, 1e-15);
  EXPECT_NEAR(s.At(200), 1e-4, 1e-15);
  EXPECT_NEAR(s.At(1), 1e-4, 1e-15);  // warm-up starts at lr / warmup_steps
  // Between the marks the cosine falls monotonically.
  for (int64_t k = 11; k < 110; ++k) EXPECT_GT(s.At(k), s.At(k + 1)) << "step " << k;
}

TEST(LrScheduleTest, ConstantAfterWarmUpWithoutDecay) {
  LrSchedule s{2e-3, 0.0, 4, 0};
  EXPECT_NEAR(s.At(2), 1e-3, 1e-15);
  for (int64_t k : {4, 5, 100, 100000}) EXPECT_EQ(s.At(k), 2e-3) << "step " << k;
  LrSchedule flat{3e-4, 0.0, 0, 0};
  EXPECT_EQ(flat.At(1), 3e-4);
  EXPECT_EQ(flat.At(1000), 3e-4);
}

TEST(ClipCoefficientTest, ScalesOnlyNormsAboveTheMaximum) {
  EXPECT_DOUBLE_EQ(ClipCoefficient(10.0, 1.0), 1.0 / (10.0 + 1e-6));
  EXPECT_DOUBLE_EQ(ClipCoefficient(4.0, 2.0), 2.0 / (4.0 + 1e-6));
  EXPECT_EQ(ClipCoefficient(0.5, 1.0), 1.0);
  EXPECT_EQ(ClipCoefficient(0.0, 1.0), 1.0);
  EXPECT_EQ(ClipCoefficient(1e9, 0.0), 1.0);  // 0: clipping off
}

TEST(OptimizerKindTest, Names) {
  EXPECT_EQ(NameOf(OptimizerKindNames(), OptimizerKind::kAdamW), "adamw");
  EXPECT_EQ(NameOf(OptimizerKindNames(), OptimizerKind::kSgd), "sgd");
}

struct BadOption {
  std::string flag;
  std::function<void(OptimizerOptions&)> set;
};

TEST(OptimizerOptionsTest, DefaultsAreValid) {
  Status status = OptimizerOptions{}.Validate();
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(OptimizerOptionsTest, EachBadValueNamesItsFlag) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<BadOption> cases = {
      {"--lr", [](OptimizerOptions& o) { o.schedule.lr = 0; }},
      {"--lr", [](OptimizerOptions& o) { o.schedule.lr = -1e-3; }},
      {"--lr", [nan](OptimizerOptions& o) { o.schedule.lr = nan; }},
      {"--lr",
       [](OptimizerOptions& o) { o.schedule.lr = std::numeric_limits<double>::infinity(); }},
      {"--min-lr", [](OptimizerOptions& o) { o.schedule.min_lr = -1e-5; }},
      {"--min-lr", [](OptimizerOptions& o) { o.schedule.min_lr = 2 * o.schedule.lr; }},
      {"--warmup-steps", [](OptimizerOptions& o) { o.schedule.warmup_steps = -1; }},
      {"--decay-steps", [](OptimizerOptions& o) { o.schedule.decay_steps = -1; }},
      {"--beta1", [](OptimizerOptions& o) { o.beta1 = 1.0; }},
      {"--beta1", [](OptimizerOptions& o) { o.beta1 = -0.1; }},
      {"--beta2", [](OptimizerOptions& o) { o.beta2 = 1.5; }},
      {"--beta2", [nan](OptimizerOptions& o) { o.beta2 = nan; }},
      {"--eps", [](OptimizerOptions& o) { o.eps = 0; }},
      {"--weight-decay", [](OptimizerOptions& o) { o.weight_decay = -0.1; }},
      {"--momentum", [](OptimizerOptions& o) { o.momentum = 1.0; }},
      {"--momentum", [](OptimizerOptions& o) { o.momentum = -0.5; }},
      {"--clip-grad", [](OptimizerOptions& o) { o.clip_grad_norm = -1.0; }},
  };
  for (const BadOption& c : cases) {
    OptimizerOptions options;
    c.set(options);
    Status status = options.Validate();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.flag;
    EXPECT_THAT(status.message(), StartsWith(c.flag + " ")) << status.ToString();
  }
}

// A 2-D parameter w [2, 3] and a 1-D one b [3], with gradients set by the test.
class OptimizerStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w_ = compute_.Allocate({2, 3});
    dw_ = compute_.Allocate({2, 3});
    b_ = compute_.Allocate({3});
    db_ = compute_.Allocate({3});
    compute_.CopyFromHost(std::span<const float>(w0_), w_);
    compute_.CopyFromHost(std::span<const float>(b0_), b_);
    params_.push_back({0, 1, Parameter{"fc.weight", &w_, &dw_, {2, 3}, Slice{}}});
    params_.push_back({0, 1, Parameter{"fc.bias", &b_, &db_, {3}, Slice{}}});
  }
  void SetGrads(const std::vector<float>& dw, const std::vector<float>& db) {
    compute_.CopyFromHost(std::span<const float>(dw), dw_);
    compute_.CopyFromHost(std::span<const float>(db), db_);
  }
  std::vector<float> Host(const Tensor& t) {
    std::vector<float> v(static_cast<size_t>(t.numel()));
    compute_.CopyToHost(t, std::span<float>(v));
    return v;
  }
  static void ExpectNear(const std::vector<float>& got, const std::vector<double>& want,
                         const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-6) << what << "[" << i << "]";
  }

  const std::vector<float> w0_ = {1.0f, -2.0f, 0.5f, 3.0f, -0.25f, 0.0f};
  const std::vector<float> b0_ = {0.5f, -1.0f, 2.0f};
  CpuCompute compute_;  // declared before the tensors, so it outlives them
  Tensor w_, dw_, b_, db_;
  std::vector<ModelParameter> params_;
};

// One AdamW element over two steps, by hand (decay: the parameter's weight decay or 0).
struct AdamElement {
  double p, m = 0, v = 0;
  void Step(double g, int step, double lr, double decay) {
    const double b1 = 0.9, b2 = 0.95, eps = 1e-8;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const double m_hat = m / (1 - std::pow(b1, step));
    const double v_hat = v / (1 - std::pow(b2, step));
    p -= lr * (m_hat / (std::sqrt(v_hat) + eps) + decay * p);
  }
};

TEST_F(OptimizerStepTest, AdamWDecaysMatricesOnly) {
  OptimizerOptions options;
  options.schedule = {0.1, 0.0, 2, 0};  // lr 0.05 at step 1, 0.1 at step 2
  options.weight_decay = 0.5;
  Optimizer optimizer(&compute_, &params_, options);
  const std::vector<std::vector<float>> dw = {{0.2f, -0.4f, 0.0f, 1.0f, 0.5f, -0.1f},
                                              {-0.6f, 0.2f, 0.3f, 1.0f, -0.5f, 0.4f}};
  const std::vector<std::vector<float>> db = {{0.1f, 0.0f, -2.0f}, {0.3f, 0.5f, 1.0f}};
  const double scale = 0.5;  // Step scales the gradients first
  std::vector<AdamElement> w(w0_.begin(), w0_.end()), b(b0_.begin(), b0_.end());
  for (int step = 1; step <= 2; ++step) {
    SetGrads(dw[step - 1], db[step - 1]);
    optimizer.Step(step, step, scale);
    const double lr = options.schedule.At(step);
    for (size_t i = 0; i < w.size(); ++i) w[i].Step(scale * dw[step - 1][i], step, lr, 0.5);
    for (size_t i = 0; i < b.size(); ++i) b[i].Step(scale * db[step - 1][i], step, lr, 0.0);
    std::vector<double> want_w, want_b, want_m, want_dw;
    for (size_t i = 0; i < w.size(); ++i) {
      want_w.push_back(w[i].p);
      want_m.push_back(w[i].m);
      want_dw.push_back(scale * dw[step - 1][i]);
    }
    for (const AdamElement& e : b) want_b.push_back(e.p);
    const std::string at = "step " + std::to_string(step) + " ";
    ExpectNear(Host(w_), want_w, at + "w");
    ExpectNear(Host(b_), want_b, at + "b");
    ExpectNear(Host(optimizer.ExpAvg(0)), want_m, at + "exp_avg of w");
    ExpectNear(Host(dw_), want_dw, at + "scaled gradient of w");
  }
  EXPECT_TRUE(optimizer.ExpAvgSq(1).defined());
}

TEST_F(OptimizerStepTest, SgdWithMomentumOverTwoSteps) {
  OptimizerOptions options;
  options.kind = OptimizerKind::kSgd;
  options.schedule = {0.1, 0.0, 0, 0};
  options.momentum = 0.9;
  options.weight_decay = 0.1;
  Optimizer optimizer(&compute_, &params_, options);
  EXPECT_FALSE(optimizer.ExpAvgSq(0).defined());
  ASSERT_TRUE(optimizer.ExpAvg(0).defined());
  const std::vector<float> dw1 = {1.0f, 0.0f, -1.0f, 0.5f, 2.0f, -0.5f};
  const std::vector<float> dw2 = {0.5f, 1.0f, 1.0f, -1.0f, 0.0f, 0.25f};
  const std::vector<float> db1 = {1.0f, -1.0f, 0.5f};
  const std::vector<float> db2 = {-0.5f, 0.5f, 1.0f};
  std::vector<double> w(w0_.begin(), w0_.end()), b(b0_.begin(), b0_.end());
  std::vector<double> w_buf(w.size(), 0.0), b_buf(b.size(), 0.0);
  auto step_by_hand = [](std::vector<double>& p, std::vector<double>& buf,
                         const std::vector<float>& g, double decay) {
    for (size_t i = 0; i < p.size(); ++i) {
      buf[i] = 0.9 * buf[i] + g[i] + decay * p[i];
      p[i] -= 0.1 * buf[i];
    }
  };
  SetGrads(dw1, db1);
  optimizer.Step(1, 1, 1.0);
  step_by_hand(w, w_buf, dw1, 0.1);
  step_by_hand(b, b_buf, db1, 0.0);
  SetGrads(dw2, db2);
  optimizer.Step(2, 2, 1.0);
  step_by_hand(w, w_buf, dw2, 0.1);
  step_by_hand(b, b_buf, db2, 0.0);
  ExpectNear(Host(w_), w, "w");
  ExpectNear(Host(b_), b, "b");
  ExpectNear(Host(optimizer.ExpAvg(0)), w_buf, "momentum of w");
  ExpectNear(Host(optimizer.ExpAvg(1)), b_buf, "momentum of b");
}

TEST_F(OptimizerStepTest, PlainSgdKeepsNoState) {
  OptimizerOptions options;
  options.kind = OptimizerKind::kSgd;
  options.schedule = {0.5, 0.0, 0, 0};
  Optimizer optimizer(&compute_, &params_, options);
  EXPECT_FALSE(optimizer.ExpAvg(0).defined());
  EXPECT_FALSE(optimizer.ExpAvgSq(0).defined());
  SetGrads({1, 1, 1, 1, 1, 1}, {2, 2, 2});
  optimizer.Step(1, 1, 0.5);
  std::vector<double> want_w, want_b;
  for (float v : w0_) want_w.push_back(v - 0.5 * 0.5);
  for (float v : b0_) want_b.push_back(v - 0.5 * 1.0);
  ExpectNear(Host(w_), want_w, "w");
  ExpectNear(Host(b_), want_b, "b");
}

}  // namespace
}  // namespace trident
