#pragma once
// BlockSparseMatrix: block-CSR with square b x b blocks, b = 1 (CSR), 4, 8 or 16. One class for
// all block sizes: unstructured sparsity is the 1x1 case, so conversions, updates, validation
// and the transposed companion are written once.
//
// Storage: row_ptr [block_rows + 1], col [blocks] (first column of each block, ascending per
// block-row), values [blocks * b * b] row-major inside each block. Shapes that are not multiples
// of b keep whole edge blocks whose out-of-range entries are zero and stay zero (their gradient
// is zero because packed activations are zero-padded). Masks must be block-uniform.
#include "sparsetrain/formats/sparse_weight.h"
#include "sparsetrain/formats/transposed_pattern.h"
#include "sparsetrain/kernels/sparse_view.h"

namespace sparsetrain {

class BlockSparseMatrix final : public SparseWeight {
 public:
  BlockSparseMatrix(int64_t rows, int64_t cols, int block);

  FormatSpec format() const override { return FormatSpec::bcsr(block_); }
  int block() const { return block_; }
  BlockSparseView view() const;
  // W^T over values gathered into the calling thread's scratch (valid until its next call).
  BlockSparseView transposed_view() const;

  void assign(ConstMatrixView dense, const Mask& mask) override;
  void update_mask(const Mask& mask, std::span<AlignedBuffer<float>* const> companions = {}) override;
  void reserve(int64_t nnz) override;
  std::size_t values_capacity() const override { return values_.capacity(); }
  using SparseWeight::to_dense;
  void to_dense(MatrixView dense) const override;
  Mask mask() const override;
  int64_t nnz() const override { return nnz_; }
  void validate() const override;
  std::span<float> values() override { return {values_.data(), values_.size()}; }
  std::span<const float> values() const override { return {values_.data(), values_.size()}; }

  void forward(const PackedTokens& x, const float* bias, MatrixView y) const override;
  void backward_data(const PackedTokens& dy, MatrixView dx) const override;
  void backward_weights(const PackedTokens& dy, const PackedTokens& x, float* dvalues, bool accumulate) const override;
  // CSR: one fused sweep over W^T computes dX and dW (see csr_backward).
  void backward(const PackedTokens& dy, const PackedTokens& x, MatrixView dx, float* dvalues,
                bool accumulate) const override;
  void forward_bf16(const PackedTokensBf16& x, const float* bias, MatrixView y) const override;
  void backward_bf16(const PackedTokensBf16& dy, const PackedTokensBf16& x, MatrixView dx, float* dvalues,
                     bool accumulate) const override;
  std::size_t memory_bytes() const override;

 private:
  // Builds the next structure (in the calling thread's scratch) from the mask; returns its block count.
  int64_t scan_mask(const Mask& mask);
  int64_t in_range(int64_t br, int32_t col) const;  // entries of a block inside the shape
  void commit_structure();
  void remap(AlignedBuffer<float>& buffer);

  int block_;
  int64_t block_rows_;
  int64_t nnz_ = 0;
  AlignedBuffer<int32_t> row_ptr_, col_;
  AlignedBuffer<float> values_;
  int64_t next_blocks_ = 0;  // blocks of the scanned structure (held in the calling thread's scratch)
  TransposedPattern transposed_;
  AlignedBuffer<int32_t> slice_ptr_;  // CSR: column slices for the kernels
};

}  // namespace sparsetrain
