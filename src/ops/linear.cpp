#include "ops/linear.h"

#include "kernels/dense_gemm.h"
#include "kernels/spmm.h"

namespace sparsetrain {

void linear_forward(const SparseWeight& w, const float* bias, ConstMatrixView x, MatrixView y, LinearWorkspace& ws) {
  pack_tokens(x, ws.x);
  w.forward(ws.x, bias, y);
}

void linear_backward(const SparseWeight& w, ConstMatrixView dy, LinearWorkspace& ws, MatrixView dx, float* dvalues,
                     float* dbias, bool accumulate) {
  thread_local PackedTokens packed_dy;
  pack_tokens(dy, packed_dy);
  w.backward(packed_dy, ws.x, dx, dvalues, accumulate);
  if (dbias != nullptr) bias_grad(packed_dy, dbias, accumulate);
}

void linear_dense_weight_grad(ConstMatrixView dy, ConstMatrixView x, MatrixView dw) {
  dense_linear_bwd_weights(dy, x, dw, nullptr);
}

}  // namespace sparsetrain
