#pragma once
// Dense GEMM through oneDNN (dnnl_sgemm, AVX-512 JIT): the dense path of the engine and the
// baseline every sparse figure is compared with. Row-major:
//   C[M x N] = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T.
#include <cstdint>

#include "core/tensor.h"

namespace sparsetrain {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Dense linear layer, X [T x K], W [N x K], Y [T x N]:
void dense_linear_fwd(ConstMatrixView x, ConstMatrixView w, const float* bias, MatrixView y);   // Y = X W^T + b
void dense_linear_bwd_data(ConstMatrixView dy, ConstMatrixView w, MatrixView dx);               // dX = dY W
void dense_linear_bwd_weights(ConstMatrixView dy, ConstMatrixView x, MatrixView dw, float* dbias,
                              bool accumulate = false);                                         // dW = dY^T X

}  // namespace sparsetrain
