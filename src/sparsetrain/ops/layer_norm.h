#pragma once
// Layer normalization over the features of each token (row), as torch.nn.LayerNorm:
//   y[t, c] = (x[t, c] - mean_t) * rstd_t * gamma[c] + beta[c],  rstd_t = 1 / sqrt(var_t + eps)
// with the biased variance. Statistics are summed in double, so results do not depend on the
// thread count.
#include "sparsetrain/core/tensor.h"

namespace sparsetrain {

// x, y [T x C]; gamma, beta [C]; saves mean and rstd [T] for the backward pass. y must not alias x.
void layer_norm_forward(ConstMatrixView x, const float* gamma, const float* beta, float eps, MatrixView y, float* mean,
                        float* rstd);

// From dy [T x C] and the forward's x, mean, rstd: dx += dL/dx (the residual stream accumulates),
// or with accumulate_dx false dx = 0 + dL/dx (the bits of zeroing dx first, without that pass);
// dgamma += dL/dgamma, dbeta += dL/dbeta. dgamma and dbeta are summed in blocks of 32 tokens,
// each in token order, and the blocks in order, whatever the thread count.
void layer_norm_backward(ConstMatrixView dy, ConstMatrixView x, const float* gamma, const float* mean,
                         const float* rstd, MatrixView dx, float* dgamma, float* dbeta, bool accumulate_dx = true);

}  // namespace sparsetrain
