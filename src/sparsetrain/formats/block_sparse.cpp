#include "sparsetrain/formats/block_sparse.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/formats/column_slices.h"
#include "sparsetrain/formats/gather.h"
#include "sparsetrain/kernels/spmm.h"

namespace sparsetrain {

namespace {
// Buffers a call needs only while it runs: the scanned structure of a mask update, the snapshot
// that remaps survivors, the fused backward's dW in W^T order and a dense row per thread. One set
// per calling thread, shared by every weight, rather than one per weight: at 90% sparsity
// per-weight copies would take more memory than the kept values. They grow to the largest weight
// once; after that no call allocates.
struct CallScratch {
  AlignedBuffer<int32_t> next_row_ptr, next_col;
  AlignedBuffer<float> snapshot, transposed_grad, dense_rows;
};

CallScratch& call_scratch() {
  thread_local CallScratch scratch;
  return scratch;
}
}  // namespace

BlockSparseMatrix::BlockSparseMatrix(int64_t rows, int64_t cols, int block)
    : SparseWeight(rows, cols), block_(block), block_rows_((rows + block - 1) / block) {
  if (block != 1 && block != 4 && block != 8 && block != 16)
    fail("block-sparse weight: block size {} is not supported; expected 1, 4, 8 or 16", block);
  if (rows < 0 || cols < 0) fail("block-sparse weight: negative shape [{} x {}]", rows, cols);
  row_ptr_.assign(block_rows_ + 1, 0);
  transposed_.build(view());
}

BlockSparseView BlockSparseMatrix::view() const {
  return {rows_, cols_, block_, block_rows_, row_ptr_.data(), col_.data(), values_.data(),
          slice_ptr_.empty() ? nullptr : slice_ptr_.data()};
}

BlockSparseView BlockSparseMatrix::transposed_view() const {
  float* values = transposed_values_scratch(static_cast<std::size_t>(transposed_.values_size()));
  transposed_.gather_values(values_.data(), values);
  return transposed_.view(values);
}

int64_t BlockSparseMatrix::in_range(int64_t br, int32_t col) const {
  return std::min<int64_t>(block_, rows_ - br * block_) * std::min<int64_t>(block_, cols_ - col);
}

void BlockSparseMatrix::reserve(int64_t nnz) {
  const int64_t bb = static_cast<int64_t>(block_) * block_;
  // Edge blocks hold fewer kept weights than b*b; one extra block per block-row covers them.
  const int64_t blocks = (nnz + bb - 1) / bb + (block_ > 1 ? block_rows_ : 0);
  col_.reserve(blocks);
  values_.reserve(blocks * bb);
  transposed_.reserve(blocks);
}

namespace {
// Bit i set when byte i of w is nonzero: high bits of each byte, gathered by one multiply.
unsigned nonzero_bytes(uint64_t w) {
  const uint64_t high = (((w & 0x7f7f7f7f7f7f7f7full) + 0x7f7f7f7f7f7f7f7full) | w) & 0x8080808080808080ull;
  return static_cast<unsigned>(((high >> 7) * 0x0102040810204080ull) >> 56);
}

// kBytePositions[bits]: the indices of the set bits of `bits`, ascending.
constexpr auto kBytePositions = [] {
  std::array<std::array<uint8_t, 8>, 256> table{};
  for (unsigned bits = 0; bits < 256; ++bits)
    for (unsigned i = 0, n = 0; i < 8; ++i)
      if ((bits >> i) & 1u) table[bits][n++] = static_cast<uint8_t>(i);
  return table;
}();

int64_t count_kept(const uint8_t* row, int64_t cols) {
  int64_t n = 0, c = 0;
  for (; c + 8 <= cols; c += 8) {
    uint64_t word;
    std::memcpy(&word, row + c, 8);
    n += __builtin_popcount(nonzero_bytes(word));
  }
  for (; c < cols; ++c) n += row[c] != 0;
  return n;
}

// Columns of the nonzero bytes of row[0..cols), written at out; returns how many. Branch-free:
// each 8-byte word stores 8 candidates and advances by its popcount, so out needs 8 entries of
// slack past the last kept column.
int64_t kept_columns(const uint8_t* row, int64_t cols, int32_t* out) {
  int64_t n = 0, c = 0;
  for (; c + 8 <= cols; c += 8) {
    uint64_t word;
    std::memcpy(&word, row + c, 8);
    const unsigned bits = nonzero_bytes(word);
    const auto& positions = kBytePositions[bits];
    for (int i = 0; i < 8; ++i) out[n + i] = static_cast<int32_t>(c + positions[i]);
    n += __builtin_popcount(bits);
  }
  for (; c < cols; ++c)
    if (row[c] != 0) out[n++] = static_cast<int32_t>(c);
  return n;
}

// kept_columns without slack: writes only the kept columns.
void exact_kept_columns(const uint8_t* row, int64_t cols, int32_t* out) {
  for (int64_t c = 0, n = 0; c < cols; ++c)
    if (row[c] != 0) out[n++] = static_cast<int32_t>(c);
}
}  // namespace

int64_t BlockSparseMatrix::scan_mask(const Mask& mask) {
  check_mask_shape(mask);
  const int b = block_;
  AlignedBuffer<int32_t>& next_row_ptr = call_scratch().next_row_ptr;
  AlignedBuffer<int32_t>& next_col = call_scratch().next_col;
  next_row_ptr.resize(block_rows_ + 1);
  next_row_ptr[0] = 0;
  if (b == 1) {
    // Counts per row (in parallel), prefix, then columns (in parallel). A row takes the 8-wide
    // path only while 8 slots of this thread's own range follow it, so the slack never reaches
    // another thread's rows.
    parallel_run(num_threads(), [&](int ith, int nth) {
      int64_t begin, end;
      balance_even(rows_, ith, nth, begin, end);
      for (int64_t r = begin; r < end; ++r) next_row_ptr[r + 1] = static_cast<int32_t>(count_kept(mask.row(r), cols_));
    });
    for (int64_t r = 0; r < rows_; ++r) next_row_ptr[r + 1] += next_row_ptr[r];
    next_col.resize(next_row_ptr[rows_]);
    parallel_run(num_threads(), [&](int ith, int nth) {
      int64_t begin, end;
      balance_even(rows_, ith, nth, begin, end);
      for (int64_t r = begin; r < end; ++r) {
        int32_t* dst = next_col.data() + next_row_ptr[r];
        if (next_row_ptr[end] - next_row_ptr[r + 1] >= 8)
          kept_columns(mask.row(r), cols_, dst);
        else
          exact_kept_columns(mask.row(r), cols_, dst);
      }
    });
    return next_row_ptr[rows_];
  }
  // Blocks: a block is kept when every in-range weight is kept, pruned when none is.
  const int64_t block_cols = (cols_ + b - 1) / b;
  next_col.resize(0);
  for (int64_t br = 0; br < block_rows_; ++br) {
    for (int64_t bc = 0; bc < block_cols; ++bc) {
      const int32_t col = static_cast<int32_t>(bc * b);
      int64_t kept = 0;
      for (int64_t r = br * b; r < std::min<int64_t>(rows_, (br + 1) * b); ++r)
        kept += count_kept(mask.row(r) + col, std::min<int64_t>(b, cols_ - col));
      if (kept == 0) continue;
      if (kept != in_range(br, col))
        fail("bcsr{}: mask is not block-uniform: block ({}, {}) covering rows {}..{}, cols {}..{} keeps {} of {} "
             "weights; block formats keep or prune whole blocks",
             b, br, bc, br * b, std::min<int64_t>(rows_, (br + 1) * b) - 1, col,
             std::min<int64_t>(cols_, col + b) - 1, kept, in_range(br, col));
      std::size_t at = next_col.size();
      next_col.resize(at + 1);
      next_col[at] = col;
    }
    next_row_ptr[br + 1] = static_cast<int32_t>(next_col.size());
  }
  return next_row_ptr[block_rows_];
}

void BlockSparseMatrix::commit_structure() {
  const CallScratch& scratch = call_scratch();
  row_ptr_.resize(scratch.next_row_ptr.size());
  std::copy(scratch.next_row_ptr.begin(), scratch.next_row_ptr.end(), row_ptr_.begin());
  col_.resize(scratch.next_col.size());
  std::copy(scratch.next_col.begin(), scratch.next_col.end(), col_.begin());
  nnz_ = 0;
  if (block_ == 1) {
    nnz_ = row_ptr_[block_rows_];
  } else {
    for (int64_t br = 0; br < block_rows_; ++br)
      for (int32_t k = row_ptr_[br]; k < row_ptr_[br + 1]; ++k) nnz_ += in_range(br, col_[k]);
  }
  build_column_slices(view(), slice_ptr_);
  transposed_.build(view());
}

void BlockSparseMatrix::assign(ConstMatrixView dense, const Mask& mask) {
  if (dense.rows != rows_ || dense.cols != cols_)
    fail("{}: dense values are [{} x {}], the weight is [{} x {}]", format().name(), dense.rows, dense.cols, rows_,
         cols_);
  const int64_t blocks = scan_mask(mask);
  const int b = block_;
  const CallScratch& scratch = call_scratch();
  values_.resize(blocks * b * b);
  for (int64_t br = 0; br < block_rows_; ++br)
    for (int32_t k = scratch.next_row_ptr[br]; k < scratch.next_row_ptr[br + 1]; ++k) {
      float* dst = values_.data() + static_cast<int64_t>(k) * b * b;
      for (int i = 0; i < b; ++i)
        for (int j = 0; j < b; ++j) {
          int64_t r = br * b + i, c = scratch.next_col[k] + j;
          dst[i * b + j] = (r < rows_ && c < cols_) ? dense.at(r, c) : 0.0f;
        }
    }
  commit_structure();
}

void BlockSparseMatrix::update_mask(const Mask& mask, std::span<AlignedBuffer<float>* const> companions) {
  check_companions(companions);
  next_blocks_ = scan_mask(mask);
  remap(values_);
  for (AlignedBuffer<float>* buffer : companions) remap(*buffer);
  commit_structure();
}

// Rewrites one buffer laid out like values() from the current structure to the scanned one, in
// place so it stays where its owner (an optimizer) found it: survivors are read from a snapshot.
void BlockSparseMatrix::remap(AlignedBuffer<float>& buffer) {
  const int64_t bb = static_cast<int64_t>(block_) * block_;
  CallScratch& scratch = call_scratch();
  AlignedBuffer<float>& snapshot = scratch.snapshot;
  snapshot.resize(buffer.size());
  std::copy(buffer.begin(), buffer.end(), snapshot.begin());
  buffer.resize(next_blocks_ * bb);
  if (block_ == 1) {
    // Survivors through a dense row of scratch: scatter the old row, gather the new one, clear.
    // Branch-free, unlike a merge of two sorted column lists.
    scratch.dense_rows.resize(static_cast<std::size_t>(cols_ * num_threads()));
    parallel_run(num_threads(), [&](int ith, int nth) {
      float* dense = scratch.dense_rows.data() + ith * cols_;
      std::fill_n(dense, cols_, 0.0f);
      int64_t begin, end;
      balance_even(rows_, ith, nth, begin, end);
      for (int64_t r = begin; r < end; ++r) {
        for (int32_t k = row_ptr_[r]; k < row_ptr_[r + 1]; ++k) dense[col_[k]] = snapshot[k];
        for (int32_t k = scratch.next_row_ptr[r]; k < scratch.next_row_ptr[r + 1]; ++k) buffer[k] = dense[scratch.next_col[k]];
        for (int32_t k = row_ptr_[r]; k < row_ptr_[r + 1]; ++k) dense[col_[k]] = 0.0f;
      }
    });
    return;
  }
  for (int64_t br = 0; br < block_rows_; ++br) {
    int32_t old = row_ptr_[br];
    const int32_t old_end = row_ptr_[br + 1];
    for (int32_t k = scratch.next_row_ptr[br]; k < scratch.next_row_ptr[br + 1]; ++k) {
      while (old < old_end && col_[old] < scratch.next_col[k]) ++old;
      float* dst = buffer.data() + k * bb;
      if (old < old_end && col_[old] == scratch.next_col[k])
        std::copy_n(snapshot.data() + old * bb, bb, dst);
      else
        std::fill_n(dst, bb, 0.0f);
    }
  }
}

void BlockSparseMatrix::to_dense(MatrixView dense) const {
  if (dense.rows != rows_ || dense.cols != cols_)
    fail("{}: dense output is [{} x {}], the weight is [{} x {}]", format().name(), dense.rows, dense.cols, rows_,
         cols_);
  for (int64_t r = 0; r < rows_; ++r) std::fill_n(dense.row(r), cols_, 0.0f);
  const int b = block_;
  for (int64_t br = 0; br < block_rows_; ++br)
    for (int32_t k = row_ptr_[br]; k < row_ptr_[br + 1]; ++k)
      for (int i = 0; i < b && br * b + i < rows_; ++i)
        for (int j = 0; j < b && col_[k] + j < cols_; ++j)
          dense.at(br * b + i, col_[k] + j) = values_[static_cast<int64_t>(k) * b * b + i * b + j];
}

Mask BlockSparseMatrix::mask() const {
  Mask mask(rows_, cols_);
  const int b = block_;
  for (int64_t br = 0; br < block_rows_; ++br)
    for (int32_t k = row_ptr_[br]; k < row_ptr_[br + 1]; ++k)
      for (int i = 0; i < b && br * b + i < rows_; ++i)
        for (int j = 0; j < b && col_[k] + j < cols_; ++j) mask.set(br * b + i, col_[k] + j, true);
  return mask;
}

void BlockSparseMatrix::validate() const {
  const std::string name = format().name();
  const int b = block_;
  if (row_ptr_.size() != static_cast<std::size_t>(block_rows_ + 1))
    fail("{}: row_ptr has {} entries, expected {} (block rows + 1)", name, row_ptr_.size(), block_rows_ + 1);
  if (row_ptr_[0] != 0) fail("{}: row_ptr[0] is {}, expected 0", name, row_ptr_[0]);
  for (int64_t br = 0; br < block_rows_; ++br) {
    if (row_ptr_[br + 1] < row_ptr_[br])
      fail("{}: row_ptr decreases at block row {} ({} -> {})", name, br, row_ptr_[br], row_ptr_[br + 1]);
    for (int32_t k = row_ptr_[br]; k < row_ptr_[br + 1]; ++k) {
      if (col_[k] < 0 || col_[k] >= cols_ || col_[k] % b != 0)
        fail("{}: block {} in block row {} starts at column {}, expected a multiple of {} in [0, {})", name, k, br,
             col_[k], b, cols_);
      if (k > row_ptr_[br] && col_[k] <= col_[k - 1])
        fail("{}: block row {} columns not strictly ascending at block {} ({} after {})", name, br, k, col_[k],
             col_[k - 1]);
      for (int i = 0; i < b; ++i)
        for (int j = 0; j < b; ++j)
          if ((br * b + i >= rows_ || col_[k] + j >= cols_) &&
              values_[static_cast<int64_t>(k) * b * b + i * b + j] != 0.0f)
            fail("{}: padding entry ({}, {}) of edge block {} is nonzero", name, br * b + i, col_[k] + j, k);
    }
  }
  const int64_t blocks = row_ptr_[block_rows_];
  if (col_.size() != static_cast<std::size_t>(blocks) || values_.size() != static_cast<std::size_t>(blocks * b * b))
    fail("{}: row_ptr ends at {} blocks but col has {} and values {} entries", name, blocks, col_.size(),
         values_.size());
}

void BlockSparseMatrix::forward(const PackedTokens& x, const float* bias, MatrixView y) const {
  spmm_fwd(view(), x, bias, y);
}

void BlockSparseMatrix::backward_data(const PackedTokens& dy, MatrixView dx) const {
  spmm_fwd(transposed_view(), dy, nullptr, dx);
}

void BlockSparseMatrix::backward(const PackedTokens& dy, const PackedTokens& x, MatrixView dx, float* dvalues,
                                 bool accumulate) const {
  if (block_ != 1 || dx.data == nullptr) return SparseWeight::backward(dy, x, dx, dvalues, accumulate);
  const BlockSparseView wt = transposed_view();
  AlignedBuffer<float>& transposed_grad = call_scratch().transposed_grad;
  transposed_grad.resize(static_cast<std::size_t>(wt.blocks()));
  csr_backward(wt, transposed_.perm(), dy, x, dx, dvalues, transposed_grad.data(), accumulate);
}

std::size_t BlockSparseMatrix::memory_bytes() const {
  return row_ptr_.bytes() + col_.bytes() + values_.bytes() + transposed_.memory_bytes() + slice_ptr_.bytes() +
         values_bf16_.bytes();
}

void BlockSparseMatrix::backward_weights(const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                                         bool accumulate) const {
  sddmm(view(), dy, x, dvalues, accumulate);
}

// bf16: W and W^T over the bf16 copy of the values (W^T's gathered from it, half the bytes).
void BlockSparseMatrix::forward_bf16(const PackedTokensBf16& x, const float* bias, MatrixView y) const {
  spmm_fwd(with_values(view(), bf16_values("forward")), x, bias, y);
}

void BlockSparseMatrix::backward_bf16(const PackedTokensBf16& dy, const PackedTokensBf16& x, MatrixView dx,
                                      float* dvalues, bool accumulate) const {
  const Bf16* values = bf16_values("backward");
  Bf16* transposed = nullptr;
  if (dx.data != nullptr) {
    transposed = transposed_values_scratch<Bf16>(static_cast<std::size_t>(transposed_.values_size()));
    transposed_.gather_values(values, transposed);
  }
  if (block_ == 1 && dx.data != nullptr) {
    const BlockSparseViewT<Bf16> wt = transposed_.view(static_cast<const Bf16*>(transposed));
    AlignedBuffer<float>& transposed_grad = call_scratch().transposed_grad;
    transposed_grad.resize(static_cast<std::size_t>(wt.blocks()));
    csr_backward(wt, transposed_.perm(), dy, x, dx, dvalues, transposed_grad.data(), accumulate);
    return;
  }
  if (dx.data != nullptr) spmm_fwd(transposed_.view(static_cast<const Bf16*>(transposed)), dy, nullptr, dx);
  sddmm(with_values(view(), values), dy, x, dvalues, accumulate);
}

}  // namespace sparsetrain
