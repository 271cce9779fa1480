#pragma once
// TransposedPattern: the block-sparse W^T of a block pattern, plus the permutation from each
// transposed block to its source block. Rebuilt when the mask changes (counting sort by
// column, O(blocks + cols)). It holds no values: gather_values() builds them from the source
// values, transposing each b x b block, into a buffer the caller owns (formats/gather.h).
#include <cstdint>

#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/kernels/sparse_view.h"

namespace sparsetrain {

class TransposedPattern {
 public:
  // src: the pattern of W [rows x cols] in blocks of `block` (values are not read).
  void build(const BlockSparseView& src);
  void reserve(int64_t blocks);
  int64_t values_size() const { return view_.blocks() * view_.block * view_.block; }
  // dst [values_size()]: W^T's values from W's, T float or Bf16.
  template <typename T>
  void gather_values(const T* src_values, T* dst) const;
  template <typename T>
  BlockSparseViewT<T> view(const T* values) const {
    return with_values(view_, values);
  }
  // perm()[i]: the source block of transposed block i.
  const int32_t* perm() const { return perm_.data(); }
  std::size_t memory_bytes() const;

 private:
  AlignedBuffer<int32_t> row_ptr_, col_, perm_, cursor_, slice_ptr_;
  BlockSparseView view_;
};

}  // namespace sparsetrain
