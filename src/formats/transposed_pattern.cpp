#include "formats/transposed_pattern.h"

#include <algorithm>

#include "formats/column_slices.h"

namespace sparsetrain {

void TransposedPattern::reserve(int64_t blocks, int block) {
  col_.reserve(blocks);
  perm_.reserve(blocks);
  values_.reserve(blocks * block * block);
}

void TransposedPattern::build(const BlockSparseView& src) {
  const int b = src.block;
  const int64_t t_block_rows = (src.cols + b - 1) / b;
  const int64_t blocks = src.blocks();
  row_ptr_.assign(t_block_rows + 1, 0);
  col_.resize(blocks);
  perm_.resize(blocks);
  values_.resize(blocks * b * b);
  for (int64_t k = 0; k < blocks; ++k) ++row_ptr_[src.col[k] / b + 1];
  for (int64_t r = 0; r < t_block_rows; ++r) row_ptr_[r + 1] += row_ptr_[r];
  // Rows of W visited in order, so each transposed row's columns come out ascending.
  cursor_.resize(t_block_rows);
  std::copy(row_ptr_.begin(), row_ptr_.begin() + t_block_rows, cursor_.begin());
  for (int64_t br = 0; br < src.block_rows; ++br)
    for (int32_t k = src.row_ptr[br]; k < src.row_ptr[br + 1]; ++k) {
      int32_t slot = cursor_[src.col[k] / b]++;
      col_[slot] = static_cast<int32_t>(br * b);
      perm_[slot] = k;
    }
  view_ = {src.cols, src.rows, b, t_block_rows, row_ptr_.data(), col_.data(), values_.data()};
  build_column_slices(view_, slice_ptr_);
  view_.slice_ptr = slice_ptr_.empty() ? nullptr : slice_ptr_.data();
}

void TransposedPattern::refresh(const float* src_values) {
  const int b = view_.block;
  const int64_t blocks = view_.blocks();
  float* dst = values_.data();
  if (b == 1) {
    for (int64_t k = 0; k < blocks; ++k) dst[k] = src_values[perm_[k]];
    return;
  }
  const int64_t bb = static_cast<int64_t>(b) * b;
  for (int64_t k = 0; k < blocks; ++k) {
    const float* s = src_values + perm_[k] * bb;
    float* d = dst + k * bb;
    for (int i = 0; i < b; ++i)
      for (int j = 0; j < b; ++j) d[j * b + i] = s[i * b + j];
  }
}

}  // namespace sparsetrain
