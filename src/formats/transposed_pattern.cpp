#include "formats/transposed_pattern.h"

#include <algorithm>

#include "core/parallel.h"
#include "formats/column_slices.h"

namespace sparsetrain {

void TransposedPattern::reserve(int64_t blocks, int block) {
  col_.reserve(blocks);
  perm_.reserve(blocks);
  values_.reserve(blocks * block * block);
}

void TransposedPattern::build(const BlockSparseView& src) {
  const int b = src.block;
  const int64_t t_rows = (src.cols + b - 1) / b;
  const int64_t blocks = src.blocks();
  col_.resize(blocks);
  perm_.resize(blocks);
  values_.resize(blocks * b * b);
  // Counting sort by column, split by W's block-rows: each thread counts its rows' blocks per
  // column, the per-thread counts become per-thread cursors, and each thread places its own
  // blocks. Threads own consecutive W rows, so every transposed row comes out ascending.
  const int nth = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(num_threads(), src.block_rows)));
  cursor_.assign(static_cast<std::size_t>(nth * t_rows), 0);
  row_ptr_.resize(t_rows + 1);
  parallel_run(nth, [&](int ith, int n) {
    int64_t begin, end;
    balance_even(src.block_rows, ith, n, begin, end);
    int32_t* count = cursor_.data() + ith * t_rows;
    for (int32_t k = src.row_ptr[begin]; k < src.row_ptr[end]; ++k) ++count[src.col[k] / b];
  });
  int32_t total = 0;
  for (int64_t c = 0; c < t_rows; ++c) {
    row_ptr_[c] = total;
    for (int t = 0; t < nth; ++t) {
      int32_t count = cursor_[t * t_rows + c];
      cursor_[t * t_rows + c] = total;
      total += count;
    }
  }
  row_ptr_[t_rows] = total;
  parallel_run(nth, [&](int ith, int n) {
    int64_t begin, end;
    balance_even(src.block_rows, ith, n, begin, end);
    int32_t* cursor = cursor_.data() + ith * t_rows;
    for (int64_t br = begin; br < end; ++br)
      for (int32_t k = src.row_ptr[br]; k < src.row_ptr[br + 1]; ++k) {
        int32_t slot = cursor[src.col[k] / b]++;
        col_[slot] = static_cast<int32_t>(br * b);
        perm_[slot] = k;
      }
  });
  view_ = {src.cols, src.rows, b, t_rows, row_ptr_.data(), col_.data(), values_.data()};
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
