#include "nn/kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>

namespace acan::nn {

void InitBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
              static_cast<blasint>(ldc));
}

void DenseForward(const float* a, int64_t rows, int64_t k, const float* w, int64_t ldw, int64_t n,
                  const float* bias, float* out) {
  float beta = 0.0f;
  if (bias != nullptr) {
    for (int64_t r = 0; r < rows; ++r) std::copy(bias, bias + n, out + r * n);
    beta = 1.0f;
  }
  Gemm(false, true, rows, n, k, 1.0f, a, k, w, ldw, beta, out, n);
}

void ApplyActivation(Activation act, float* x, int64_t n) {
  switch (act) {
    case Activation::kRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
      break;
    case Activation::kTanh:
      for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      break;
    case Activation::kSigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = 1.0f / (1.0f + std::exp(-x[i]));
      break;
    case Activation::kIdentity:
      break;
  }
}

void ApplyActivationGrad(Activation act, const float* h, float* g, int64_t n) {
  switch (act) {
    case Activation::kRelu:
      for (int64_t i = 0; i < n; ++i) g[i] = h[i] > 0.0f ? g[i] : 0.0f;
      break;
    case Activation::kTanh:
      for (int64_t i = 0; i < n; ++i) g[i] *= 1.0f - h[i] * h[i];
      break;
    case Activation::kSigmoid:
      for (int64_t i = 0; i < n; ++i) g[i] *= h[i] * (1.0f - h[i]);
      break;
    case Activation::kIdentity:
      break;
  }
}

Result<LossValue> ComputeLoss(LossKind kind, const float* z, int64_t rows, int64_t outputs,
                              const float* targets, double scale, float* dz) {
  LossValue v;
  if (kind == LossKind::kMse) {
    for (int64_t i = 0; i < rows * outputs; ++i) {
      const double d = static_cast<double>(z[i]) - targets[i];
      v.loss += 0.5 * d * d;
      if (dz != nullptr) dz[i] = static_cast<float>(scale * d);
    }
    v.loss *= scale;
    return v;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float t = targets[r];
    const int64_t label = static_cast<int64_t>(t);
    if (!(t >= 0) || static_cast<float>(label) != t || label >= outputs) {
      return Status::InvalidArgument("softmax_cross_entropy: row " + std::to_string(r) +
                                     " has label " + std::to_string(t) +
                                     ", expected an integer class in [0, " +
                                     std::to_string(outputs) + "); check the data's labels");
    }
    const float* zr = z + r * outputs;
    const int64_t arg = std::max_element(zr, zr + outputs) - zr;
    const float zmax = zr[arg];
    double sum = 0;
    for (int64_t o = 0; o < outputs; ++o) sum += std::exp(static_cast<double>(zr[o] - zmax));
    const double log_sum = std::log(sum);
    v.loss += log_sum - (zr[label] - zmax);
    if (arg == label) ++v.correct;
    if (dz != nullptr) {
      float* dr = dz + r * outputs;
      for (int64_t o = 0; o < outputs; ++o) {
        const double p = std::exp(static_cast<double>(zr[o] - zmax) - log_sum);
        dr[o] = static_cast<float>(scale * (p - (o == label ? 1.0 : 0.0)));
      }
    }
  }
  v.loss *= scale;
  return v;
}

void WeightGrad(const float* dz, int64_t ldz, const float* a, int64_t lda, int64_t rows, int64_t n,
                int64_t k, float* gw, int64_t ldgw) {
  Gemm(true, false, n, k, rows, 1.0f, dz, ldz, a, lda, 0.0f, gw, ldgw);
}

void BiasGrad(const float* dz, int64_t ldz, int64_t rows, int64_t n, float* gb) {
  std::fill(gb, gb + n, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* d = dz + r * ldz;
    for (int64_t j = 0; j < n; ++j) gb[j] += d[j];
  }
}

void InputGrad(const float* dz, int64_t ldz, int64_t rows, int64_t n, const float* w, int64_t ldw,
               int64_t k, float* da, int64_t ldda) {
  Gemm(false, false, rows, k, n, 1.0f, dz, ldz, w, ldw, 0.0f, da, ldda);
}

void SgdUpdate(const float* w, const float* g, const float* v, float lr, float momentum, int64_t n,
               float* w_out, float* v_out) {
  if (v == nullptr) {
    for (int64_t i = 0; i < n; ++i) w_out[i] = w[i] - lr * g[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float vi = momentum * v[i] + g[i];
    v_out[i] = vi;
    w_out[i] = w[i] - lr * vi;
  }
}

}  // namespace acan::nn
