#pragma once
// Embedding lookups: rows of a table [V x C] gathered by id, and the gradient scattered back.
#include <cstdint>
#include <span>

#include "sparsetrain/core/tensor.h"

namespace sparsetrain {

// out[t] = table[ids[t]], or out[t] += table[ids[t]] when accumulate. Every id must be in
// [0, V): an id outside is an Error naming the position and the id.
void embedding_forward(ConstMatrixView table, std::span<const int32_t> ids, MatrixView out, bool accumulate = false);

// dtable[ids[t]] += dout[t] for every t, in token order per table row, whatever the thread count.
void embedding_backward(ConstMatrixView dout, std::span<const int32_t> ids, MatrixView dtable);

}  // namespace sparsetrain
