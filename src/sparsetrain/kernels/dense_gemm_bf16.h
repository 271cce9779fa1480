#pragma once
// Dense bf16 products through oneDNN matmul primitives, for bf16 mixed precision: operands in
// bf16, products accumulated in fp32, fp32 outputs. Row-major, as dense_gemm.h:
//   C[M x N] = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T.
//
// A dense linear layer keeps fp32 master weights and a bf16 copy of them (written by the
// optimizer), and rounds its fp32 token-major activations and gradients to bf16 once each
// (round_to_bf16, round to nearest even as core/bf16.h): the forward pass keeps the rounded X for
// backward-weights, the backward pass rounds dY once for both of its products.
//
// Where oneDNN has no native bf16 (its ISA below avx512_core_bf16: a CPU without AVX512-BF16, or
// --onednn-max-isa below it), the same products run with the bf16 operands widened to fp32
// through oneDNN's sgemm: still bf16 operands and fp32 accumulation, at about fp32's speed
// (oneDNN's own bf16 there is emulated and 2.6 times slower, or missing below AVX-512). Dispatch
// kernel "dense_bf16" names the path: "onednn_matmul" or "widened_sgemm". Shapes that do not fit,
// and any refusal by oneDNN, are errors naming the product, its shapes and oneDNN's status.
#include <cstdint>

#include "sparsetrain/core/aligned_buffer.h"
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

// A bf16 copy of an fp32 matrix, contiguous (ld = cols), kept by its owner between passes.
struct Bf16Matrix {
  AlignedBuffer<Bf16> values;
  int64_t rows = 0;
  int64_t cols = 0;
  ConstBf16MatrixView view() const { return {values.data(), rows, cols, cols}; }
};

// dst = src rounded to bf16. Where sums is not null, also sums (+)= the column sums of the fp32
// src, the same bits as column_sums (kernels/dense_gemm.h): one read of a gradient gives both
// its bf16 copy and the bias gradient.
void round_to_bf16(ConstMatrixView src, Bf16Matrix& dst, float* sums = nullptr, bool accumulate = false);

// Dense linear layer in bf16, X [T x K] and dY [T x N] rounded by round_to_bf16, W [N x K] the
// weights' bf16 copy, outputs in fp32:
void dense_linear_fwd_bf16(ConstBf16MatrixView x, ConstBf16MatrixView w, const float* bias,
                           MatrixView y);                                                       // Y = X W^T + b
void dense_linear_bwd_data_bf16(ConstBf16MatrixView dy, ConstBf16MatrixView w, MatrixView dx);  // dX = dY W
// dW = dY^T X, added to dW with accumulate.
void dense_linear_bwd_weights_bf16(ConstBf16MatrixView dy, ConstBf16MatrixView x, MatrixView dw,
                                   bool accumulate = false);

}  // namespace sparsetrain
