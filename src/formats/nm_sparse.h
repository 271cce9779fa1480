#pragma once
// NmMatrix: N:M structured sparsity along the input dimension: every group of M consecutive
// inputs of a row keeps exactly N weights (2:4 is NVIDIA's form; 1:4, 2:8 and others work too).
//
// Storage: values and in-group offsets (uint8) for rows x (cols / M) x N entries, slots of a
// group ascending by offset. W^T is not N:M, so backward-data runs on a CSR transposed companion
// built from the same entries. The shape needs cols % M == 0.
#include "formats/sparse_weight.h"
#include "formats/transposed_pattern.h"
#include "kernels/sparse_view.h"

namespace sparsetrain {

class NmMatrix final : public SparseWeight {
 public:
  NmMatrix(int64_t rows, int64_t cols, int n, int m);

  FormatSpec format() const override { return FormatSpec::nm(n_, m_); }
  NmView view() const { return {rows_, cols_, n_, m_, offset_.data(), values_.data()}; }
  BlockSparseView transposed_view();

  void assign(ConstMatrixView dense, const Mask& mask) override;
  void update_mask(const Mask& mask) override;
  void reserve(int64_t) override {}  // the entry count is fixed by the shape
  using SparseWeight::to_dense;
  void to_dense(MatrixView dense) const override;
  Mask mask() const override;
  int64_t nnz() const override { return static_cast<int64_t>(values_.size()); }
  void validate() const override;
  std::span<float> values() override { return {values_.data(), values_.size()}; }
  std::span<const float> values() const override { return {values_.data(), values_.size()}; }

  void forward(const PackedTokens& x, const float* bias, MatrixView y) const override;
  void backward_data(const PackedTokens& dy, MatrixView dx) override;
  void backward_weights(const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                        bool accumulate) const override;

 private:
  // Reads the kept offsets of every group into next_offset_, checking exactly N per group.
  void scan_mask(const Mask& mask);
  void commit_structure();

  int n_, m_;
  int64_t groups_;
  AlignedBuffer<uint8_t> offset_, next_offset_;
  AlignedBuffer<float> values_, next_values_;
  AlignedBuffer<int32_t> csr_row_ptr_, csr_col_;  // the same entries as CSR, to build W^T
  TransposedPattern transposed_;
};

}  // namespace sparsetrain
