#include "sparsetrain/formats/column_slices.h"

namespace sparsetrain {

void build_column_slices(const BlockSparseView& pattern, AlignedBuffer<int32_t>& out) {
  const int64_t slices = pattern.slices();
  if (pattern.block != 1 || slices < 2) {
    out.resize(0);
    return;
  }
  out.resize(pattern.rows * (slices + 1));
  for (int64_t r = 0; r < pattern.rows; ++r) {
    int32_t k = pattern.row_ptr[r];
    const int32_t end = pattern.row_ptr[r + 1];
    int32_t* dst = out.data() + r * (slices + 1);
    for (int64_t s = 0; s < slices; ++s) {
      dst[s] = k;
      while (k < end && pattern.col[k] < (s + 1) * kSliceCols) ++k;
    }
    dst[slices] = end;
  }
}

}  // namespace sparsetrain
