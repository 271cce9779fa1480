#pragma once
// Per-row column-slice pointers for CSR patterns (see BlockSparseView::slice_ptr): built with
// the structure, O(nnz + rows x slices), so the sliced kernels find each row's entries in each
// slice without searching.
#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/kernels/sparse_view.h"

namespace sparsetrain {

// Fills out for a CSR (block 1) pattern with more than one slice; leaves it empty otherwise.
void build_column_slices(const BlockSparseView& pattern, AlignedBuffer<int32_t>& out);

}  // namespace sparsetrain
