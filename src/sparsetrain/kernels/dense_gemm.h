#pragma once
// Dense GEMM through oneDNN (dnnl_sgemm, AVX-512 JIT): the dense path of the engine and the
// baseline every sparse figure is compared with. Row-major:
//   C[M x N] = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T.
#include <algorithm>
#include <cstdint>

#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/tensor.h"

namespace sparsetrain {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Dense linear layer, X [T x K], W [N x K], Y [T x N]:
void dense_linear_fwd(ConstMatrixView x, ConstMatrixView w, const float* bias, MatrixView y);   // Y = X W^T + b
void dense_linear_bwd_data(ConstMatrixView dy, ConstMatrixView w, MatrixView dx);               // dX = dY W
void dense_linear_bwd_weights(ConstMatrixView dy, ConstMatrixView x, MatrixView dw, float* dbias,
                              bool accumulate = false);                                         // dW = dY^T X
// sums[c] (+)= sum over the rows of m[r][c], rows in order (the bias gradient of the dense passes:
// the same bits for any thread count).
void column_sums(ConstMatrixView m, float* sums, bool accumulate);

// column_sums (sums may be null: none) with visit(t, begin, end) called on each row's part of the
// columns just before it is added, so a pass that reads m for another purpose (round_to_bf16)
// forms the sums in the same read. Threads split the columns and each walks the rows in order,
// which is what keeps the bits independent of the thread count.
template <typename Visit>
void column_sums_visiting(ConstMatrixView m, float* sums, bool accumulate, Visit visit) {
  constexpr int64_t kMinColumnsPerThread = 64;
  parallel_ranges(m.cols, kMinColumnsPerThread, [&](int64_t begin, int64_t end) {
    if (sums != nullptr && !accumulate) std::fill(sums + begin, sums + end, 0.0f);
    for (int64_t t = 0; t < m.rows; ++t) {
      visit(t, begin, end);
      if (sums == nullptr) continue;
      const float* row = m.row(t);
      for (int64_t n = begin; n < end; ++n) sums[n] += row[n];
    }
  });
}

// The forward of a layer that does not widen (K >= N), with T of at least this many tokens, runs
// 'N','N' on a transposed copy of W made per call, which oneDNN runs faster than 'N','T' on W at
// these shapes (bench dense_layouts: 2048 -> 512 at 327 vs 233 GFLOP/s, 512 -> 512 at 338 vs 278,
// T = 2048). The copy costs ~1 ns per weight, about what the faster product saves at T = 256.
inline constexpr int64_t kTransposedForwardTokens = 512;

// The weight gradient of a layer that widens at least kTransposedGradWidening times (the GPT's
// MLP input layer, its tied head [V x C]), with T of at least kTransposedGradTokens, is formed as
// its transpose X^T dY, kTransposedGradChunk outputs at a time in a buffer of the calling thread,
// and added transposed: oneDNN runs that product faster with the inputs as its short side (bench
// dense_layouts, T = 2048: 512 -> 8192 at 337 vs 278 GFLOP/s; 512 -> 2048 at 331 vs 292 in one
// run, even with the transposed add in another; at 512 -> 1536 the direct product is the faster,
// 350 vs 323). The transposed add costs ~0.8 ns per weight, about what the faster product saves at
// T = 700.
inline constexpr int64_t kTransposedGradTokens = 1024;
inline constexpr int64_t kTransposedGradWidening = 4;
inline constexpr int64_t kTransposedGradChunk = 4096;

}  // namespace sparsetrain
