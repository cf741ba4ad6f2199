// A layer list on a micro-batch: a dense list gives bitwise the widths form's micro-batch task;
// a network with every layer type has the gradients of finite differences of its loss.
#include "nn/network.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "nn/executor.h"
#include "nn/rng.h"

namespace acan::nn {
namespace {

std::vector<float> Random(int64_t n, uint64_t seed, float lo = -1, float hi = 1) {
  Rng r(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = r.Uniform(lo, hi);
  return v;
}

LayerConfig Linear(int64_t in, int64_t out) { return {LayerType::kLinear, in, out}; }
LayerConfig Of(LayerType t) { return {t}; }

TEST(NetworkTest, ADenseListGivesBitwiseTheMicroBatchTasksGradients) {
  InitBlas();
  const std::vector<int64_t> widths = {6, 5, 4, 3};
  const int64_t rows = 7;
  auto net = Network::Create(
      {Linear(6, 5), Of(LayerType::kTanh), Linear(5, 4), Of(LayerType::kTanh), Linear(4, 3)}, {6});
  ASSERT_TRUE(net.ok()) << net.status().message();
  ASSERT_EQ(net->params().size(), 6u);
  EXPECT_EQ(net->params()[2].name, "2.weight");
  EXPECT_EQ(net->params()[2].shape, (std::vector<int64_t>{4, 5}));

  auto params = *net->InitialParams("xavier_uniform", 3);
  for (auto& p : params) {
    if (p.size() <= 5) p = Random(int64_t(p.size()), 9);  // biases not zero, so they count
  }
  auto x = Random(rows * 6, 4);
  std::vector<float> labels = {0, 2, 1, 1, 0, 2, 2};

  TaskSpec t;
  t.type = TaskType::kBackward;
  t.op = TaskOp::kMicroBatch;
  t.widths = widths;
  t.activation = Activation::kTanh;
  t.loss = LossKind::kSoftmaxCrossEntropy;
  t.rows = t.batch = rows;
  t.layer_end = 3;
  t.inputs = {"x", "y", "w0", "b0", "w1", "b1", "w2", "b2"};
  t.outputs = {"loss", "gw0", "gb0", "gw1", "gb1", "gw2", "gb2"};
  std::vector<std::span<const float>> in = {x, labels};
  for (const auto& p : params) in.emplace_back(p);
  std::vector<std::vector<float>> task_out(7);
  const Status done = ExecuteTask(t, in, &task_out);
  ASSERT_TRUE(done.ok()) << done.message();

  std::vector<const float*> ptrs;
  for (const auto& p : params) ptrs.push_back(p.data());
  std::vector<std::vector<float>> grads;
  Network::Batch b{x.data(), labels.data(), rows};
  auto v = net->Run(b, ptrs, LossKind::kSoftmaxCrossEntropy, 1.0 / rows, true, &grads);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(static_cast<float>(v->loss), task_out[0][0]);
  EXPECT_EQ(static_cast<float>(v->correct), task_out[0][1]);
  for (size_t i = 0; i < grads.size(); ++i) {
    ASSERT_EQ(grads[i].size(), task_out[1 + i].size()) << params.size();
    EXPECT_EQ(0,
              std::memcmp(grads[i].data(), task_out[1 + i].data(), grads[i].size() * sizeof(float)))
        << net->params()[i].name;
  }
}

// Every layer type in one network; the loss's gradient against central differences in every
// parameter tensor (a sample of each) and with dropout's mask held (the same samples and epoch).
TEST(NetworkTest, EveryLayerTypesGradientsMatchFiniteDifferences) {
  InitBlas();
  LayerConfig conv1{LayerType::kConv2d, 2, 3, 3, 3, 1, 1};
  LayerConfig pool{LayerType::kMaxPool2d, 0, 0, 2, 2, 0, 0};
  LayerConfig conv2{LayerType::kConv2d, 3, 4, 2, 2, 1, 0, false};
  LayerConfig avg{LayerType::kAvgPool2d, 0, 0, 2, 2, 1, 1};
  LayerConfig drop{LayerType::kDropout};
  drop.p = 0.25;
  auto net = Network::Create(
      {conv1, Of(LayerType::kSigmoid), pool, conv2, Of(LayerType::kTanh), avg,
       Of(LayerType::kFlatten), drop, Linear(36, 5), Of(LayerType::kRelu), Linear(5, 3)},
      {2, 6, 6});
  ASSERT_TRUE(net.ok()) << net.status().message();
  ASSERT_EQ(net->params().size(), 7u);  // conv1 w b, conv2 w, two linear w b
  EXPECT_EQ(net->params()[2].name, "3.weight");
  EXPECT_EQ(net->params()[2].shape, (std::vector<int64_t>{4, 3, 2, 2}));
  const int64_t rows = 3;
  auto params = *net->InitialParams("kaiming_uniform", 5);
  for (auto& p : params) {
    for (float& f : p) f += 0.05f;  // biases off zero
  }
  auto x = Random(rows * net->InputSize(), 6);
  auto targets = Random(rows * 3, 7);
  const std::vector<int64_t> samples = {11, 4, 250};
  Network::Batch b{x.data(), targets.data(), rows, samples.data(), 1, 42};
  auto loss = [&] {
    std::vector<const float*> ptrs;
    for (const auto& p : params) ptrs.push_back(p.data());
    return net->Run(b, ptrs, LossKind::kMse, 1.0 / rows, true, nullptr)->loss;
  };
  std::vector<const float*> ptrs;
  for (const auto& p : params) ptrs.push_back(p.data());
  std::vector<std::vector<float>> grads;
  ASSERT_TRUE(net->Run(b, ptrs, LossKind::kMse, 1.0 / rows, true, &grads).ok());
  // The mask is there: another epoch gives another loss.
  Network::Batch other = b;
  other.epoch = 2;
  EXPECT_NE(net->Run(other, ptrs, LossKind::kMse, 1.0 / rows, true, nullptr)->loss, loss());
  Rng pick(8);
  for (size_t i = 0; i < params.size(); ++i) {
    for (int k = 0; k < 8; ++k) {
      const size_t at = pick.Below(params[i].size());
      const float keep = params[i][at], eps = 1e-3f;
      params[i][at] = keep + eps;
      const double up = loss();
      params[i][at] = keep - eps;
      const double down = loss();
      params[i][at] = keep;
      const double numeric = (up - down) / (2.0 * eps);
      EXPECT_NEAR(grads[i][at], numeric, 2e-3 + 2e-2 * std::abs(numeric))
          << net->params()[i].name << "[" << at << "]";
    }
  }
}

TEST(NetworkTest, InitialParamsFollowTheSchemeAndTheSeed) {
  LayerConfig conv{LayerType::kConv2d, 2, 4, 3, 3, 1, 1};
  auto net = *Network::Create({conv, Of(LayerType::kFlatten), Linear(4 * 5 * 5, 3)}, {2, 5, 5});
  auto a = *net.InitialParams("xavier_uniform", 1), same = *net.InitialParams("xavier_uniform", 1),
       other = *net.InitialParams("xavier_uniform", 2);
  EXPECT_EQ(a, same);
  EXPECT_NE(a[0], other[0]);
  // conv: fan_in 2 * 9, fan_out 4 * 9; the bound is reached to within a few per cent.
  const float bound = std::sqrt(6.0f / (18 + 36));
  float largest = 0;
  for (float w : a[0]) largest = std::max(largest, std::abs(w));
  EXPECT_LE(largest, bound);
  EXPECT_GT(largest, 0.9f * bound);
  for (float bias : a[1]) EXPECT_EQ(bias, 0.0f);
  EXPECT_FALSE(net.InitialParams("orthogonal", 1).ok());
}

}  // namespace
}  // namespace acan::nn
