#include "sparsetrain/kernels/dense_gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>

#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"

namespace sparsetrain {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb,
                                    beta, c, ldc);
  if (status != dnnl_success)
    fail("oneDNN sgemm failed with status {} (M={}, N={}, K={})", static_cast<int>(status), m, n, k);
}

namespace {

constexpr int64_t kMinRowsPerThread = 64;

// dst = src^T, or dst += src^T with kAdd, through 16 x 16 tiles so every line of src is read once
// (rows of src a multiple of 4 KB apart would otherwise evict one another from L1). Threads split
// dst's rows; each element is written once, so any split gives the same bits.
template <bool kAdd>
void transpose_into(ConstMatrixView src, MatrixView dst) {
  constexpr int64_t kTile = 16;
  const int64_t row_tiles = (dst.rows + kTile - 1) / kTile;
  parallel_ranges(row_tiles, kMinRowsPerThread / kTile, [&](int64_t begin, int64_t end) {
    float tile[kTile][kTile];
    for (int64_t rt = begin; rt < end; ++rt) {
      const int64_t r0 = rt * kTile, nr = std::min(kTile, dst.rows - r0);
      for (int64_t c0 = 0; c0 < dst.cols; c0 += kTile) {
        const int64_t nc = std::min(kTile, dst.cols - c0);
        for (int64_t c = 0; c < nc; ++c) {
          const float* s = src.row(c0 + c) + r0;
          for (int64_t r = 0; r < nr; ++r) tile[r][c] = s[r];
        }
        for (int64_t r = 0; r < nr; ++r) {
          float* d = dst.row(r0 + r) + c0;
          for (int64_t c = 0; c < nc; ++c) d[c] = kAdd ? d[c] + tile[r][c] : tile[r][c];
        }
      }
    }
  });
}

}  // namespace

void dense_linear_fwd(ConstMatrixView x, ConstMatrixView w, const float* bias, MatrixView y) {
  if (x.cols != w.cols || y.rows != x.rows || y.cols != w.rows)
    fail("dense_linear_fwd: X [{} x {}], W [{} x {}], Y [{} x {}] do not fit Y = X W^T", x.rows, x.cols, w.rows,
         w.cols, y.rows, y.cols);
  float beta = 0.0f;
  if (bias != nullptr) {
    parallel_ranges(y.rows, kMinRowsPerThread, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) std::copy(bias, bias + y.cols, y.row(t));
    });
    beta = 1.0f;
  }
  if (x.rows >= kTransposedForwardTokens && w.cols >= w.rows) {
    thread_local AlignedBuffer<float> wt;
    wt.resize(static_cast<std::size_t>(w.rows * w.cols));
    const MatrixView wt_view{wt.data(), w.cols, w.rows, w.rows};  // [in x out]
    transpose_into<false>(w, wt_view);
    gemm(false, false, x.rows, w.rows, x.cols, 1.0f, x.data, x.ld, wt.data(), w.rows, beta, y.data, y.ld);
    return;
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
  if (dy.rows >= kTransposedGradTokens && dw.rows >= kTransposedGradWidening * dw.cols) {
    const int64_t outputs = dw.rows, inputs = dw.cols;
    thread_local AlignedBuffer<float> scratch;
    scratch.resize(static_cast<std::size_t>(std::min(kTransposedGradChunk, outputs) * inputs));
    for (int64_t o0 = 0; o0 < outputs; o0 += kTransposedGradChunk) {
      const int64_t n = std::min(kTransposedGradChunk, outputs - o0);
      // scratch [inputs x n] = X^T dY[:, o0 : o0 + n], then dW[o0 : o0 + n] (+)= its transpose
      gemm(true, false, inputs, n, x.rows, 1.0f, x.data, x.ld, dy.data + o0, dy.ld, 0.0f, scratch.data(), n);
      const ConstMatrixView part{scratch.data(), inputs, n, n};
      const MatrixView rows{dw.row(o0), n, inputs, dw.ld};
      accumulate ? transpose_into<true>(part, rows) : transpose_into<false>(part, rows);
    }
  } else {
    gemm(true, false, dy.cols, x.cols, dy.rows, 1.0f, dy.data, dy.ld, x.data, x.ld, accumulate ? 1.0f : 0.0f, dw.data,
         dw.ld);
  }
  if (dbias != nullptr) column_sums(dy, dbias, accumulate);
}

void column_sums(ConstMatrixView m, float* sums, bool accumulate) {
  column_sums_visiting(m, sums, accumulate, [](int64_t, int64_t, int64_t) {});
}

}  // namespace sparsetrain
