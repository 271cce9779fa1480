#include "kernels/dense_gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>

#include "core/error.h"

namespace sparsetrain {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb,
                                    beta, c, ldc);
  if (status != dnnl_success)
    fail("oneDNN sgemm failed with status {} (M={}, N={}, K={})", static_cast<int>(status), m, n, k);
}

void dense_linear_fwd(ConstMatrixView x, ConstMatrixView w, const float* bias, MatrixView y) {
  if (x.cols != w.cols || y.rows != x.rows || y.cols != w.rows)
    fail("dense_linear_fwd: X [{} x {}], W [{} x {}], Y [{} x {}] do not fit Y = X W^T", x.rows, x.cols, w.rows,
         w.cols, y.rows, y.cols);
  float beta = 0.0f;
  if (bias != nullptr) {
    for (int64_t t = 0; t < y.rows; ++t)
      for (int64_t n = 0; n < y.cols; ++n) y.at(t, n) = bias[n];
    beta = 1.0f;
  }
  gemm(false, true, x.rows, w.rows, x.cols, 1.0f, x.data, x.ld, w.data, w.ld, beta, y.data, y.ld);
}

void dense_linear_bwd_data(ConstMatrixView dy, ConstMatrixView w, MatrixView dx) {
  if (dy.cols != w.rows || dx.rows != dy.rows || dx.cols != w.cols)
    fail("dense_linear_bwd_data: dY [{} x {}], W [{} x {}], dX [{} x {}] do not fit dX = dY W", dy.rows, dy.cols,
         w.rows, w.cols, dx.rows, dx.cols);
  gemm(false, false, dy.rows, w.cols, dy.cols, 1.0f, dy.data, dy.ld, w.data, w.ld, 0.0f, dx.data, dx.ld);
}

void dense_linear_bwd_weights(ConstMatrixView dy, ConstMatrixView x, MatrixView dw, float* dbias, bool accumulate) {
  if (dy.rows != x.rows || dw.rows != dy.cols || dw.cols != x.cols)
    fail("dense_linear_bwd_weights: dY [{} x {}], X [{} x {}], dW [{} x {}] do not fit dW = dY^T X", dy.rows,
         dy.cols, x.rows, x.cols, dw.rows, dw.cols);
  gemm(true, false, dy.cols, x.cols, dy.rows, 1.0f, dy.data, dy.ld, x.data, x.ld, accumulate ? 1.0f : 0.0f,
       dw.data, dw.ld);
  if (dbias == nullptr) return;
  if (!accumulate) std::fill(dbias, dbias + dy.cols, 0.0f);
  for (int64_t t = 0; t < dy.rows; ++t)
    for (int64_t n = 0; n < dy.cols; ++n) dbias[n] += dy.at(t, n);
}

}  // namespace sparsetrain
