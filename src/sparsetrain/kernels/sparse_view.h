#pragma once
// Plain views of sparse weights that kernels take. Kernels never see a format class: formats/
// owns storage, conversions and validation and hands these views over.
#include <cstdint>

#include "sparsetrain/core/bf16.h"

namespace sparsetrain {

// Columns per slice for the CSR kernels: a slice of a packed operand (1024 features x 64 tokens
// x 4 bytes = 256 KB) stays in a 1 MB L2 beside the streamed weights, partial sums and the other
// operand, where a whole 2048- to 4096-feature panel would not. 1536 (384 KB) made the fused
// backward of 512 -> 2048 and 512 -> 1536 layers (T = 2048) ~11% and ~5% slower.
inline constexpr int kSliceCols = 1024;

// Every view takes the type of its values, E: float, or Bf16 for the products of mixed precision
// (the structure is the same).
//
// W [rows x cols] stored as square b x b blocks, grouped by block-row (b = 1 is CSR).
// Edge blocks of a shape that is not a multiple of b are stored whole; their out-of-range
// entries are zero and never reported as nonzeros.
template <typename E>
struct BlockSparseViewT {
  int64_t rows = 0;
  int64_t cols = 0;
  int block = 1;                      // 1 (CSR), 4, 8 or 16
  int64_t block_rows = 0;             // ceil(rows / block)
  const int32_t* row_ptr = nullptr;   // [block_rows + 1], offsets in blocks
  const int32_t* col = nullptr;       // [blocks] first column of each block, ascending per row
  const E* values = nullptr;          // [blocks * block * block], row-major inside a block
  // CSR only, may be null: slice_ptr[r * (slices() + 1) + s] is the first entry of row r whose
  // column is >= s * kSliceCols (the last one is row_ptr[r + 1]).
  const int32_t* slice_ptr = nullptr;
  int64_t blocks() const { return row_ptr[block_rows]; }
  int64_t slices() const { return (cols + kSliceCols - 1) / kSliceCols; }
};

// W [rows x cols] with exactly n kept weights in every group of m consecutive inputs
// (cols % m == 0). Slot s of group g in row r is entry (r * groups + g) * n + s.
template <typename E>
struct NmViewT {
  int64_t rows = 0;
  int64_t cols = 0;
  int n = 2;
  int m = 4;
  const uint8_t* offset = nullptr;  // position inside the group, ascending within the group
  const E* values = nullptr;
  int64_t groups() const { return cols / m; }
};

// The N:M weight W [rows x cols] arranged for backward-data, dX = dY W: one entry per (row, group)
// with its N offsets and values, listed by column group, so a kernel keeps a group's M dX
// features in registers while it streams the rows. Within a group the entries are split by row
// slice (kSliceCols rows, so the slice of the packed dY panel stays in L2), then by bucket, then
// ascend by row: entries [ptr[b], ptr[b + 1]) with b = (slice * groups + g) * buckets + bucket.
// For M <= 4 there are 2^M buckets and bucket p holds the entries whose kept offsets are the set
// bits of p, so each bucket runs one fixed register pattern; otherwise there is one bucket.
template <typename E>
struct NmTransposedViewT {
  int64_t rows = 0;
  int64_t cols = 0;
  int n = 2;
  int m = 4;
  int64_t slices = 1;
  int buckets = 1;
  const int32_t* ptr = nullptr;     // [slices * groups * buckets + 1]
  const int32_t* row = nullptr;     // per entry: its row of W
  const uint8_t* offset = nullptr;  // per entry x n: positions inside the group, ascending
  const E* values = nullptr;        // per entry x n
  int64_t groups() const { return cols / m; }
};

using BlockSparseView = BlockSparseViewT<float>;

// The structure of v over other values (the bf16 copy of a weight, say).
template <typename T, typename E>
BlockSparseViewT<T> with_values(const BlockSparseViewT<E>& v, const T* values) {
  return {v.rows, v.cols, v.block, v.block_rows, v.row_ptr, v.col, values, v.slice_ptr};
}
using NmView = NmViewT<float>;
using NmTransposedView = NmTransposedViewT<float>;

}  // namespace sparsetrain
