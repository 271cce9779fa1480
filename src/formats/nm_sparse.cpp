#include "formats/nm_sparse.h"

#include <algorithm>

#include "core/error.h"
#include "core/parallel.h"
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
  commit_structure();
}

NmTransposedView NmMatrix::transposed_view() {
  const int64_t entries = rows_ * groups_;
  if (transposed_stale_) {
    parallel_run(num_threads(), [&](int ith, int nth) {
      int64_t begin, end;
      balance_even(entries, ith, nth, begin, end);
      const int n = n_;
      const float* src = values_.data();
      float* dst = t_values_.data();
      for (int64_t e = begin; e < end; ++e)
        for (int s = 0; s < n; ++s) dst[e * n + s] = src[static_cast<int64_t>(t_source_[e]) * n + s];
    });
    transposed_stale_ = false;
  }
  return {rows_,           cols_,         n_,
          m_,              t_slices_,     t_buckets_,
          t_ptr_.data(),   t_row_.data(), t_offset_.data(),
          t_values_.data()};
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

// Counting sort of the (row, group) entries by (row slice, group, bucket); rows ascend within a
// bucket because they are placed in row order.
void NmMatrix::commit_structure() {
  t_slices_ = std::max<int64_t>(1, (rows_ + kSliceCols - 1) / kSliceCols);
  t_buckets_ = m_ <= 4 ? 1 << m_ : 1;
  const int64_t keys = t_slices_ * groups_ * t_buckets_;
  const int64_t entries = rows_ * groups_;
  auto key_of = [&](int64_t r, int64_t g) {
    int bucket = 0;
    if (m_ <= 4)
      for (int s = 0; s < n_; ++s) bucket |= 1 << offset_[(r * groups_ + g) * n_ + s];
    return (r / kSliceCols * groups_ + g) * t_buckets_ + bucket;
  };
  t_ptr_.assign(keys + 1, 0);
  for (int64_t r = 0; r < rows_; ++r)
    for (int64_t g = 0; g < groups_; ++g) ++t_ptr_[key_of(r, g) + 1];
  for (int64_t k = 0; k < keys; ++k) t_ptr_[k + 1] += t_ptr_[k];
  t_row_.resize(entries);
  t_source_.resize(entries);
  t_offset_.resize(entries * n_);
  t_values_.resize(entries * n_);
  for (int64_t r = 0; r < rows_; ++r)
    for (int64_t g = 0; g < groups_; ++g) {
      // t_ptr_[key] is the key's cursor here and ends at the key's end; the shift below restores starts.
      const int64_t slot = t_ptr_[key_of(r, g)]++;
      t_row_[slot] = static_cast<int32_t>(r);
      t_source_[slot] = static_cast<int32_t>(r * groups_ + g);
      std::copy_n(offset_.data() + (r * groups_ + g) * n_, n_, t_offset_.data() + slot * n_);
    }
  for (int64_t k = keys; k > 0; --k) t_ptr_[k] = t_ptr_[k - 1];
  t_ptr_[0] = 0;
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
  // Group by group in place, so values() (and optimizer state sized to it) never moves.
  float kept[32];
  for (int64_t base = 0; base < static_cast<int64_t>(values_.size()); base += n_) {
    std::copy_n(values_.data() + base, n_, kept);
    const uint8_t* old = offset_.data() + base;
    for (int s = 0; s < n_; ++s) {
      const uint8_t* hit = std::find(old, old + n_, next_offset_[base + s]);
      values_[base + s] = hit != old + n_ ? kept[hit - old] : 0.0f;
    }
  }
  offset_.swap(next_offset_);
  commit_structure();
}

void NmMatrix::to_dense(MatrixView dense) const {
  if (dense.rows != rows_ || dense.cols != cols_)
    fail("{}: dense output is [{} x {}], the weight is [{} x {}]", format().name(), dense.rows, dense.cols, rows_,
         cols_);
  for (int64_t r = 0; r < rows_; ++r) {
    std::fill_n(dense.row(r), cols_, 0.0f);
    for (int64_t g = 0; g < groups_; ++g)
      for (int64_t e = (r * groups_ + g) * n_; e < (r * groups_ + g + 1) * n_; ++e)
        dense.at(r, g * m_ + offset_[e]) = values_[e];
  }
}

Mask NmMatrix::mask() const {
  Mask mask(rows_, cols_);
  for (int64_t r = 0; r < rows_; ++r)
    for (int64_t g = 0; g < groups_; ++g)
      for (int64_t e = (r * groups_ + g) * n_; e < (r * groups_ + g + 1) * n_; ++e)
        mask.set(r, g * m_ + offset_[e], true);
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

void NmMatrix::backward_data(const PackedTokens& dy, MatrixView dx) { nm_bwd_data(transposed_view(), dy, dx); }

void NmMatrix::backward_weights(const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                                bool accumulate) const {
  nm_sddmm(view(), dy, x, dvalues, accumulate);
}

}  // namespace sparsetrain
