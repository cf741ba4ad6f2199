// Kernels of the convolutional layers: a 2-D convolution (forward, and the gradients of its
// input, weight and bias), max and average pooling (forward and backward) and dropout's mask.
// Tensors are row-major float32 in PyTorch's layouts: activations [rows, channels, height, width]
// (NCHW), a convolution's weight [out, in, kh, kw] and its bias [out]. The convolution is an
// im2col (the patches of one sample as a matrix) and one GEMM per sample; its weight gradient
// sums the samples in row order, so a task gives the same bytes whatever thread or handler runs
// it. Every function runs single-threaded (kernels.h); `scratch` vectors are resized as needed and
// may be reused between calls to save allocations.
#pragma once

#include <cstdint>
#include <vector>

namespace acan::nn {

// The shape of a convolution or a pooling window over one sample of `channels` x `height` x
// `width`.
struct Window2d {
  int64_t channels = 0, height = 0, width = 0;  // the input's, one sample
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride = 1, padding = 0;  // the same along both axes, zeros (or nothing) around

  int64_t OutHeight() const { return (height + 2 * padding - kernel_h) / stride + 1; }
  int64_t OutWidth() const { return (width + 2 * padding - kernel_w) / stride + 1; }
  int64_t InputSize() const { return channels * height * width; }       // one sample's floats
  int64_t PatchSize() const { return channels * kernel_h * kernel_w; }  // a column of im2col
  int64_t OutPlane() const { return OutHeight() * OutWidth(); }
  // The window fits its input (at least one output) and every parameter is positive.
  bool Valid() const;
};

// col[PatchSize(), OutPlane()] <- the patches of one sample x[channels, height, width], zeros
// where a patch lies in the padding.
void Im2Col(const Window2d& g, const float* x, float* col);
// dx[channels, height, width] += col folded back (the adjoint of Im2Col), in a fixed order.
void Col2Im(const Window2d& g, const float* col, float* dx);

// out[rows, n, OH, OW] = conv(x[rows, C, H, W], w) + bias, for the n output channels whose weights
// are the n rows of w (leading dimension ldw >= PatchSize(): a tile of a larger weight's rows);
// bias (n values) may be null.
void Conv2dForward(const Window2d& g, const float* x, int64_t rows, const float* w, int64_t ldw,
                   int64_t n, const float* bias, float* out, std::vector<float>* scratch);

// gw[n, PatchSize()] (leading dimension ldgw) = sum over the rows, in order, of
// dz_r[n, OutPlane()] * im2col(x_r)^T: the weight gradient of the n output channels whose output
// gradients dz[rows, n, OH, OW] holds.
void Conv2dWeightGrad(const Window2d& g, const float* x, int64_t rows, const float* dz, int64_t n,
                      float* gw, int64_t ldgw, std::vector<float>* scratch);
// gb[n] = the sum of dz[rows, n, OH, OW] over rows and positions, each channel's plane summed in
// order and the rows in order.
void Conv2dBiasGrad(const Window2d& g, const float* dz, int64_t rows, int64_t n, float* gb);
// dx[rows, C, H, W] = the gradient of the input: the n output channels' w (leading dimension ldw)
// transposed times dz[rows, n, OH, OW], folded back by Col2Im. For a slice of the input channels,
// pass g with that slice's channel count and w pointing at the slice's first column (its columns
// c0 * kh * kw ... of each row, ldw the whole row).
void Conv2dInputGrad(const Window2d& g, const float* dz, int64_t rows, const float* w, int64_t ldw,
                     int64_t n, float* dx, std::vector<float>* scratch);

// Pooling over each channel's plane, windows of g (g.padding counts as nothing for max, as zeros
// for the average: PyTorch's MaxPool2d and AvgPool2d with count_include_pad). out[rows, C, OH, OW].
void MaxPool2dForward(const Window2d& g, const float* x, int64_t rows, float* out);
// dx[rows, C, H, W] = dz sent to each window's maximum in x (the first, in row-major order, when
// several are equal: PyTorch's choice), summed where windows overlap.
void MaxPool2dBackward(const Window2d& g, const float* x, int64_t rows, const float* dz, float* dx);
void AvgPool2dForward(const Window2d& g, const float* x, int64_t rows, float* out);
void AvgPool2dBackward(const Window2d& g, int64_t rows, const float* dz, float* dx);

// Whether dropout keeps unit `unit` of sample `sample` (its index in the data set) in epoch
// `epoch` at drop probability p: a pure function of the four and the seed, so every copy of a
// task, on any handler, and every partition of the batch draws the same mask.
bool DropoutKeeps(uint64_t seed, int64_t epoch, int64_t sample, int64_t unit, double p);
// x[rows, units] <- x * mask / (1 - p) (inverted dropout), row r being sample samples[r] of the
// data set and column u unit unit0 + u of the sample (a block of a larger layer's units: the
// tiles strategy). The backward pass is the same call on the gradient.
void ApplyDropout(uint64_t seed, int64_t epoch, const int64_t* samples, int64_t rows, int64_t units,
                  double p, float* x, int64_t unit0 = 0);

}  // namespace acan::nn
