#include "sparsetrain/formats/nm_sparse.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/formats/bucket_sort.h"
#include "sparsetrain/formats/gather.h"
#include "sparsetrain/kernels/spmm.h"

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

NmTransposedView NmMatrix::transposed_view() const {
  const int64_t entries = rows_ * groups_;
  float* values = transposed_values_scratch(static_cast<std::size_t>(entries * n_));
  parallel_gather(values_.data(), t_source_.data(), entries, n_, values);
  return {rows_, cols_, n_, m_, t_slices_, t_buckets_, t_ptr_.data(), t_row_.data(), t_offset_.data(), values};
}

// Row-parallel. Threads cannot throw, so each notes its first group with the wrong count and the
// lowest one is reported afterwards.
void NmMatrix::scan_mask(const Mask& mask) {
  check_mask_shape(mask);
  next_offset_.resize(offset_.size());
  const int parts = num_threads();
  std::vector<int64_t> first_bad(static_cast<std::size_t>(parts), -1);
  parallel_run(parts, [&](int ith, int nth) {
    int64_t begin, end;
    balance_even(rows_, ith, nth, begin, end);
    for (int64_t r = begin; r < end; ++r) {
      const uint8_t* row = mask.row(r);
      for (int64_t g = 0; g < groups_; ++g) {
        uint32_t bits = 0;
        for (int j = 0; j < m_; ++j) bits |= static_cast<uint32_t>(row[g * m_ + j] != 0) << j;
        if (std::popcount(bits) != n_) {
          first_bad[ith] = r * groups_ + g;
          return;
        }
        uint8_t* dst = next_offset_.data() + (r * groups_ + g) * n_;
        for (int s = 0; s < n_; ++s, bits &= bits - 1) dst[s] = static_cast<uint8_t>(std::countr_zero(bits));
      }
    }
  });
  for (int64_t bad : first_bad) {
    if (bad < 0) continue;
    const int64_t r = bad / groups_, g = bad % groups_;
    const int64_t kept =
        std::count_if(mask.row(r) + g * m_, mask.row(r) + (g + 1) * m_, [](uint8_t v) { return v != 0; });
    fail("{}:{}: row {}, group {} (cols {}..{}) keeps {} of its {} weights, expected exactly {}", n_, m_, r, g, g * m_,
         g * m_ + m_ - 1, kept, m_, n_);
  }
}

// Entries sorted by (row slice, group, bucket); rows ascend within a bucket (the sort is stable).
void NmMatrix::commit_structure() {
  t_slices_ = std::max<int64_t>(1, (rows_ + kSliceCols - 1) / kSliceCols);
  t_buckets_ = m_ <= 4 ? 1 << m_ : 1;
  const int64_t entries = rows_ * groups_;
  const uint8_t* offsets = offset_.data();
  auto key_of = [&](int64_t e, int64_t r) {
    int bucket = 0;
    if (t_buckets_ > 1)
      for (int s = 0; s < n_; ++s) bucket |= 1 << offsets[e * n_ + s];
    return (r / kSliceCols * groups_ + (e - r * groups_)) * t_buckets_ + bucket;
  };
  t_row_.resize(entries);
  t_source_.resize(entries);
  t_offset_.resize(entries * n_);
  stable_bucket_sort(
      rows_, t_slices_ * groups_ * t_buckets_, [&](int64_t r) { return r * groups_; }, key_of,
      [&](int32_t slot, int64_t e, int64_t r) {
        t_row_[slot] = static_cast<int32_t>(r);
        t_source_[slot] = static_cast<int32_t>(e);
        for (int s = 0; s < n_; ++s) t_offset_[slot * n_ + s] = offsets[e * n_ + s];
      },
      t_ptr_, t_cursor_);
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

void NmMatrix::update_mask(const Mask& mask, std::span<AlignedBuffer<float>* const> companions) {
  check_companions(companions);
  scan_mask(mask);
  remap(values_);
  for (AlignedBuffer<float>* buffer : companions) remap(*buffer);
  offset_.swap(next_offset_);
  commit_structure();
}

// Rewrites one buffer laid out like values() from the current offsets to the scanned ones, group
// by group in place, so it never moves (optimizer state is sized to it).
void NmMatrix::remap(AlignedBuffer<float>& buffer) {
  const int64_t entries = rows_ * groups_;
  parallel_run(num_threads(), [&](int ith, int nth) {
    int64_t begin, end;
    balance_even(entries, ith, nth, begin, end);
    float kept[32] = {};
    for (int64_t e = begin; e < end; ++e) {
      float* values = buffer.data() + e * n_;
      const uint8_t* old = offset_.data() + e * n_;
      const uint8_t* next = next_offset_.data() + e * n_;
      uint32_t old_bits = 0;
      for (int s = 0; s < n_; ++s) {
        kept[s] = values[s];
        old_bits |= 1u << old[s];
      }
      // Branch-free: a survivor's old slot is the number of old offsets below it.
      for (int s = 0; s < n_; ++s) {
        const uint32_t below = old_bits & ((1u << next[s]) - 1);
        const uint32_t survives = 0u - ((old_bits >> next[s]) & 1u);
        values[s] = std::bit_cast<float>(std::bit_cast<uint32_t>(kept[std::popcount(below) & 31]) & survives);
      }
    }
  });
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

void NmMatrix::backward_data(const PackedTokens& dy, MatrixView dx) const { nm_bwd_data(transposed_view(), dy, dx); }

void NmMatrix::backward_weights(const PackedTokens& dy, const PackedTokens& x, float* dvalues, bool accumulate) const {
  nm_sddmm(view(), dy, x, dvalues, accumulate);
}

std::size_t NmMatrix::memory_bytes() const {
  return offset_.bytes() + next_offset_.bytes() + values_.bytes() + t_ptr_.bytes() + t_row_.bytes() +
         t_cursor_.bytes() + t_source_.bytes() + t_offset_.bytes() + values_bf16_.bytes();
}

// bf16: W and its group-ordered companion over the bf16 copy of the values.
void NmMatrix::forward_bf16(const PackedTokensBf16& x, const float* bias, MatrixView y) const {
  nm_fwd(NmViewT<Bf16>{rows_, cols_, n_, m_, offset_.data(), bf16_values("forward")}, x, bias, y);
}

void NmMatrix::backward_bf16(const PackedTokensBf16& dy, const PackedTokensBf16& x, MatrixView dx, float* dvalues,
                             bool accumulate) const {
  const Bf16* values = bf16_values("backward");
  if (dx.data != nullptr) {
    const int64_t entries = rows_ * groups_;
    Bf16* gathered = transposed_values_scratch<Bf16>(static_cast<std::size_t>(entries * n_));
    parallel_gather(values, t_source_.data(), entries, n_, gathered);
    nm_bwd_data(NmTransposedViewT<Bf16>{rows_, cols_, n_, m_, t_slices_, t_buckets_, t_ptr_.data(), t_row_.data(),
                                        t_offset_.data(), gathered},
                dy, dx);
  }
  nm_sddmm(NmViewT<Bf16>{rows_, cols_, n_, m_, offset_.data(), values}, dy, x, dvalues, accumulate);
}

}  // namespace sparsetrain
