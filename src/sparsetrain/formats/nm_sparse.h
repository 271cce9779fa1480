#pragma once
// NmMatrix: N:M structured sparsity along the input dimension: every group of M consecutive
// inputs of a row keeps exactly N weights (2:4 is NVIDIA's form; 1:4, 2:8 and others work too).
//
// Storage: values and in-group offsets (uint8) for rows x (cols / M) x N entries, slots of a
// group ascending by offset. W^T is not N:M, so backward-data runs on a companion that lists the
// same entries by column group and kept pattern (NmTransposedView), rebuilt with the structure;
// its values are gathered from values() through a stored permutation on every backward-data
// call (formats/gather.h). The shape needs cols % M == 0.
#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/formats/sparse_weight.h"
#include "sparsetrain/kernels/sparse_view.h"

namespace sparsetrain {

class NmMatrix final : public SparseWeight {
 public:
  NmMatrix(int64_t rows, int64_t cols, int n, int m);

  FormatSpec format() const override { return FormatSpec::nm(n_, m_); }
  NmView view() const { return {rows_, cols_, n_, m_, offset_.data(), values_.data()}; }
  // Valid until the calling thread's next call (its values live in that thread's scratch).
  NmTransposedView transposed_view() const;

  void assign(ConstMatrixView dense, const Mask& mask) override;
  void update_mask(const Mask& mask, std::span<AlignedBuffer<float>* const> companions = {}) override;
  void reserve(int64_t) override {}  // the entry count is fixed by the shape
  std::size_t values_capacity() const override { return values_.size(); }
  using SparseWeight::to_dense;
  void to_dense(MatrixView dense) const override;
  Mask mask() const override;
  int64_t nnz() const override { return static_cast<int64_t>(values_.size()); }
  void validate() const override;
  std::span<float> values() override { return {values_.data(), values_.size()}; }
  std::span<const float> values() const override { return {values_.data(), values_.size()}; }

  void forward(const PackedTokens& x, const float* bias, MatrixView y) const override;
  void backward_data(const PackedTokens& dy, MatrixView dx) const override;
  void backward_weights(const PackedTokens& dy, const PackedTokens& x, float* dvalues, bool accumulate) const override;
  void forward_bf16(const PackedTokensBf16& x, const float* bias, MatrixView y) const override;
  void backward_bf16(const PackedTokensBf16& dy, const PackedTokensBf16& x, MatrixView dx, float* dvalues,
                     bool accumulate) const override;
  std::size_t memory_bytes() const override;

 private:
  // Reads the kept offsets of every group into next_offset_, checking exactly N per group.
  void scan_mask(const Mask& mask);
  void commit_structure();
  void remap(AlignedBuffer<float>& buffer);

  int n_, m_;
  int64_t groups_;
  AlignedBuffer<uint8_t> offset_, next_offset_;
  AlignedBuffer<float> values_;
  // The backward-data companion, one entry per (row, group): see NmTransposedView.
  int64_t t_slices_ = 1;
  int t_buckets_ = 1;
  AlignedBuffer<int32_t> t_ptr_, t_row_, t_cursor_;  // t_cursor_: sort scratch
  AlignedBuffer<int32_t> t_source_;                  // per entry: its (row, group) index r * groups + g in W
  AlignedBuffer<uint8_t> t_offset_;
};

}  // namespace sparsetrain
