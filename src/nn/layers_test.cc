// The list form of a model ([[model.layer]]): shapes through each layer, errors that name the
// layer and what does not fit, and dense lists trained bitwise as their widths form.
#include "nn/layers.h"

#include <gtest/gtest.h>

#include "nn/dataset.h"
#include "nn/model.h"
#include "nn/trainer.h"

namespace acan::nn {
namespace {

// The issue's example CNN on Fashion-MNIST; `linear_in` is the first linear layer's in_features.
std::string Cnn(int64_t linear_in = 3136, const std::string& extra = "") {
  return R"([model]
loss = "softmax_cross_entropy"
)" + extra +
         R"(
[[model.layer]]
type = "conv2d"
in_channels = 1
out_channels = 32
kernel_size = 3
padding = 1
[[model.layer]]
type = "relu"
[[model.layer]]
type = "max_pool2d"
kernel_size = 2
[[model.layer]]
type = "conv2d"
in_channels = 32
out_channels = 64
kernel_size = [3, 3]
padding = 1
[[model.layer]]
type = "relu"
[[model.layer]]
type = "max_pool2d"
kernel_size = 2
[[model.layer]]
type = "flatten"
[[model.layer]]
type = "linear"
in_features = )" +
         std::to_string(linear_in) + R"(
out_features = 128
[[model.layer]]
type = "relu"
[[model.layer]]
type = "dropout"
p = 0.5
[[model.layer]]
type = "linear"
in_features = 128
out_features = 10

[data]
source = "fashion-mnist"
)";
}

std::string Error(const std::string& job) {
  auto r = ParseJobString(job, "cnn.toml");
  return r.ok() ? "parsed" : std::string(r.status().message());
}

TEST(LayersTest, TheExampleCnnChecksOutShapeByShape) {
  LayerConfig conv1{LayerType::kConv2d, 1, 32, 3, 3, 0, 1, true, 0.5};
  LayerConfig conv2{LayerType::kConv2d, 32, 64, 3, 3, 0, 1, true, 0.5};
  LayerConfig pool{LayerType::kMaxPool2d, 0, 0, 2, 2, 0, 0, true, 0.5};
  LayerConfig flat{LayerType::kFlatten};
  LayerConfig fc1{LayerType::kLinear, 3136, 128};
  LayerConfig drop{LayerType::kDropout};
  LayerConfig fc2{LayerType::kLinear, 128, 10};
  LayerConfig relu{LayerType::kRelu};
  auto shapes =
      LayerShapes({conv1, relu, pool, conv2, relu, pool, flat, fc1, relu, drop, fc2}, {1, 28, 28});
  ASSERT_TRUE(shapes.ok()) << shapes.status().message();
  const std::vector<SampleShape> want = {{32, 28, 28}, {32, 28, 28}, {32, 14, 14}, {64, 14, 14},
                                         {64, 14, 14}, {64, 7, 7},   {3136},       {128},
                                         {128},        {128},        {10}};
  EXPECT_EQ(*shapes, want);
  // A stride and an average pool with padding (PyTorch's arithmetic: floor((H + 2p - k) / s) + 1).
  LayerConfig strided{LayerType::kConv2d, 1, 4, 5, 5, 2, 0};
  LayerConfig avg{LayerType::kAvgPool2d, 0, 0, 3, 3, 2, 1};
  shapes = LayerShapes({strided, avg}, {1, 28, 28});
  ASSERT_TRUE(shapes.ok());
  EXPECT_EQ(*shapes, (std::vector<SampleShape>{{4, 12, 12}, {4, 6, 6}}));

  // From the job file the shapes check; the list is no dense stack: widths are its ends.
  auto job = ParseJobString(Cnn(), "cnn.toml");
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->model.layers, (std::vector<int64_t>{784, 10}));
  EXPECT_EQ(job->model.layer.size(), 11u);
}

TEST(LayersTest, ALayerThatDoesNotFitIsNamedWithItsIndexAndLine) {
  // Layer 7 is the first linear layer, its [[model.layer]] on line 28 of the file.
  std::string e = Error(Cnn(1568));
  EXPECT_NE(e.find("cnn.toml:28: layer 7 (linear): expects 1568 inputs, gets 3136 (the output of "
                   "layer 6 (flatten))"),
            std::string::npos)
      << e;
  // No flatten before a linear layer.
  std::string job = Cnn();
  job.replace(job.find("type = \"flatten\""), 16, "type = \"relu\"");
  e = Error(job);
  EXPECT_NE(e.find("layer 7 (linear): expects 3136 inputs, gets 64 x 7 x 7 (the output of layer "
                   "6 (relu); put a flatten layer before it)"),
            std::string::npos)
      << e;
  // Channels that do not match.
  job = Cnn();
  job.replace(job.find("in_channels = 32"), 16, "in_channels = 16");
  e = Error(job);
  EXPECT_NE(e.find("layer 3 (conv2d): expects 16 input channels, gets 32"), std::string::npos) << e;
  // A kernel larger than its input.
  job = Cnn();
  job.replace(job.find("kernel_size = [3, 3]"), 20, "kernel_size = [3, 30]");
  e = Error(job);
  EXPECT_NE(e.find("layer 3 (conv2d): a kernel of 3 x 30 with padding 1 does not fit 32 x 14 x 14"),
            std::string::npos)
      << e;
}

TEST(LayersTest, BadKeysTypesAndFormsAreRefusedWithTheirPlace) {
  std::string job = Cnn();
  job.replace(job.find("type = \"dropout\""), 16, "type = \"dropin\"");
  std::string e = Error(job);
  EXPECT_NE(e.find("model.layer[9].type"), std::string::npos) << e;
  EXPECT_NE(e.find("dropin"), std::string::npos) << e;

  job = Cnn();
  job.replace(job.find("p = 0.5"), 7, "q = 0.5");
  e = Error(job);
  EXPECT_NE(e.find("unknown key \"model.layer[9].q\""), std::string::npos) << e;

  job = Cnn();
  job.replace(job.find("out_channels = 64"), 17, "out_channels = -4");
  e = Error(job);
  EXPECT_NE(e.find("cnn.toml:15: layer 3 (conv2d): a size of -4 is out of range"),
            std::string::npos)
      << e;

  job = Cnn();
  job.replace(job.find("p = 0.5"), 7, "p = 1.0");
  e = Error(job);
  EXPECT_NE(e.find("layer 9 (dropout): p must be in [0, 1), is 1"), std::string::npos) << e;

  job = Cnn();
  job.replace(job.find("kernel_size = 3\n"), 15, "kernel_size = \"3\"");
  e = Error(job);
  EXPECT_NE(e.find("model.layer[0].kernel_size\" must be an integer or [height, width]"),
            std::string::npos)
      << e;

  e = Error(Cnn(3136, "layers = [784, 10]\n"));
  EXPECT_NE(e.find("not both"), std::string::npos) << e;

  // A list that ends on a map of channels, and a data set that does not give the input's shape.
  e = Error(
      "[[model.layer]]\ntype = \"conv2d\"\nin_channels = 1\nout_channels = 2\n"
      "kernel_size = 3\n[data]\nsource = \"fashion-mnist\"\n");
  EXPECT_NE(e.find("the last layer's output must be flat"), std::string::npos) << e;
  e = Error(
      "[[model.layer]]\ntype = \"conv2d\"\nin_channels = 1\nout_channels = 2\n"
      "kernel_size = 3\n[data]\nsource = \"synthetic\"\n");
  EXPECT_NE(e.find("model.input_shape is needed"), std::string::npos) << e;
  e = Error("[[model.layer]]\nin_features = 3\n");
  EXPECT_NE(e.find("layer 0 has no type"), std::string::npos) << e;
}

// A dense list is the widths form: the same widths and activation, trained to the same bytes.
TEST(LayersTest, ADenseListTrainsBitwiseAsItsWidths) {
  const std::string rest = R"(
[data]
source = "synthetic"
samples = 64
[train]
epochs = 2
batch = 8
lr = 0.1
)";
  auto list = ParseJobString(R"([model]
input_shape = [6]
loss = "mse"
[[model.layer]]
type = "flatten"
[[model.layer]]
type = "linear"
in_features = 6
out_features = 5
[[model.layer]]
type = "sigmoid"
[[model.layer]]
type = "linear"
in_features = 5
out_features = 3
)" + rest,
                             "list");
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_EQ(list->model.layers, (std::vector<int64_t>{6, 5, 3}));
  EXPECT_EQ(list->model.activation, Activation::kSigmoid);
  auto widths = ParseJobString(
      "[model]\nlayers = [6, 5, 3]\nactivation = \"sigmoid\"\nloss = \"mse\"\n" + rest);
  ASSERT_TRUE(widths.ok());
  auto train = [](const JobConfig& job) {
    auto t = ReferenceTrainer::Create(job, *InitialModel(job), *LoadDataset(job));
    EXPECT_TRUE(t.ok());
    EXPECT_TRUE((*t)->Train().ok());
    return ModelSha256((*t)->CurrentModel());
  };
  EXPECT_EQ(train(*list), train(*widths));

  // Written back and read again, the list is the same.
  auto again = ParseJobString(ToToml(*list), "again");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->model.layer, list->model.layer);
  EXPECT_EQ(again->model.input_shape, list->model.input_shape);
  EXPECT_EQ(again->model.layers, list->model.layers);

  // A different activation between two pairs is no stack: a list of layers, its widths its ends.
  auto mixed = ParseJobString(R"([model]
loss = "mse"
[[model.layer]]
type = "linear"
in_features = 6
out_features = 5
[[model.layer]]
type = "relu"
[[model.layer]]
type = "linear"
in_features = 5
out_features = 3
[[model.layer]]
type = "tanh"
[[model.layer]]
type = "linear"
in_features = 3
out_features = 3
)" + rest);
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  EXPECT_EQ(mixed->model.layers, (std::vector<int64_t>{6, 3}));
  EXPECT_TRUE(IsLayerList(mixed->model));
  EXPECT_FALSE(IsLayerList(list->model));
}

}  // namespace
}  // namespace acan::nn
