#pragma once
// A linear layer's training passes on a sparse weight, from the token-major tensors a model
// holds: Y = X W^T + b with X [T x in], W [out x in], Y [T x out].
//
// Packing is part of the op: the forward pass packs X into the layer's workspace and the backward
// pass reuses it, packing dY once for both backward kernels into a buffer of the calling thread
// that every layer shares (dY is needed only during the call; per-layer copies would add up to
// more memory than the sparse weights). RigL's dense gradient is a separate call
// so it can only run on the steps that ask for it.
#include "sparsetrain/core/precision.h"
#include "sparsetrain/core/tensor.h"
#include "sparsetrain/formats/sparse_weight.h"
#include "sparsetrain/kernels/dense_gemm_bf16.h"
#include "sparsetrain/kernels/packed_tokens.h"

namespace sparsetrain {

// In bf16 (mixed precision) X and dY are packed into bf16 and the weight's passes read its bf16
// copy (SparseWeight::refresh_bf16, which the caller keeps current); outputs and gradients stay
// float32.
struct LinearWorkspace {
  Precision precision = Precision::Fp32;
  PackedTokens x;        // packed input, kept from forward for backward-weights
  PackedTokensBf16 x16;  // the same in bf16
  Bf16Matrix dense_x16;  // a dense weight's input in bf16, token-major (models/linear.h)
};

// Y = X W^T + bias (bias may be null).
void linear_forward(const SparseWeight& w, const float* bias, ConstMatrixView x, MatrixView y, LinearWorkspace& ws);
// The same with X's `tokens` rows made on the fly while it is packed (see pack_tokens_from).
void linear_forward_from(const SparseWeight& w, const float* bias, int64_t tokens, const TokenRows& x, MatrixView y,
                         LinearWorkspace& ws);
// The same on the X that ws holds packed from an earlier forward (another weight, the same input).
void linear_forward_packed(const SparseWeight& w, const float* bias, const LinearWorkspace& ws, MatrixView y);

// From dY [T x out] and the X packed by the last forward: dX = dY W (skipped when dx.data is null),
// dvalues (+)= dW at the stored entries, dbias (+)= column sums of dY (skipped when null).
void linear_backward(const SparseWeight& w, ConstMatrixView dy, const LinearWorkspace& ws, MatrixView dx,
                     float* dvalues, float* dbias, bool accumulate = false);
// The same with dY's `tokens` rows made on the fly while it is packed (see pack_tokens_from).
void linear_backward_from(const SparseWeight& w, int64_t tokens, const TokenRows& dy, const LinearWorkspace& ws,
                          MatrixView dx, float* dvalues, float* dbias, bool accumulate = false);

// Dense dW [out x in] = dY^T X through oneDNN, for growth criteria (RigL) on update steps only.
void linear_dense_weight_grad(ConstMatrixView dy, ConstMatrixView x, MatrixView dw);

}  // namespace sparsetrain
