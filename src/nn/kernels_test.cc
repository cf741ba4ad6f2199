// Gradient checks: every activation and loss against central finite differences in double.
#include "nn/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nn/executor.h"
#include "nn/plan.h"
#include "nn/rng.h"

namespace acan::nn {
namespace {

// Loss of a whole micro-batch task as a function of one parameter, through the executor.
struct Net {
  JobConfig job;
  std::vector<std::vector<float>> params;  // w0, b0, w1, b1, ...
  std::vector<float> x, t;
  int64_t rows = 3;
  TaskSpec task;

  Net(Activation act, LossKind loss) {
    job.model.layers = {4, 5, 3};
    job.model.activation = act;
    job.model.loss = loss;
    job.train.batch = rows;
    Plan plan = *Plan::Create(job, 0);
    task = plan.StepTasks(0, rows)[0];
    Rng rng(7);
    for (int l = 0; l < 2; ++l) {
      const int64_t in = job.model.layers[l], out = job.model.layers[l + 1];
      params.emplace_back(in * out);
      for (float& v : params.back()) v = rng.Uniform(-1, 1);
      params.emplace_back(out);
      for (float& v : params.back()) v = rng.Uniform(-0.5, 0.5);
    }
    x.resize(rows * 4);
    for (float& v : x) v = rng.Uniform(-1, 1);
    if (loss == LossKind::kMse) {
      t.resize(rows * 3);
      for (float& v : t) v = rng.Uniform(-1, 1);
    } else {
      t = {0, 2, 1};
    }
  }

  std::vector<std::vector<float>> Run() {
    std::vector<std::span<const float>> in = {x, t};
    for (auto& p : params) in.emplace_back(p);
    std::vector<std::vector<float>> out;
    Status s = ExecuteTask(task, in, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }
};

class GradCheck : public testing::TestWithParam<std::tuple<Activation, LossKind>> {};

TEST_P(GradCheck, MatchesFiniteDifferences) {
  auto [act, loss] = GetParam();
  Net net(act, loss);
  std::vector<std::vector<float>> out = net.Run();
  // outputs: met, gw0, gb0, gw1, gb1 -- in the same order as params.
  const float h = act == Activation::kRelu ? 1e-3f : 1e-2f;
  const double center = out[0][0];
  int checked = 0, kinks = 0;
  for (size_t p = 0; p < net.params.size(); ++p) {
    for (size_t i = 0; i < net.params[p].size(); ++i) {
      const float keep = net.params[p][i];
      net.params[p][i] = keep + h;
      const double up = net.Run()[0][0];
      net.params[p][i] = keep - h;
      const double down = net.Run()[0][0];
      net.params[p][i] = keep;
      const double numeric = (up - down) / (2 * h);
      const double analytic = out[1 + p][i];
      // relu's kink can sit inside [w-h, w+h]: the one-sided slopes then disagree; skip those.
      const double fwd = (up - center) / h, bwd = (center - down) / h;
      if (act == Activation::kRelu && std::abs(fwd - bwd) > 0.05 * std::max(1.0, std::abs(fwd))) {
        ++kinks;
        ++checked;
        continue;
      }
      const double tol = 2e-3;
      EXPECT_NEAR(analytic, numeric, tol * std::max(1.0, std::abs(numeric)))
          << "param " << p << " index " << i;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4 * 5 + 5 + 5 * 3 + 3);
  EXPECT_LE(kinks, checked / 5);
}

INSTANTIATE_TEST_SUITE_P(
    AllActivationsAndLosses, GradCheck,
    testing::Combine(testing::Values(Activation::kRelu, Activation::kTanh, Activation::kSigmoid,
                                     Activation::kIdentity),
                     testing::Values(LossKind::kMse, LossKind::kSoftmaxCrossEntropy)),
    [](const auto& info) {
      return std::string(ToString(std::get<0>(info.param))) + "_" +
             std::string(ToString(std::get<1>(info.param)));
    });

TEST(KernelsTest, LossDefinitions) {
  // mse = (1/B) sum 1/2 (y - t)^2
  const float z[] = {1, 2, 3, 4};
  const float t[] = {0, 2, 1, 4};
  float dz[4];
  Result<LossValue> v = ComputeLoss(LossKind::kMse, z, 2, 2, t, 0.5, dz);
  ASSERT_TRUE(v.ok());
  EXPECT_NEAR(v->loss, 0.5 * (0.5 * 1 + 0.5 * 4), 1e-12);
  EXPECT_FLOAT_EQ(dz[0], 0.5f);
  EXPECT_FLOAT_EQ(dz[2], 1.0f);
  // softmax CE of equal logits = log(classes)
  const float zc[] = {0, 0, 0, 5, 1, 1};
  const float labels[] = {1, 0};
  v = ComputeLoss(LossKind::kSoftmaxCrossEntropy, zc, 2, 3, labels, 1.0, nullptr);
  ASSERT_TRUE(v.ok());
  const double second = -std::log(std::exp(5.0) / (std::exp(5.0) + 2 * std::exp(1.0)));
  EXPECT_NEAR(v->loss, std::log(3.0) + second, 1e-6);
  EXPECT_EQ(v->correct, 1);  // row 1 predicts 0 == label; row 0's argmax is 0 != 1
  const float bad[] = {3, 0};
  v = ComputeLoss(LossKind::kSoftmaxCrossEntropy, zc, 2, 3, bad, 1.0, nullptr);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("row 0"), std::string::npos);
}

TEST(KernelsTest, SgdAndMomentum) {
  const float w[] = {1, 2}, g[] = {0.5, -1}, v[] = {1, 1};
  float w2[2], v2[2];
  SgdUpdate(w, g, nullptr, 0.1f, 0, 2, w2, nullptr);
  EXPECT_FLOAT_EQ(w2[0], 0.95f);
  EXPECT_FLOAT_EQ(w2[1], 2.1f);
  SgdUpdate(w, g, v, 0.1f, 0.9f, 2, w2, v2);
  EXPECT_FLOAT_EQ(v2[0], 1.4f);
  EXPECT_FLOAT_EQ(w2[0], 1 - 0.14f);
}

}  // namespace
}  // namespace acan::nn
