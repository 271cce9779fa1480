#include "formats/nm_sparse.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/spmm.h"

namespace sparsetrain {

NmMatrix::NmMatrix(int64_t rows, int64_t cols, int n, int m)
    : SparseWeight(rows, cols), n_(n), m_(m), groups_(m > 0 ? cols / m : 0) {
  if (m < 2 || m > 32 || n < 1 || n >= m) fail("{}:{} format needs 1 <= N < M <= 32", n, m);
  if (rows < 0 || cols < 0) fail("{}:{} weight: negative shape [{} x {}]", n, m, rows, cols);
  if (cols % m != 0)
    fail("{}:{} weight [{} x {}]: the input dimension {} is not a multiple of M = {}", n, m, rows, cols, cols, m);
  const int64_t entries = rows * groups_ * n;
  offset_.resize(entries);
  values_.assign(entries, 0.0f);
  for (int64_t e = 0; e < entries; ++e) offset_[e] = static_cast<uint8_t>(e % n);  // first N of each group
  csr_row_ptr_.resize(rows + 1);
  for (int64_t r = 0; r <= rows; ++r) csr_row_ptr_[r] = static_cast<int32_t>(r * groups_ * n);
  commit_structure();
}

BlockSparseView NmMatrix::transposed_view() {
  if (transposed_stale_) {
    transposed_.refresh(values_.data());
    transposed_stale_ = false;
  }
  return transposed_.view();
}

void NmMatrix::scan_mask(const Mask& mask) {
  check_mask_shape(mask);
  next_offset_.resize(offset_.size());
  for (int64_t r = 0; r < rows_; ++r) {
    const uint8_t* row = mask.row(r);
    for (int64_t g = 0; g < groups_; ++g) {
      uint8_t* dst = next_offset_.data() + (r * groups_ + g) * n_;
      int kept = 0;
      for (int j = 0; j < m_; ++j)
        if (row[g * m_ + j] != 0) {
          if (kept < n_) dst[kept] = static_cast<uint8_t>(j);
          ++kept;
        }
      if (kept != n_)
        fail("{}:{}: row {}, group {} (cols {}..{}) keeps {} weights, expected exactly {}", n_, m_, r, g, g * m_,
             g * m_ + m_ - 1, kept, n_);
    }
  }
}

void NmMatrix::commit_structure() {
  const int64_t entries = static_cast<int64_t>(offset_.size());
  csr_col_.resize(entries);
  for (int64_t e = 0; e < entries; ++e) csr_col_[e] = static_cast<int32_t>((e / n_ % groups_) * m_ + offset_[e]);
  transposed_.build({rows_, cols_, 1, rows_, csr_row_ptr_.data(), csr_col_.data(), values_.data()});
  transposed_stale_ = true;
}

void NmMatrix::assign(ConstMatrixView dense, const Mask& mask) {
  if (dense.rows != rows_ || dense.cols != cols_)
    fail("{}: dense values are [{} x {}], the weight is [{} x {}]", format().name(), dense.rows, dense.cols, rows_,
         cols_);
  scan_mask(mask);
  offset_.swap(next_offset_);
  for (int64_t e = 0; e < static_cast<int64_t>(values_.size()); ++e) {
    int64_t r = e / (groups_ * n_), g = e / n_ % groups_;
    values_[e] = dense.at(r, g * m_ + offset_[e]);
  }
  commit_structure();
}

void NmMatrix::update_mask(const Mask& mask) {
  scan_mask(mask);
  next_values_.resize(values_.size());
  for (int64_t base = 0; base < static_cast<int64_t>(values_.size()); base += n_) {
    for (int s = 0; s < n_; ++s) {
      const uint8_t* old = offset_.data() + base;
      const uint8_t* hit = std::find(old, old + n_, next_offset_[base + s]);
      next_values_[base + s] = hit != old + n_ ? values_[base + (hit - old)] : 0.0f;
    }
  }
  offset_.swap(next_offset_);
  values_.swap(next_values_);
  commit_structure();
}

void NmMatrix::to_dense(MatrixView dense) const {
  if (dense.rows != rows_ || dense.cols != cols_)
    fail("{}: dense output is [{} x {}], the weight is [{} x {}]", format().name(), dense.rows, dense.cols, rows_,
         cols_);
  for (int64_t r = 0; r < rows_; ++r) std::fill_n(dense.row(r), cols_, 0.0f);
  for (int64_t e = 0; e < static_cast<int64_t>(values_.size()); ++e)
    dense.at(e / (groups_ * n_), csr_col_[e]) = values_[e];
}

Mask NmMatrix::mask() const {
  Mask mask(rows_, cols_);
  for (int64_t e = 0; e < static_cast<int64_t>(values_.size()); ++e) mask.set(e / (groups_ * n_), csr_col_[e], true);
  return mask;
}

void NmMatrix::validate() const {
  const std::string name = format().name();
  if (offset_.size() != static_cast<std::size_t>(rows_ * groups_ * n_) || values_.size() != offset_.size())
    fail("{}: {} offsets and {} values, expected {} (rows x groups x N)", name, offset_.size(), values_.size(),
         rows_ * groups_ * n_);
  for (std::size_t base = 0; base < offset_.size(); base += n_)
    for (int s = 0; s < n_; ++s) {
      if (offset_[base + s] >= m_)
        fail("{}: entry {} has in-group offset {}, expected < {}", name, base + s, offset_[base + s], m_);
      if (s > 0 && offset_[base + s] <= offset_[base + s - 1])
        fail("{}: offsets of group {} not strictly ascending at slot {}", name, base / n_, s);
    }
}

void NmMatrix::forward(const PackedTokens& x, const float* bias, MatrixView y) const { nm_fwd(view(), x, bias, y); }

void NmMatrix::backward_data(const PackedTokens& dy, MatrixView dx) { spmm_fwd(transposed_view(), dy, nullptr, dx); }

void NmMatrix::backward_weights(const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                                bool accumulate) const {
  nm_sddmm(view(), dy, x, dvalues, accumulate);
}

}  // namespace sparsetrain
