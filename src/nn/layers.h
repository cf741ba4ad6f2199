// The list form of a model ([[model.layer]]): each layer's output shape for one sample, checked
// against what the next layer expects, and the lists that are a plain stack of dense layers (which
// train as the widths form does).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"
#include "nn/conv.h"

namespace acan::nn {

using SampleShape = std::vector<int64_t>;  // [features] or [channels, height, width]

// The largest list LayerShapes accepts: layers; a dimension, kernel, stride or padding; the floats
// of one sample at any layer and of any weight.
inline constexpr size_t kMaxLayers = 256;
inline constexpr int64_t kMaxDim = int64_t{1} << 24;
inline constexpr int64_t kMaxElements = int64_t{1} << 31;

std::string ToString(const SampleShape& shape);  // "64 x 7 x 7"
int64_t NumElements(const SampleShape& shape);

// The shape one sample has after each layer (element i: after layer i), from `input`. A layer
// that does not fit what it is given is an InvalidArgument naming it, e.g. "layer 3 (linear):
// expects 1568 inputs, gets 3136 (the output of layer 2 (flatten))"; `where`, when it has an entry
// for a layer, is put before that layer's message (the job file and line).
Result<std::vector<SampleShape>> LayerShapes(const std::vector<LayerConfig>& layers,
                                             const SampleShape& input,
                                             const std::vector<std::string>& where = {});

// The shape a model's layer list starts from: model.input_shape, else the data set's (fashion-mnist
// [1, 28, 28]), else the first linear layer's in_features; InvalidArgument when none says it.
Result<SampleShape> ListInputShape(const ModelConfig& model, DataSource source);

// A convolution's or a pooling layer's window over its input.
Window2d WindowOf(const LayerConfig& layer, const SampleShape& input);

// Whether the list is a stack of dense layers: flatten layers first (if any), then linear layers
// with bias and the same activation (relu, tanh or sigmoid) between each two, none after the last.
// If so, `widths` gets the input and every layer's output width and `activation` the activation
// (left as it is when there is a single linear layer).
bool AsDenseStack(const std::vector<LayerConfig>& layers, const SampleShape& input,
                  std::vector<int64_t>* widths, Activation* activation);

// ValidateJob's rules for a job whose model is a list of layers: the shapes fit; a list that is no
// dense stack uses the data or chain strategy and no memory budget, and model.layers holds its
// flattened ends; a dense stack's model.layers and activation are its own.
Status CheckLayerList(const JobConfig& job);

}  // namespace acan::nn
