// A layer list on a micro-batch: a dense list gives bitwise the widths form's micro-batch task;
// a network with every layer type has the gradients of finite differences of its loss.
#include "nn/network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "nn/dataset.h"
#include "nn/evaluate.h"
#include "nn/executor.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "nn/rng.h"
#include "nn/task.h"
#include "nn/trainer.h"

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

namespace acan::nn {
namespace {

// A small CNN job on synthetic 1 x 6 x 6 samples (3 classes): convolution, pooling, dropout.
std::string CnnJob(const std::string& strategy, int64_t task_size, double momentum = 0.9) {
  return R"([model]
input_shape = [1, 6, 6]
loss = "softmax_cross_entropy"
[[model.layer]]
type = "conv2d"
in_channels = 1
out_channels = 4
kernel_size = 3
padding = 1
[[model.layer]]
type = "relu"
[[model.layer]]
type = "max_pool2d"
kernel_size = 2
[[model.layer]]
type = "flatten"
[[model.layer]]
type = "dropout"
p = 0.2
[[model.layer]]
type = "linear"
in_features = 36
out_features = 3
[data]
source = "synthetic"
samples = 96
[train]
epochs = 6
batch = 16
lr = 0.05
momentum = )" +
         std::to_string(momentum) +
         R"(
[partition]
strategy = ")" +
         strategy + R"("
task_size = )" +
         std::to_string(task_size) + "\n";
}

// Four layers with weights and dropout in the middle: conv, pool, conv, linear, dropout, linear.
std::string DeepCnnJob(const std::string& strategy, int64_t task_size, int64_t stages) {
  return R"([model]
input_shape = [1, 6, 6]
loss = "softmax_cross_entropy"
[[model.layer]]
type = "conv2d"
in_channels = 1
out_channels = 3
kernel_size = 3
padding = 1
[[model.layer]]
type = "tanh"
[[model.layer]]
type = "avg_pool2d"
kernel_size = 2
[[model.layer]]
type = "conv2d"
in_channels = 3
out_channels = 4
kernel_size = [2, 3]
bias = false
[[model.layer]]
type = "relu"
[[model.layer]]
type = "flatten"
[[model.layer]]
type = "linear"
in_features = 8
out_features = 10
[[model.layer]]
type = "dropout"
p = 0.3
[[model.layer]]
type = "sigmoid"
[[model.layer]]
type = "linear"
in_features = 10
out_features = 3
[data]
source = "synthetic"
samples = 72
[train]
epochs = 3
batch = 12
lr = 0.1
momentum = 0.5
[partition]
strategy = ")" +
         strategy + "\"\ntask_size = " + std::to_string(task_size) +
         "\nstages = " + std::to_string(stages) + "\n";
}

struct Trained {
  std::string sha;
  std::vector<double> losses;
  Model model;
  double accuracy = 0;  // on the training rows, dropout off
};

Trained TrainJob(const std::string& text) {
  auto job = ParseJobString(text, "cnn");
  EXPECT_TRUE(job.ok()) << job.status().message();
  auto init = InitialModel(*job);
  EXPECT_TRUE(init.ok()) << init.status().message();
  auto data = LoadDataset(*job);
  EXPECT_TRUE(data.ok()) << data.status().message();
  auto t = ReferenceTrainer::Create(*job, *init, *data);
  EXPECT_TRUE(t.ok()) << t.status().message();
  Trained out;
  auto epochs = (*t)->Train([&](const EpochReport& e) { out.losses.push_back(e.loss); });
  EXPECT_TRUE(epochs.ok()) << epochs.status().message();
  out.model = (*t)->CurrentModel();
  auto eval = Evaluate(out.model, *data, *job);
  EXPECT_TRUE(eval.ok()) << eval.status().message();
  out.accuracy = eval.ok() ? eval->accuracy : 0;
  out.sha = ModelSha256(out.model);
  return out;
}

TEST(CnnTrainingTest, TheDataAndChainStrategiesTrainACnnToTheSameBytes) {
  const Trained data = TrainJob(CnnJob("data", 0));
  ASSERT_EQ(data.losses.size(), 6u);
  EXPECT_LT(data.losses.back(), 0.8 * data.losses.front());
  EXPECT_GT(data.accuracy, 0.6);  // three classes: a third by chance
  // A chain of mini-batches is the data strategy with one micro-batch, bit for bit (dropout's
  // mask is keyed by the mini-batch's index in the run, not by the chain's step).
  EXPECT_EQ(TrainJob(CnnJob("chain", 3)).sha, data.sha);
  EXPECT_EQ(TrainJob(CnnJob("chain", 0)).sha, data.sha);
  // Micro-batches of 5 rows: their gradients summed in order, close but not the same bytes.
  const Trained micro = TrainJob(CnnJob("data", 5));
  EXPECT_NE(micro.sha, data.sha);
  EXPECT_NEAR(micro.losses.back(), data.losses.back(), 0.05);
  // The pipeline runs the same micro-batches stage by stage: the data strategy's bytes.
  EXPECT_EQ(TrainJob(CnnJob("pipeline", 5)).sha, micro.sha);
  EXPECT_EQ(TrainJob(CnnJob("pipeline", 0)).sha, data.sha);

  // The model as nn.Sequential names and shapes it.
  const TensorMap t = ModelToTensors(data.model);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t.at("0.weight").shape, (std::vector<int64_t>{4, 1, 3, 3}));
  EXPECT_EQ(t.at("0.bias").shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(t.at("5.weight").shape, (std::vector<int64_t>{3, 36}));
  auto job = *ParseJobString(CnnJob("data", 0), "cnn");
  auto back = ListModelFromTensors(t, job.model.layer, {1, 6, 6}, "model");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ModelSha256(*back), data.sha);
  TensorMap wrong = t;
  wrong["0.weight"].shape = {4, 9};
  back = ListModelFromTensors(wrong, job.model.layer, {1, 6, 6}, "model.safetensors");
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("\"0.weight\" has shape 4 x 9 but layer 0 needs 4 x 1 x "
                                         "3 x 3"),
            std::string::npos)
      << back.status().message();
}

// A pipeline of any number of stages over a list with four weight layers, dropout and a conv
// without bias inside a stage: each stage hands over one activation each way and runs its
// forward again before its backward; the weights are the data strategy's with the same
// micro-batches, bit for bit.
TEST(CnnTrainingTest, APipelineOfAnyStagesGivesTheDataStrategysBytes) {
  for (int64_t task_size : {0, 5}) {
    const Trained data = TrainJob(DeepCnnJob("data", task_size, 0));
    ASSERT_EQ(data.losses.size(), 3u);
    EXPECT_LT(data.losses.back(), data.losses.front());
    for (int64_t stages : {0, 1, 2, 3, 9}) {
      EXPECT_EQ(TrainJob(DeepCnnJob("pipeline", task_size, stages)).sha, data.sha)
          << "task_size " << task_size << ", stages " << stages;
    }
  }
  // Four stages (one a weight layer): each forward task hands on one activation; the second
  // stage (conv 3 -> 4, relu, flatten) reads its 3 x 3 x 3 input and its one weight.
  auto job = ParseJobString(DeepCnnJob("pipeline", 5, 0), "cnn");
  ASSERT_TRUE(job.ok()) << job.status().message();
  auto plan = Plan::Create(*job, -1, 72);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  int forwards = 0, backwards = 0;
  for (const TaskSpec& t : plan->StepTasks(0, 12)) {
    const std::vector<int64_t> in = InputSizes(t), out = OutputSizes(t);
    if (t.op == TaskOp::kStageForward) {
      ++forwards;
      ASSERT_EQ(out.size(), 1u) << t.key;
      if (t.layer == 1) {
        EXPECT_EQ(in, (std::vector<int64_t>{t.rows * 27, 4 * 3 * 2 * 3})) << t.key;
        EXPECT_EQ(out, (std::vector<int64_t>{t.rows * 8})) << t.key;
      }
    }
    if (t.op == TaskOp::kStageBackward) {
      ++backwards;
      // d out, the input, the parameters; their gradients and (not the first) d input.
      if (t.layer == 1) {
        EXPECT_EQ(in, (std::vector<int64_t>{t.rows * 8, t.rows * 27, 72})) << t.key;
        EXPECT_EQ(out, (std::vector<int64_t>{72, t.rows * 27})) << t.key;
      }
      if (t.layer == 0) {
        EXPECT_EQ(out, (std::vector<int64_t>{27, 3})) << t.key;
      }
    }
  }
  EXPECT_EQ(forwards, 4 * 3);  // 3 micro-batches of 5, 5 and 2 rows
  EXPECT_EQ(backwards, 4 * 3);
}

// The largest difference between two models' values, tensor by tensor.
double MaxDifference(const Model& a, const Model& b) {
  double most = 0;
  for (size_t l = 0; l < a.weights.size(); ++l) {
    for (size_t i = 0; i < a.weights[l].size(); ++i)
      most = std::max(most, double(std::abs(a.weights[l][i] - b.weights[l][i])));
    for (size_t i = 0; i < a.biases[l].size(); ++i)
      most = std::max(most, double(std::abs(a.biases[l][i] - b.biases[l][i])));
  }
  return most;
}

// Tiles of a list: every layer with weights a product over blocks of units (output channels by
// input channels, features by features, a linear layer after a flatten cut at its channel
// blocks), its activation, pooling and dropout run on a block of its output alone. The same
// function as the data strategy's whole layers, summed in another order: the same weights to
// float rounding, with edges that cut every layer (1, 2, 3) and one that cuts none (64); a
// wrong block offset of dropout's mask, a tile's window or a partial's place moves them by the
// size of a step.
TEST(CnnTrainingTest, TilesOfAnyEdgeTrainAListAsTheDataStrategyDoes) {
  for (bool deep : {false, true}) {
    const Trained data = TrainJob(deep ? DeepCnnJob("data", 0, 0) : CnnJob("data", 0));
    ASSERT_FALSE(data.losses.empty());
    for (int64_t edge : {1, 2, 3, 64}) {
      SCOPED_TRACE(std::string(deep ? "deep" : "small") + " edge " + std::to_string(edge));
      const Trained tiles = TrainJob(deep ? DeepCnnJob("tiles", edge, 0) : CnnJob("tiles", edge));
      ASSERT_EQ(tiles.losses.size(), data.losses.size());
      for (size_t e = 0; e < data.losses.size(); ++e)
        EXPECT_NEAR(tiles.losses[e], data.losses[e], 1e-4) << "epoch " << e;
      EXPECT_LT(MaxDifference(tiles.model, data.model), 1e-4);
      EXPECT_EQ(TrainJob(deep ? DeepCnnJob("tiles", edge, 0) : CnnJob("tiles", edge)).sha,
                tiles.sha);
    }
  }
  // The small CNN in tiles of 2: conv 1 -> 4 as 2 row blocks of one column block; the linear
  // layer's 36 inputs (4 channels x 3 x 3 after pooling) as 2 column blocks of 18.
  auto job = ParseJobString(CnnJob("tiles", 2), "cnn");
  ASSERT_TRUE(job.ok()) << job.status().message();
  auto plan = Plan::Create(*job, -1, 96);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ShardSpec& s : plan->shards()) shapes[s.key] = s.shape;
  EXPECT_EQ(shapes, (std::map<std::string, std::vector<int64_t>>{{"param.l0.w.r0.c0", {2, 9}},
                                                                 {"param.l0.w.r1.c0", {2, 9}},
                                                                 {"param.l0.b.r0", {2}},
                                                                 {"param.l0.b.r1", {2}},
                                                                 {"param.l1.w.r0.c0", {2, 18}},
                                                                 {"param.l1.w.r0.c1", {2, 18}},
                                                                 {"param.l1.w.r1.c0", {1, 18}},
                                                                 {"param.l1.w.r1.c1", {1, 18}},
                                                                 {"param.l1.b.r0", {2}},
                                                                 {"param.l1.b.r1", {1}}}));
  for (const TaskSpec& t : plan->StepTasks(0, 16)) {
    if (t.op == TaskOp::kTileActivation && t.layer == 0) {
      // Partials of 2 channels x 6 x 6, its bias block; h pooled to 2 x 3 x 3, and z for the
      // backward through relu and the pooling.
      EXPECT_EQ(InputSizes(t), (std::vector<int64_t>{16 * 72, 2})) << t.key;
      EXPECT_EQ(OutputSizes(t), (std::vector<int64_t>{16 * 18, 16 * 72})) << t.key;
    }
    if (t.op == TaskOp::kTileInputGrad) {
      EXPECT_EQ(InputSizes(t), (std::vector<int64_t>{16 * 18, 16 * 18, 16 * 72})) << t.key;
      EXPECT_EQ(OutputSizes(t), (std::vector<int64_t>{16 * 72})) << t.key;
    }
  }
}

// Every task of a list's plan goes through the space as bytes: each decodes to itself.
TEST(CnnTrainingTest, EveryTaskOfAListsPlanDecodesToItself) {
  for (const char* strategy : {"data", "chain", "pipeline", "tiles"}) {
    auto job = ParseJobString(CnnJob(strategy, 5), "cnn");
    ASSERT_TRUE(job.ok());
    auto plan = Plan::Create(*job, -1, 96);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    const auto tasks = plan->StepTasks(3, 16);
    ASSERT_FALSE(tasks.empty());
    for (const TaskSpec& t : tasks) {
      auto back = DecodeTask(EncodeTask(t));
      ASSERT_TRUE(back.ok()) << t.key << ": " << back.status().message();
      EXPECT_EQ(EncodeTask(*back), EncodeTask(t)) << t.key;
      EXPECT_EQ(back->net, t.net);
    }
  }
  // A list whose sizes would overflow is refused, not multiplied.
  auto job = *ParseJobString(CnnJob("data", 5), "cnn");
  TaskSpec t = Plan::Create(job, -1, 96)->StepTasks(0, 16)[0];
  t.net[0].out = int64_t{1} << 23;
  t.net[0].kernel_h = t.net[0].kernel_w = 1 << 23;
  EXPECT_FALSE(DecodeTask(EncodeTask(t)).ok());
  // And a tile task that would sum more parts than the inputs it names.
  for (const TaskSpec& tile :
       Plan::Create(*ParseJobString(CnnJob("tiles", 2), "cnn"), -1, 96)->StepTasks(0, 16)) {
    if (tile.op != TaskOp::kTileActivation) continue;
    TaskSpec bad = tile;
    bad.parts = 1 << 30;
    EXPECT_FALSE(DecodeTask(EncodeTask(bad)).ok()) << tile.key;
    break;
  }
  // So is one whose rows times a layer's activation would be too large a tensor: 36 floats in,
  // 4 x 6 x 6 = 144 after the convolution.
  t = Plan::Create(job, -1, 96)->StepTasks(0, 16)[0];
  t.rows = (int64_t{1} << 31) / 100;
  EXPECT_TRUE(t.rows * 36 <= (int64_t{1} << 31));
  EXPECT_FALSE(DecodeTask(EncodeTask(t)).ok());
}

TEST(CnnTrainingTest, ListsTilesCannotCutAndBudgetsAreRefusedByName) {
  // Tiles: a layer other than flatten before the first with weights, a layer after the last
  // one, bands.
  std::string text = CnnJob("tiles", 2);
  text.replace(text.find("[[model.layer]]"), 0, "[[model.layer]]\ntype = \"relu\"\n");
  auto job = ParseJobString(text, "cnn");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("layer 0 (relu) comes before the first layer with weights"),
            std::string::npos)
      << job.status().message();
  text = CnnJob("tiles", 2);
  text.replace(text.find("[data]"), 0, "[[model.layer]]\ntype = \"sigmoid\"\n");
  job = ParseJobString(text, "cnn");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(
      job.status().message().find("layer 6 (sigmoid) comes after the last layer with weights"),
      std::string::npos)
      << job.status().message();
  job = ParseJobString(CnnJob("tiles", 0) + "tile_bands = [{edge = 2, share = 1}]\n", "cnn");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("not in bands"), std::string::npos)
      << job.status().message();
  job = ParseJobString(CnnJob("data", 0) + "[runtime]\nhandler_memory = \"8MiB\"\n", "cnn");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("memory budgets"), std::string::npos);
}

}  // namespace
}  // namespace acan::nn
