// The convolutional kernels against direct loops in double (the definitions, sharing no code
// with im2col or GEMM) and against finite differences of a scalar loss.
#include "nn/conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>

#include "nn/kernels.h"
#include "nn/rng.h"

namespace acan::nn {
namespace {

std::vector<float> Random(int64_t n, uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = r.Uniform(-1.0f, 1.0f);
  return v;
}

// x at (r, c, i, j) with zeros outside the plane.
double At(const Window2d& g, const std::vector<float>& x, int64_t r, int64_t c, int64_t i,
          int64_t j) {
  if (i < 0 || i >= g.height || j < 0 || j >= g.width) return 0;
  return x[size_t(((r * g.channels + c) * g.height + i) * g.width + j)];
}

// The definition: out[r, o, y, x] = b[o] + sum over c, ki, kj of w[o, c, ki, kj] * x[r, c, y*s -
// p + ki, x*s - p + kj].
std::vector<double> DirectConv(const Window2d& g, const std::vector<float>& x, int64_t rows,
                               const std::vector<float>& w, const std::vector<float>& b,
                               int64_t n) {
  const int64_t oh = g.OutHeight(), ow = g.OutWidth();
  std::vector<double> out(size_t(rows * n * oh * ow));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < n; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          double s = b.empty() ? 0 : b[size_t(o)];
          for (int64_t c = 0; c < g.channels; ++c)
            for (int64_t ki = 0; ki < g.kernel_h; ++ki)
              for (int64_t kj = 0; kj < g.kernel_w; ++kj)
                s += w[size_t(((o * g.channels + c) * g.kernel_h + ki) * g.kernel_w + kj)] *
                     At(g, x, r, c, y * g.stride - g.padding + ki, xo * g.stride - g.padding + kj);
          out[size_t(((r * n + o) * oh + y) * ow + xo)] = s;
        }
  return out;
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, double tol,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " at " << i;
  }
}

struct Case {
  Window2d g;
  int64_t n;
};

std::vector<Case> Cases() {
  auto w = [](int64_t c, int64_t h, int64_t wd, int64_t kh, int64_t kw, int64_t s, int64_t p) {
    Window2d g;
    g.channels = c, g.height = h, g.width = wd, g.kernel_h = kh, g.kernel_w = kw, g.stride = s,
    g.padding = p;
    return g;
  };
  return {{w(3, 7, 6, 3, 3, 1, 1), 4},
          {w(2, 8, 8, 3, 2, 2, 0), 3},
          {w(4, 5, 5, 1, 1, 1, 0), 5},
          {w(1, 9, 7, 5, 5, 2, 2), 2},
          {w(2, 4, 6, 4, 4, 1, 3), 3}};
}

TEST(ConvTest, ForwardIsTheDefinitionWithBiasAndOnWeightTiles) {
  InitBlas();
  for (const Case& k : Cases()) {
    const Window2d& g = k.g;
    ASSERT_TRUE(g.Valid());
    const int64_t rows = 3, plane = g.OutPlane();
    auto x = Random(rows * g.InputSize(), 1), w = Random(k.n * g.PatchSize(), 2),
         b = Random(k.n, 3);
    std::vector<float> out(size_t(rows * k.n * plane)), scratch;
    Conv2dForward(g, x.data(), rows, w.data(), g.PatchSize(), k.n, b.data(), out.data(), &scratch);
    ExpectNear(out, DirectConv(g, x, rows, w, b, k.n), 1e-5, "forward");
    Conv2dForward(g, x.data(), rows, w.data(), g.PatchSize(), k.n, nullptr, out.data(), &scratch);
    ExpectNear(out, DirectConv(g, x, rows, w, {}, k.n), 1e-5, "forward without bias");
    // A tile of output channels [1, n): rows of the weight, written as their own output.
    if (k.n < 2) continue;
    std::vector<float> tile(size_t(rows * (k.n - 1) * plane));
    Conv2dForward(g, x.data(), rows, w.data() + g.PatchSize(), g.PatchSize(), k.n - 1, b.data() + 1,
                  tile.data(), &scratch);
    const auto want = DirectConv(g, x, rows, w, b, k.n);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 1; o < k.n; ++o)
        for (int64_t p = 0; p < plane; ++p) {
          const double d = want[size_t((r * k.n + o) * plane + p)];
          ASSERT_NEAR(tile[size_t((r * (k.n - 1) + o - 1) * plane + p)], d,
                      1e-5 * (1 + std::abs(d)))
              << "tile";
        }
  }
}

TEST(ConvTest, GradientsAreTheDefinitionsAdjoints) {
  InitBlas();
  for (const Case& k : Cases()) {
    const Window2d& g = k.g;
    const int64_t rows = 2, oh = g.OutHeight(), ow = g.OutWidth(), plane = g.OutPlane();
    auto x = Random(rows * g.InputSize(), 4), w = Random(k.n * g.PatchSize(), 5),
         dz = Random(rows * k.n * plane, 6);
    // The definitions, scattered: each output's gradient to the inputs and weights it read.
    std::vector<double> dx(x.size()), gw(w.size()), gb(size_t(k.n));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < k.n; ++o)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t xo = 0; xo < ow; ++xo) {
            const double d = dz[size_t(((r * k.n + o) * oh + y) * ow + xo)];
            gb[size_t(o)] += d;
            for (int64_t c = 0; c < g.channels; ++c)
              for (int64_t ki = 0; ki < g.kernel_h; ++ki)
                for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
                  const int64_t i = y * g.stride - g.padding + ki,
                                j = xo * g.stride - g.padding + kj;
                  const size_t wi =
                      size_t(((o * g.channels + c) * g.kernel_h + ki) * g.kernel_w + kj);
                  gw[wi] += d * At(g, x, r, c, i, j);
                  if (i >= 0 && i < g.height && j >= 0 && j < g.width)
                    dx[size_t(((r * g.channels + c) * g.height + i) * g.width + j)] += d * w[wi];
                }
          }
    std::vector<float> got_dx(x.size(), 7.0f), got_gw(w.size(), 7.0f), got_gb(size_t(k.n)), scratch;
    Conv2dInputGrad(g, dz.data(), rows, w.data(), g.PatchSize(), k.n, got_dx.data(), &scratch);
    Conv2dWeightGrad(g, x.data(), rows, dz.data(), k.n, got_gw.data(), g.PatchSize(), &scratch);
    Conv2dBiasGrad(g, dz.data(), rows, k.n, got_gb.data());
    ExpectNear(got_dx, dx, 1e-5, "input gradient");
    ExpectNear(got_gw, gw, 1e-5, "weight gradient");
    ExpectNear(got_gb, gb, 1e-5, "bias gradient");

    // The input gradient of a slice of input channels [1, C): the weight's columns from the
    // slice's first, each row whole.
    if (g.channels < 2) continue;
    Window2d slice = g;
    slice.channels = g.channels - 1;
    const int64_t kk = g.kernel_h * g.kernel_w;
    std::vector<float> part(size_t(rows * slice.InputSize()));
    Conv2dInputGrad(slice, dz.data(), rows, w.data() + kk, g.PatchSize(), k.n, part.data(),
                    &scratch);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < slice.InputSize(); ++i)
        ASSERT_EQ(part[size_t(r * slice.InputSize() + i)],
                  got_dx[size_t(r * g.InputSize() + g.height * g.width + i)])
            << "input-channel slice";
  }
}

// d/dv of L = sum(out * R), by central differences, for the elements `at` of v.
double Numeric(const std::function<double()>& loss, std::vector<float>* v, size_t at) {
  const float eps = 1e-2f, keep = (*v)[at];
  (*v)[at] = keep + eps;
  const double up = loss();
  (*v)[at] = keep - eps;
  const double down = loss();
  (*v)[at] = keep;
  return (up - down) / (2.0 * eps);
}

TEST(ConvTest, GradientsMatchFiniteDifferences) {
  InitBlas();
  for (const Case& k : Cases()) {
    const Window2d& g = k.g;
    const int64_t rows = 2, plane = g.OutPlane();
    auto x = Random(rows * g.InputSize(), 7), w = Random(k.n * g.PatchSize(), 8),
         b = Random(k.n, 9), weights_of_loss = Random(rows * k.n * plane, 10);
    std::vector<float> out(weights_of_loss.size()), scratch;
    auto loss = [&] {
      Conv2dForward(g, x.data(), rows, w.data(), g.PatchSize(), k.n, b.data(), out.data(),
                    &scratch);
      double s = 0;
      for (size_t i = 0; i < out.size(); ++i) s += double(out[i]) * weights_of_loss[i];
      return s;
    };
    std::vector<float> dx(x.size()), gw(w.size()), gb(b.size());
    Conv2dInputGrad(g, weights_of_loss.data(), rows, w.data(), g.PatchSize(), k.n, dx.data(),
                    &scratch);
    Conv2dWeightGrad(g, x.data(), rows, weights_of_loss.data(), k.n, gw.data(), g.PatchSize(),
                     &scratch);
    Conv2dBiasGrad(g, weights_of_loss.data(), rows, k.n, gb.data());
    Rng pick(11);
    for (int t = 0; t < 12; ++t) {
      const size_t i = pick.Below(x.size()), j = pick.Below(w.size()), c = pick.Below(b.size());
      EXPECT_NEAR(dx[i], Numeric(loss, &x, i), 2e-3 * (1 + std::abs(dx[i]))) << "x " << i;
      EXPECT_NEAR(gw[j], Numeric(loss, &w, j), 2e-3 * (1 + std::abs(gw[j]))) << "w " << j;
      EXPECT_NEAR(gb[c], Numeric(loss, &b, c), 2e-3 * (1 + std::abs(gb[c]))) << "b " << c;
    }
  }
}

TEST(ConvTest, TheSameBytesOnAnyThread) {
  InitBlas();
  const Case k = Cases()[0];
  const int64_t rows = 4;
  auto x = Random(rows * k.g.InputSize(), 12), dz = Random(rows * k.n * k.g.OutPlane(), 13);
  auto run = [&] {
    std::vector<float> gw(size_t(k.n * k.g.PatchSize())), scratch;
    Conv2dWeightGrad(k.g, x.data(), rows, dz.data(), k.n, gw.data(), k.g.PatchSize(), &scratch);
    return gw;
  };
  const std::vector<float> here = run();
  std::vector<float> there;
  std::thread t([&] { there = run(); });
  t.join();
  ASSERT_EQ(0, std::memcmp(here.data(), there.data(), here.size() * sizeof(float)));
}

Window2d Pool(int64_t c, int64_t h, int64_t w, int64_t k, int64_t s, int64_t p) {
  Window2d g;
  g.channels = c, g.height = h, g.width = w, g.kernel_h = g.kernel_w = k, g.stride = s,
  g.padding = p;
  return g;
}

TEST(PoolTest, MaxAndAverageAreTheirDefinitions) {
  for (const Window2d& g : {Pool(2, 6, 6, 2, 2, 0), Pool(3, 7, 5, 3, 2, 1), Pool(1, 5, 5, 3, 1, 1),
                            Pool(2, 9, 8, 2, 3, 0)}) {
    const int64_t rows = 2, oh = g.OutHeight(), ow = g.OutWidth();
    auto x = Random(rows * g.InputSize(), 14), dz = Random(rows * g.channels * oh * ow, 15);
    std::vector<double> max(size_t(rows * g.channels * oh * ow)), avg(max.size()), dmax(x.size()),
        davg(x.size());
    for (int64_t pl = 0; pl < rows * g.channels; ++pl)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          double best = -INFINITY, sum = 0;
          int64_t best_at = -1, count = 0;
          for (int64_t ki = 0; ki < g.kernel_h; ++ki)
            for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
              const int64_t i = y * g.stride - g.padding + ki, j = xo * g.stride - g.padding + kj;
              // PyTorch's count_include_pad: the padding counts, what lies past it does not.
              if (i < g.height + g.padding && j < g.width + g.padding) ++count;
              if (i < 0 || i >= g.height || j < 0 || j >= g.width) continue;
              const int64_t at = pl * g.height * g.width + i * g.width + j;
              sum += x[size_t(at)];
              if (x[size_t(at)] > best) best = x[size_t(at)], best_at = at;
            }
          const size_t o = size_t((pl * oh + y) * ow + xo);
          max[o] = best;
          avg[o] = sum / double(count);
          dmax[size_t(best_at)] += dz[o];
          for (int64_t ki = 0; ki < g.kernel_h; ++ki)
            for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
              const int64_t i = y * g.stride - g.padding + ki, j = xo * g.stride - g.padding + kj;
              if (i < 0 || i >= g.height || j < 0 || j >= g.width) continue;
              davg[size_t(pl * g.height * g.width + i * g.width + j)] += dz[o] / double(count);
            }
        }
    std::vector<float> out(max.size()), dx(x.size());
    MaxPool2dForward(g, x.data(), rows, out.data());
    ExpectNear(out, max, 0, "max pool");
    MaxPool2dBackward(g, x.data(), rows, dz.data(), dx.data());
    ExpectNear(dx, dmax, 1e-6, "max pool backward");
    AvgPool2dForward(g, x.data(), rows, out.data());
    ExpectNear(out, avg, 1e-6, "average pool");
    AvgPool2dBackward(g, rows, dz.data(), dx.data());
    ExpectNear(dx, davg, 1e-6, "average pool backward");
  }
}

TEST(PoolTest, GradientsMatchFiniteDifferencesAndTiesGoToTheFirst) {
  const Window2d g = Pool(2, 6, 6, 3, 2, 1);
  const int64_t rows = 1, n_out = rows * g.channels * g.OutPlane();
  // Distinct values 0.01 apart, so no step of the differences reorders a window.
  std::vector<float> x(size_t(rows * g.InputSize()));
  Rng r(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * float(i);
  for (size_t i = x.size() - 1; i > 0; --i) std::swap(x[i], x[r.Below(i + 1)]);
  auto weights_of_loss = Random(n_out, 17);
  std::vector<float> out(static_cast<size_t>(n_out)), dmax(x.size()), davg(x.size());
  for (bool is_max : {true, false}) {
    auto loss = [&] {
      if (is_max) MaxPool2dForward(g, x.data(), rows, out.data());
      if (!is_max) AvgPool2dForward(g, x.data(), rows, out.data());
      double s = 0;
      for (size_t i = 0; i < out.size(); ++i) s += double(out[i]) * weights_of_loss[i];
      return s;
    };
    std::vector<float>& d = is_max ? dmax : davg;
    if (is_max) MaxPool2dBackward(g, x.data(), rows, weights_of_loss.data(), d.data());
    if (!is_max) AvgPool2dBackward(g, rows, weights_of_loss.data(), d.data());
    for (size_t i = 0; i < x.size(); ++i) {
      const float keep = x[i], eps = 2e-3f;
      x[i] = keep + eps;
      const double up = loss();
      x[i] = keep - eps;
      const double down = loss();
      x[i] = keep;
      EXPECT_NEAR(d[i], (up - down) / (2 * eps), 1e-3) << (is_max ? "max " : "avg ") << i;
    }
  }
  // A window of equal values sends its gradient to its first position alone.
  const Window2d flat = Pool(1, 2, 2, 2, 2, 0);
  const std::vector<float> same = {0.5f, 0.5f, 0.5f, 0.5f}, one = {1.0f};
  std::vector<float> dx(4);
  MaxPool2dBackward(flat, same.data(), 1, one.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<float>{1, 0, 0, 0}));
}

// PyTorch's MaxPool2d: the first NaN of a window wins (its output NaN, its gradient there), a
// window of -inf sends its gradient to its first position, a tie to the first of the greatest;
// on the unrolled 2 x 2 window and on a 3 x 3 one alike.
TEST(PoolTest, NanInfinityAndTiesPickWhatPyTorchPicks) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    std::vector<float> window;
    size_t picked;
  };
  for (const int k : {2, 3}) {
    const Window2d g = Pool(1, k, k, k, k, 0);
    std::vector<Case> cases = {{{1, nan, 3, nan}, 1},
                               {{nan, 5, 7, 1}, 0},
                               {{-inf, -inf, -inf, -inf}, 0},
                               {{-inf, 2, 2, 1}, 1},
                               {{0, 1, 4, 4}, 2}};
    for (Case& c : cases) {
      c.window.resize(size_t(k * k), -inf);  // a 3 x 3 window: the rest can never win
      if (k == 3) {  // the four values at (0,0), (0,1), (1,0), (1,1), as in the 2 x 2 window
        std::vector<float> w(9, -inf);
        const size_t at[4] = {0, 1, 3, 4};
        for (size_t i = 0; i < 4; ++i) w[at[i]] = c.window[i];
        c.window = w;
        c.picked = at[c.picked];
      }
      float out = 0;
      MaxPool2dForward(g, c.window.data(), 1, &out);
      const float want = c.window[c.picked];
      EXPECT_TRUE(std::isnan(want) ? std::isnan(out) : out == want) << k << "x" << k;
      std::vector<float> dx(c.window.size(), -1.0f);
      const float one = 1.0f;
      MaxPool2dBackward(g, c.window.data(), 1, &one, dx.data());
      for (size_t i = 0; i < dx.size(); ++i)
        EXPECT_EQ(dx[i], i == c.picked ? 1.0f : 0.0f) << k << "x" << k << " position " << i;
    }
  }
}

TEST(DropoutTest, TheMaskIsAPureFunctionOfSeedEpochSampleAndUnit) {
  const double p = 0.3;
  const int64_t units = 50, rows = 8;
  std::vector<int64_t> samples = {17, 3, 900, 4, 5, 61, 7, 1000000};
  auto ones = [&](int64_t n) { return std::vector<float>(size_t(n * units), 1.0f); };
  // The whole batch at once, or its rows in two tasks: the same bytes.
  auto whole = ones(rows);
  ApplyDropout(42, 2, samples.data(), rows, units, p, whole.data());
  auto first = ones(3), second = ones(rows - 3);
  ApplyDropout(42, 2, samples.data(), 3, units, p, first.data());
  ApplyDropout(42, 2, samples.data() + 3, rows - 3, units, p, second.data());
  first.insert(first.end(), second.begin(), second.end());
  ASSERT_EQ(0, std::memcmp(whole.data(), first.data(), whole.size() * sizeof(float)));
  const float kept = static_cast<float>(1.0 / (1.0 - p));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t u = 0; u < units; ++u)
      ASSERT_EQ(whole[size_t(r * units + u)],
                DropoutKeeps(42, 2, samples[size_t(r)], u, p) ? kept : 0.0f);
  // Another epoch, another seed: other masks; about p of the units dropped.
  int64_t same_epoch = 0, same_seed = 0, dropped = 0;
  const int64_t n = 200000;
  for (int64_t u = 0; u < n; ++u) {
    const bool k = DropoutKeeps(42, 2, 5, u, p);
    same_epoch += k == DropoutKeeps(42, 3, 5, u, p);
    same_seed += k == DropoutKeeps(43, 2, 5, u, p);
    dropped += !k;
  }
  EXPECT_NEAR(double(dropped) / n, p, 0.005);
  // Independent masks agree on p^2 + (1-p)^2 = 0.58 of the units.
  EXPECT_NEAR(double(same_epoch) / n, 0.58, 0.01);
  EXPECT_NEAR(double(same_seed) / n, 0.58, 0.01);
}

}  // namespace
}  // namespace acan::nn
