#pragma once
// TransposedPattern: the block-sparse W^T of a block pattern, plus the permutation from each
// transposed block to its source block. Rebuilt when the mask changes (counting sort by
// column, O(blocks + cols)); its values are refreshed from the source values by one gather,
// transposing each b x b block, whenever the source values change.
#include <cstdint>

#include "core/aligned_buffer.h"
#include "kernels/sparse_view.h"

namespace sparsetrain {

class TransposedPattern {
 public:
  // src: the pattern of W [rows x cols] in blocks of `block` (values are not read).
  void build(const BlockSparseView& src);
  void reserve(int64_t blocks, int block);
  void refresh(const float* src_values);
  BlockSparseView view() const { return view_; }
  // perm()[i]: the source block of transposed block i.
  const int32_t* perm() const { return perm_.data(); }
  std::size_t memory_bytes() const;

 private:
  AlignedBuffer<int32_t> row_ptr_, col_, perm_, cursor_, slice_ptr_;
  AlignedBuffer<float> values_;
  BlockSparseView view_;
};

}  // namespace sparsetrain
