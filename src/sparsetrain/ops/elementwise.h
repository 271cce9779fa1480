#pragma once
// Element-wise sums of equal-shaped matrices: the residual connections of the transformers and the
// gradients that meet where a tensor feeds several branches.
#include "sparsetrain/core/tensor.h"

namespace sparsetrain {

// out = a + b; out may alias a or b.
void add(ConstMatrixView a, ConstMatrixView b, MatrixView out);
// y += x.
void add_into(ConstMatrixView x, MatrixView y);

}  // namespace sparsetrain
