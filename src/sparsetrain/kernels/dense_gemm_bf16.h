#pragma once
// Dense bf16 products through oneDNN matmul primitives, for bf16 mixed precision: operands in
// bf16, products accumulated in fp32, fp32 outputs. Row-major, as dense_gemm.h:
//   C[M x N] = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T.
//
// A dense linear layer keeps fp32 master weights and a bf16 copy of them (made from them at each
// forward), takes fp32 token-major activations and gradients, and converts them to bf16 here
// (round to nearest even, core/bf16.h) into buffers of the calling thread that are reused from
// call to call.
//
// Where oneDNN has no native bf16 (its ISA below avx512_core_bf16: a CPU without AVX512-BF16, or
// --onednn-max-isa below it), the same products run with the bf16 operands widened to fp32
// through oneDNN's sgemm: still bf16 operands and fp32 accumulation, at about fp32's speed
// (oneDNN's own bf16 there is emulated and 2.6 times slower, or missing below AVX-512). Dispatch
// kernel "dense_bf16" names the path: "onednn_matmul" or "widened_sgemm". Shapes that do not fit,
// and any refusal by oneDNN, are errors naming the product, its shapes and oneDNN's status.
#include <cstdint>

#include "sparsetrain/core/bf16.h"
#include "sparsetrain/core/tensor.h"

namespace sparsetrain {

// A read-only row-major bf16 matrix: rows x cols, ld elements between the starts of rows.
struct ConstBf16MatrixView {
  const Bf16* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;  // >= cols
  const Bf16* row(int64_t r) const { return data + r * ld; }
};

// C = alpha * op(A) op(B) + beta * C with A, B in bf16 and C in fp32. beta = 0 overwrites C
// without reading it (NaN there does not propagate); any other beta reads it (oneDNN's sum
// post-op). K = 0 leaves beta * C (zeros for beta = 0).
void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const Bf16* a, int64_t lda,
               const Bf16* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Dense linear layer in bf16, X [T x K] and dY [T x N] in fp32, W [N x K] the bf16 copy of the
// weights, outputs in fp32:
void dense_linear_fwd_bf16(ConstMatrixView x, ConstBf16MatrixView w, const float* bias,
                           MatrixView y);                                                   // Y = X W^T + b
void dense_linear_bwd_data_bf16(ConstMatrixView dy, ConstBf16MatrixView w, MatrixView dx);  // dX = dY W
// dW = dY^T X (added to dW with accumulate), and db = column sums of the fp32 dY (the same
// bits as dense_linear_bwd_weights' db) where dbias is not null.
void dense_linear_bwd_weights_bf16(ConstMatrixView dy, ConstMatrixView x, MatrixView dw, float* dbias,
                                   bool accumulate = false);

}  // namespace sparsetrain
