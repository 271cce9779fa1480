#include "sparsetrain/ops/linear.h"

#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/kernels/dense_gemm.h"
#include "sparsetrain/kernels/spmm.h"

namespace sparsetrain {

void linear_forward(const SparseWeight& w, const float* bias, ConstMatrixView x, MatrixView y, LinearWorkspace& ws) {
  if (x.cols != w.cols()) fail("linear_forward: input has {} features but the weight has {} inputs", x.cols, w.cols());
  linear_forward_from(w, bias, x.rows, rows_of(x), y, ws);
}

void linear_forward_from(const SparseWeight& w, const float* bias, int64_t tokens, const TokenRows& x, MatrixView y,
                         LinearWorkspace& ws) {
  if (ws.precision == Precision::Bf16)
    pack_tokens_from(tokens, w.cols(), x, ws.x16);
  else
    pack_tokens_from(tokens, w.cols(), x, ws.x);
  linear_forward_packed(w, bias, ws, y);
}

void linear_forward_packed(const SparseWeight& w, const float* bias, const LinearWorkspace& ws, MatrixView y) {
  if (ws.precision == Precision::Bf16)
    w.forward_bf16(ws.x16, bias, y);
  else
    w.forward(ws.x, bias, y);
}

void linear_backward(const SparseWeight& w, ConstMatrixView dy, const LinearWorkspace& ws, MatrixView dx,
                     float* dvalues, float* dbias, bool accumulate) {
  if (dy.cols != w.rows())
    fail("linear_backward: output gradient has {} features but the weight has {} outputs", dy.cols, w.rows());
  linear_backward_from(w, dy.rows, rows_of(dy), ws, dx, dvalues, dbias, accumulate);
}

void linear_backward_from(const SparseWeight& w, int64_t tokens, const TokenRows& dy, const LinearWorkspace& ws,
                          MatrixView dx, float* dvalues, float* dbias, bool accumulate) {
  thread_local PackedTokens packed_dy;
  thread_local PackedTokensBf16 packed_dy16;
  thread_local std::vector<float> tile_sums;
  const int64_t tiles = (tokens + kTokenTile - 1) / kTokenTile;
  float* sums = nullptr;
  if (dbias != nullptr) {
    tile_sums.resize(static_cast<std::size_t>(tiles * w.rows()));
    sums = tile_sums.data();
  }
  if (ws.precision == Precision::Bf16) {
    pack_tokens_from(tokens, w.rows(), dy, packed_dy16, sums);
    w.backward_bf16(packed_dy16, ws.x16, dx, dvalues, accumulate);
  } else {
    pack_tokens_from(tokens, w.rows(), dy, packed_dy, sums);
    w.backward(packed_dy, ws.x, dx, dvalues, accumulate);
  }
  if (dbias != nullptr) bias_grad(sums, tiles, w.rows(), dbias, accumulate);
}

void linear_dense_weight_grad(ConstMatrixView dy, ConstMatrixView x, MatrixView dw) {
  dense_linear_bwd_weights(dy, x, dw, nullptr);
}

}  // namespace sparsetrain
