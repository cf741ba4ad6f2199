// Numeric kernels of the five task types, over row-major float32 blocks. Every function is a
// pure function of its arguments and runs single-threaded (OpenBLAS is set to one thread by
// InitBlas: the handlers, not BLAS, are the parallelism). The same inputs give bitwise the same
// outputs on the same machine and build. Thread-safe once InitBlas has run.
#pragma once

#include <cstdint>

#include "acan/job.h"
#include "acan/status.h"

namespace acan::nn {

// Sets OpenBLAS to one thread, once per process. Every entry point of the module that computes
// calls it; call it early if other code uses BLAS too.
void InitBlas();

// c[m,n] = alpha * op(a) * op(b) + beta * c, row-major, op = transpose when ta/tb.
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// out[rows, n] = a[rows, k] * w^T + bias, where w is an n x k block with leading dimension ldw
// (a tile of a larger weight) and bias (n values) may be null.
void DenseForward(const float* a, int64_t rows, int64_t k, const float* w, int64_t ldw, int64_t n,
                  const float* bias, float* out);

// x <- act(x), elementwise.
void ApplyActivation(Activation act, float* x, int64_t n);
// g <- g * act'(z), given h = act(z) (every supported activation's derivative is a function of h).
void ApplyActivationGrad(Activation act, const float* h, float* g, int64_t n);

struct LossValue {
  double loss = 0;      // scale * sum of per-sample losses
  int64_t correct = 0;  // classification: rows whose argmax equals the label
};

// Loss of z[rows, outputs] against targets: mse takes targets[rows, outputs]; softmax cross
// entropy takes one label per row (an integral float in [0, outputs)). scale is 1/B for the full
// mini-batch B. When dz is not null it receives d(loss)/dz[rows, outputs].
Result<LossValue> ComputeLoss(LossKind kind, const float* z, int64_t rows, int64_t outputs,
                              const float* targets, double scale, float* dz);

// gw[n, k] (leading dimension ldgw) = dz[rows, n]^T * a[rows, k]; the weight-gradient tile.
void WeightGrad(const float* dz, int64_t ldz, const float* a, int64_t lda, int64_t rows, int64_t n,
                int64_t k, float* gw, int64_t ldgw);
// gb[n] = sum over rows of dz[rows, n], summed in row order.
void BiasGrad(const float* dz, int64_t ldz, int64_t rows, int64_t n, float* gb);
// da[rows, k] = dz[rows, n] * w, where w is an n x k block with leading dimension ldw.
void InputGrad(const float* dz, int64_t ldz, int64_t rows, int64_t n, const float* w, int64_t ldw,
               int64_t k, float* da, int64_t ldda);

// SGD on n values: without momentum (v == nullptr) w_out = w - lr*g; with momentum
// v_out = m*v + g, w_out = w - lr*v_out. w_out may alias w and v_out may alias v.
void SgdUpdate(const float* w, const float* g, const float* v, float lr, float momentum, int64_t n,
               float* w_out, float* v_out);

}  // namespace acan::nn
