// A model given as a list of layers ([[model.layer]]; layers.h) run on a micro-batch: its
// parameters (each layer with weights: a weight [out, in * kh * kw] and a bias [out], named and
// shaped as PyTorch's nn.Sequential names them: "<index>.weight" [out, in, kh, kw]), their
// initial values, and one pure function for the forward pass, the loss and the backward pass.
// The dense layers use the same kernels in the same order as the widths form's micro-batch task
// (executor.h), so a dense list gives bitwise its gradients.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "acan/job.h"
#include "acan/status.h"
#include "nn/conv.h"
#include "nn/kernels.h"
#include "nn/layers.h"

namespace acan::nn {

// One parameter tensor of a layer list, in the order the network reads them: for each layer
// with weights (conv2d, linear), its weight, then its bias when it has one.
struct ListParam {
  int layer = 0;               // the layer's index in the list (PyTorch's index in nn.Sequential)
  bool bias = false;           // the bias, else the weight
  int64_t rows = 0;            // output channels or features
  int64_t cols = 0;            // a weight's in * kh * kw (linear: in_features); a bias: 1
  std::vector<int64_t> shape;  // PyTorch's: [out, in, kh, kw], [out, in] or [out]
  std::string name;            // "<layer>.weight" or "<layer>.bias"
  int64_t Size() const { return rows * cols; }
};

class Network {
 public:
  // InvalidArgument when a layer does not fit the shapes before it (LayerShapes).
  static Result<Network> Create(std::vector<LayerConfig> layers, SampleShape input);

  const std::vector<LayerConfig>& layers() const { return layers_; }
  const SampleShape& input() const { return input_; }
  int64_t InputSize() const { return NumElements(input_); }
  int64_t OutputSize() const { return NumElements(shapes_.back()); }
  // The floats of one sample's largest activation (the input's or any layer's output).
  int64_t LargestActivation() const;
  const std::vector<ListParam>& params() const { return params_; }
  int64_t NumParameters() const;

  // The initial parameters, in params() order: each weight drawn from U(-a, a) with xavier_uniform
  // a = sqrt(6 / (fan_in + fan_out)), kaiming_uniform a = sqrt(6 / fan_in) (fans as PyTorch counts
  // them: in * kh * kw and out * kh * kw), zeros; one seeded stream over the weights in order;
  // biases zero.
  Result<std::vector<std::vector<float>>> InitialParams(std::string_view scheme,
                                                        uint64_t seed) const;

  // What a pass needs besides the parameters: `rows` samples x[rows, InputSize()], their targets
  // (the loss's form: one label a row, or OutputSize() values), and for dropout, each row's index
  // in the data set and the epoch (the mask's inputs with the seed).
  struct Batch {
    const float* x = nullptr;
    const float* targets = nullptr;
    int64_t rows = 0;
    const int64_t* samples = nullptr;  // needed when training with dropout
    int64_t epoch = 0;
    uint64_t seed = 0;
    // A block of a larger network's channels (the tiles strategy runs a layer's activation,
    // pooling and dropout on its block of output channels or features): channels [block0,
    // block0 + block_units) of the tensor whose first dimension this network's input is a slice
    // of; dropout then draws the larger tensor's units. block_units = 0: the whole.
    int64_t block0 = 0, block_units = 0;
    // The unit of the whole tensor that unit 0 of one sample's `size` floats here is.
    int64_t Unit0(int64_t size) const {
      return block_units > 0 ? block0 * (size / block_units) : 0;
    }
  };
  // The forward pass, the loss (scale: 1 / the mini-batch's rows) and, when `grads` is not null,
  // the backward pass: (*grads)[i] gets params()[i]'s gradient. `training` applies dropout.
  // `logits`, when not null, gets the last layer's output.
  Result<LossValue> Run(const Batch& batch, std::span<const float* const> params, LossKind loss,
                        double scale, bool training, std::vector<std::vector<float>>* grads,
                        std::vector<float>* logits = nullptr) const;
  // The forward pass alone, dropout off (evaluation): the last layer's output for `rows` rows of
  // x.
  Result<std::vector<float>> Predict(const float* x, int64_t rows,
                                     std::span<const float* const> params) const;

  // A pipeline stage's layers: those of weight layers [w0, w1) (counting the layers with weights
  // from 0), each with the layers without weights after it, the first stage also with those
  // before it: [first, end) in layers().
  std::pair<int, int> StageLayers(int w0, int w1) const;
  // The floats of one sample entering layer i (i = the list's length: the output).
  int64_t ActivationSize(int i) const;
  // The parameters of layers [i0, i1): [first, end) in params().
  std::pair<int, int> ParamRange(int i0, int i1) const;
  // Layers [i0, i1) forward from x (the input of layer i0): (*acts)[i + 1] the output of layer
  // i, sized for the whole list. params: all of params() (those of other layers unread).
  Status ForwardRange(const Batch& batch, int i0, int i1, const float* x,
                      std::span<const float* const> params, bool training,
                      std::vector<std::vector<float>>* acts) const;
  // Layers [i0, i1) backward: dz is d loss / d (the output of layer i1 - 1), acts what
  // ForwardRange made from x. Writes (*grads)[k] for each parameter k of those layers and, when
  // dx is not null, d loss / d x.
  void BackwardRange(const Batch& batch, int i0, int i1, const float* x,
                     const std::vector<std::vector<float>>& acts, std::vector<float> dz,
                     std::span<const float* const> params, bool training,
                     std::vector<std::vector<float>>* grads, std::vector<float>* dx) const;
  // InvalidArgument unless there is one pointer per parameter.
  Status CheckParams(std::span<const float* const> params) const;

  // The tiles strategy's view of the list: each layer with weights as a product over units
  // (channels of a convolution, features of a linear layer), followed by its post-ops (the layers
  // without weights up to the next layer with weights: activations, pooling, flatten, dropout,
  // none of which mixes units). A tile multiplies a block of input units by a block of the
  // weight's rows; the post-ops run on a block of output units alone.
  struct TileLayer {
    int layer = 0;            // its index in the list
    int end = 0;              // its post-ops are the list's layers (layer, end)
    int64_t in_units = 0;     // its input: in_units units of in_per_unit floats (one sample)
    int64_t in_per_unit = 0;  // (a conv2d: the input's H x W; a linear layer: 1, or after a
                              // flatten the previous layer's floats per channel)
    int64_t k_per_unit = 0;   // a weight row's columns per input unit: kh x kw, or in_per_unit
    int64_t out_units = 0;    // its output: out channels or features
    int64_t z_per_unit = 0;   // floats per output unit before the post-ops (OH x OW, or 1)
    int64_t h_per_unit = 0;   // and after them
    bool bias = false;
    bool conv = false;    // a conv2d, else a linear layer
    Window2d window;      // a conv2d's, over the whole input (channels = in_units)
    SampleShape z_shape;  // one sample's output before the post-ops: [out, OH, OW] or [out]
  };
  // InvalidArgument when the list cannot be cut so: a layer other than flatten before the first
  // layer with weights, or a layer after the last one (its output is the loss's input).
  Result<std::vector<TileLayer>> TileLayers() const;
  // A network of tile layer `t`'s post-ops on a block of `units` of its output units (an empty
  // list when it has none).
  Result<Network> PostOps(const TileLayer& t, int64_t units) const;

 private:
  Network() = default;
  // The forward pass: acts[i] the input of layer i (acts[0] unused: the batch), acts[n] the
  // output.
  Status Forward(const Batch& batch, std::span<const float* const> params, bool training,
                 std::vector<std::vector<float>>* acts) const;
  std::vector<LayerConfig> layers_;
  SampleShape input_;
  std::vector<SampleShape> shapes_;  // after each layer
  std::vector<ListParam> params_;
  std::vector<int> first_param_;  // per layer: its weight's index in params_, or -1
};

}  // namespace acan::nn
