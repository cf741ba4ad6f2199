#include "nn/conv.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "nn/kernels.h"
#include "nn/rng.h"

namespace acan::nn {

namespace {

// A 1x1 convolution of stride 1 without padding: a sample is its own im2col.
bool IsPointwise(const Window2d& g) {
  return g.kernel_h == 1 && g.kernel_w == 1 && g.stride == 1 && g.padding == 0;
}

// The outputs x in [lo, hi) of a row whose window column at kernel offset k lies in the input:
// 0 <= x * stride - padding + k < extent.
struct Span {
  int64_t lo, hi;
};
Span InsideSpan(int64_t out, int64_t extent, int64_t stride, int64_t padding, int64_t k) {
  const int64_t first = padding - k;        // x * stride >= first
  const int64_t last = extent - 1 + first;  // x * stride <= last
  if (last < 0) return {0, 0};
  const int64_t lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  const int64_t hi = std::min(out, last / stride + 1);
  return {std::min(lo, hi), hi};
}

// Calls row_f(patch_row, out, in, span) for every (patch row, output row) of im2col: `out` is
// the output row's first index in the plane; the outputs x in [span.lo, span.hi) of that row
// read the input at in + x * stride, the others lie in the padding (all of them, with an empty
// span, when the whole input row does). Rows are visited in (channel, ki, kj, y) order and
// columns in x order, so Im2Col and its adjoint visit alike and Col2Im adds into each input
// element in one fixed order.
template <typename F>
void ForEachPatchRow(const Window2d& g, F row_f) {
  const int64_t oh = g.OutHeight(), ow = g.OutWidth();
  int64_t row = 0;
  for (int64_t c = 0; c < g.channels; ++c) {
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      for (int64_t kj = 0; kj < g.kernel_w; ++kj, ++row) {
        const Span cols = InsideSpan(ow, g.width, g.stride, g.padding, kj);
        for (int64_t y = 0; y < oh; ++y) {
          const int64_t ih = y * g.stride - g.padding + ki;
          const bool row_in = ih >= 0 && ih < g.height;
          // Input column of output x: x * stride + kj - padding (>= 0 within the span).
          row_f(row, y * ow, (c * g.height + (row_in ? ih : 0)) * g.width + kj - g.padding,
                row_in ? cols : Span{0, 0});
        }
      }
    }
  }
}

// The window of output (y, x) clipped to the input: [h0, h1) x [w0, w1), and the count of
// positions PyTorch's average divides by (the padding included, the part past it not).
struct Clip {
  int64_t h0, h1, w0, w1, divisor;
};
// One axis of it: [lo, hi) within the input and the extent within the padded input.
struct AxisClip {
  int64_t lo, hi, extent;
};
std::vector<AxisClip> AxisClips(int64_t out, int64_t in, int64_t kernel, int64_t stride,
                                int64_t padding) {
  std::vector<AxisClip> clips(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t a = o * stride - padding, b = std::min(a + kernel, in + padding);
    clips[size_t(o)] = {std::max<int64_t>(a, 0), std::min(b, in), b - a};
  }
  return clips;
}
// Every window of a plane, for its pooling loops: Clip of (y, x).
struct Windows {
  std::vector<AxisClip> ys, xs;
  explicit Windows(const Window2d& g)
      : ys(AxisClips(g.OutHeight(), g.height, g.kernel_h, g.stride, g.padding)),
        xs(AxisClips(g.OutWidth(), g.width, g.kernel_w, g.stride, g.padding)) {}
  Clip At(int64_t y, int64_t x) const {
    const AxisClip& v = ys[size_t(y)];
    const AxisClip& h = xs[size_t(x)];
    return {v.lo, v.hi, h.lo, h.hi, v.extent * h.extent};
  }
};

}  // namespace

bool Window2d::Valid() const {
  return channels > 0 && height > 0 && width > 0 && kernel_h > 0 && kernel_w > 0 && stride > 0 &&
         padding >= 0 && height + 2 * padding >= kernel_h && width + 2 * padding >= kernel_w;
}

void Im2Col(const Window2d& g, const float* x, float* col) {
  const int64_t plane = g.OutPlane(), ow = g.OutWidth(), stride = g.stride;
  ForEachPatchRow(g, [&](int64_t row, int64_t out, int64_t in, Span s) {
    float* dst = col + row * plane + out;
    std::fill(dst, dst + s.lo, 0.0f);
    if (stride == 1) {
      if (s.hi > s.lo) std::copy_n(x + (in + s.lo), s.hi - s.lo, dst + s.lo);
    } else {
      for (int64_t j = s.lo; j < s.hi; ++j) dst[j] = x[in + j * stride];
    }
    std::fill(dst + s.hi, dst + ow, 0.0f);
  });
}

void Col2Im(const Window2d& g, const float* col, float* dx) {
  const int64_t plane = g.OutPlane(), stride = g.stride;
  ForEachPatchRow(g, [&](int64_t row, int64_t out, int64_t in, Span s) {
    const float* src = col + row * plane + out;
    for (int64_t j = s.lo; j < s.hi; ++j) dx[in + j * stride] += src[j];
  });
}

void Conv2dForward(const Window2d& g, const float* x, int64_t rows, const float* w, int64_t ldw,
                   int64_t n, const float* bias, float* out, std::vector<float>* scratch) {
  const int64_t patch = g.PatchSize(), plane = g.OutPlane(), in_size = g.InputSize();
  const bool pointwise = IsPointwise(g);
  if (!pointwise) scratch->resize(size_t(patch * plane));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * in_size;
    float* o = out + r * n * plane;
    const float* col = xr;
    if (!pointwise) {
      Im2Col(g, xr, scratch->data());
      col = scratch->data();
    }
    float beta = 0.0f;
    if (bias != nullptr) {
      for (int64_t j = 0; j < n; ++j) std::fill(o + j * plane, o + (j + 1) * plane, bias[j]);
      beta = 1.0f;
    }
    Gemm(false, false, n, plane, patch, 1.0f, w, ldw, col, plane, beta, o, plane);
  }
}

void Conv2dWeightGrad(const Window2d& g, const float* x, int64_t rows, const float* dz, int64_t n,
                      float* gw, int64_t ldgw, std::vector<float>* scratch) {
  const int64_t patch = g.PatchSize(), plane = g.OutPlane(), in_size = g.InputSize();
  if (rows == 0) {
    for (int64_t j = 0; j < n; ++j) std::fill(gw + j * ldgw, gw + j * ldgw + patch, 0.0f);
    return;
  }
  const bool pointwise = IsPointwise(g);
  if (!pointwise) scratch->resize(size_t(patch * plane));
  for (int64_t r = 0; r < rows; ++r) {
    const float* col = x + r * in_size;
    if (!pointwise) {
      Im2Col(g, col, scratch->data());
      col = scratch->data();
    }
    Gemm(false, true, n, patch, plane, 1.0f, dz + r * n * plane, plane, col, plane,
         r == 0 ? 0.0f : 1.0f, gw, ldgw);
  }
}

void Conv2dBiasGrad(const Window2d& g, const float* dz, int64_t rows, int64_t n, float* gb) {
  const int64_t plane = g.OutPlane();
  std::fill(gb, gb + n, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const float* d = dz + (r * n + j) * plane;
      float sum = 0.0f;
      for (int64_t p = 0; p < plane; ++p) sum += d[p];
      gb[j] += sum;
    }
  }
}

void Conv2dInputGrad(const Window2d& g, const float* dz, int64_t rows, const float* w, int64_t ldw,
                     int64_t n, float* dx, std::vector<float>* scratch) {
  const int64_t patch = g.PatchSize(), plane = g.OutPlane(), in_size = g.InputSize();
  const bool pointwise = IsPointwise(g);
  if (!pointwise) scratch->resize(size_t(patch * plane));
  for (int64_t r = 0; r < rows; ++r) {
    float* dxr = dx + r * in_size;
    float* dcol = pointwise ? dxr : scratch->data();
    Gemm(true, false, patch, plane, n, 1.0f, w, ldw, dz + r * n * plane, plane, 0.0f, dcol, plane);
    if (!pointwise) {
      std::fill(dxr, dxr + in_size, 0.0f);
      Col2Im(g, dcol, dxr);
    }
  }
}

namespace {

// Where a window's maximum lies in its plane: the first in row-major order when several are
// equal, the first NaN when there is one (as PyTorch's MaxPool2d), the window's first position
// when all are -inf.
int64_t MaxAt(const Window2d& g, const float* in, const Clip& c) {
  if (c.h1 - c.h0 == 2 && c.w1 - c.w0 == 2) {
    // The common 2 x 2 window without a NaN, by selects rather than branches (a comparison of
    // random values mispredicts half the time): the same choice as the loop below, whose start
    // at -inf only a greater value or a NaN moves.
    const int64_t a0 = c.h0 * g.width + c.w0, a1 = a0 + 1, a2 = a0 + g.width, a3 = a2 + 1;
    const float v0 = in[a0], v1 = in[a1], v2 = in[a2], v3 = in[a3];
    // (int: no short-circuit branches, and clang's -Wbitwise-instead-of-logical holds.)
    if (!(int(std::isnan(v0)) | int(std::isnan(v1)) | int(std::isnan(v2)) | int(std::isnan(v3)))) {
      int64_t at = a0;
      float best = v0;
      at = v1 > best ? a1 : at, best = v1 > best ? v1 : best;
      at = v2 > best ? a2 : at, best = v2 > best ? v2 : best;
      return v3 > best ? a3 : at;
    }
  }
  float best = -std::numeric_limits<float>::infinity();
  int64_t at = c.h0 * g.width + c.w0;
  for (int64_t i = c.h0; i < c.h1; ++i) {
    for (int64_t j = c.w0; j < c.w1; ++j) {
      const float v = in[i * g.width + j];
      if (std::isnan(v)) return i * g.width + j;
      if (v > best) {
        best = v;
        at = i * g.width + j;
      }
    }
  }
  return at;
}

}  // namespace

void MaxPool2dForward(const Window2d& g, const float* x, int64_t rows, float* out) {
  const int64_t oh = g.OutHeight(), ow = g.OutWidth(), planes = rows * g.channels;
  const int64_t in_plane = g.height * g.width;
  const Windows w(g);
  for (int64_t p = 0; p < planes; ++p) {
    const float* in = x + p * in_plane;
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo)
        out[(p * oh + y) * ow + xo] = in[MaxAt(g, in, w.At(y, xo))];
  }
}

void MaxPool2dBackward(const Window2d& g, const float* x, int64_t rows, const float* dz,
                       float* dx) {
  const int64_t oh = g.OutHeight(), ow = g.OutWidth(), planes = rows * g.channels;
  const int64_t in_plane = g.height * g.width;
  std::fill(dx, dx + planes * in_plane, 0.0f);
  const Windows w(g);
  for (int64_t p = 0; p < planes; ++p) {
    const float* in = x + p * in_plane;
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo)
        dx[p * in_plane + MaxAt(g, in, w.At(y, xo))] += dz[(p * oh + y) * ow + xo];
  }
}

void AvgPool2dForward(const Window2d& g, const float* x, int64_t rows, float* out) {
  const int64_t oh = g.OutHeight(), ow = g.OutWidth(), planes = rows * g.channels;
  const Windows w(g);
  for (int64_t p = 0; p < planes; ++p) {
    const float* in = x + p * g.height * g.width;
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t xo = 0; xo < ow; ++xo) {
        const Clip c = w.At(y, xo);
        float sum = 0.0f;
        for (int64_t i = c.h0; i < c.h1; ++i)
          for (int64_t j = c.w0; j < c.w1; ++j) sum += in[i * g.width + j];
        out[(p * oh + y) * ow + xo] = sum / static_cast<float>(c.divisor);
      }
    }
  }
}

void AvgPool2dBackward(const Window2d& g, int64_t rows, const float* dz, float* dx) {
  const int64_t oh = g.OutHeight(), ow = g.OutWidth(), planes = rows * g.channels;
  const int64_t in_plane = g.height * g.width;
  std::fill(dx, dx + planes * in_plane, 0.0f);
  const Windows w(g);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t xo = 0; xo < ow; ++xo) {
        const Clip c = w.At(y, xo);
        const float share = dz[(p * oh + y) * ow + xo] / static_cast<float>(c.divisor);
        for (int64_t i = c.h0; i < c.h1; ++i)
          for (int64_t j = c.w0; j < c.w1; ++j) dx[p * in_plane + i * g.width + j] += share;
      }
    }
  }
}

namespace {

// A sample's stream of dropout draws in an epoch; draw `unit` of it decides that unit.
uint64_t DropoutStream(uint64_t seed, int64_t epoch, int64_t sample) {
  return MixSeed(MixSeed(seed ^ 0x64726f706f7574ull, uint64_t(epoch)), uint64_t(sample));
}
bool Keeps(uint64_t stream, int64_t unit, float p) {
  Rng r(stream);
  r.Skip(uint64_t(unit));
  return r.Uniform() >= p;
}

}  // namespace

bool DropoutKeeps(uint64_t seed, int64_t epoch, int64_t sample, int64_t unit, double p) {
  return Keeps(DropoutStream(seed, epoch, sample), unit, static_cast<float>(p));
}

void ApplyDropout(uint64_t seed, int64_t epoch, const int64_t* samples, int64_t rows, int64_t units,
                  double p, float* x, int64_t unit0) {
  if (p <= 0) return;
  const float keep_scale = static_cast<float>(1.0 / (1.0 - p));
  const float pf = static_cast<float>(p);
  for (int64_t r = 0; r < rows; ++r) {
    const uint64_t stream = DropoutStream(seed, epoch, samples[r]);
    float* row = x + r * units;
    for (int64_t u = 0; u < units; ++u)
      row[u] = Keeps(stream, unit0 + u, pf) ? row[u] * keep_scale : 0.0f;
  }
}

}  // namespace acan::nn
