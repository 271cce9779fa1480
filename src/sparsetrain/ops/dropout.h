#pragma once
// Inverted dropout (torch.nn.Dropout in training mode): each element is kept with probability
// 1 - p and scaled by 1 / (1 - p); with inverted = false kept elements are not scaled (the caller
// scales by 1 - p at evaluation instead, as the SET reference code does). The keep decisions of a call are element i of a Philox stream,
// so a step's dropout depends only on the stream's key, never on the thread count.
#include <cstdint>

#include "sparsetrain/core/philox.h"
#include "sparsetrain/core/tensor.h"

namespace sparsetrain {

// y = x * keep / (1 - p) with keep[i] = rng.uniform(i) >= p for the i-th element in row-major
// order of x; keep [rows * cols] is saved for the backward pass. 0 <= p < 1; y may alias x.
// x's rows are rows first_row, first_row + 1, ... of a larger batch (a data-parallel rank's
// share), whose element indices the stream is read at.
void dropout_forward(float p, const Philox& rng, ConstMatrixView x, MatrixView y, uint8_t* keep, bool inverted = true,
                     int64_t first_row = 0);
// dx = dy * keep / (1 - p) (or dy * keep when not inverted); dx may alias dy.
void dropout_backward(float p, const uint8_t* keep, ConstMatrixView dy, MatrixView dx, bool inverted = true);

}  // namespace sparsetrain
