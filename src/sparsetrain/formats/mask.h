#pragma once
// Mask: which weights of a [rows x cols] parameter are kept (1) or pruned (0), one byte each.
// Algorithms decide masks; formats turn them into compressed storage.
#include <cstdint>

#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/core/tensor.h"

namespace sparsetrain {

class Mask {
 public:
  Mask() = default;
  Mask(int64_t rows, int64_t cols, bool keep = false)
      : rows_(rows), cols_(cols), keep_(static_cast<std::size_t>(rows * cols), keep ? 1 : 0) {}
  Mask(const Mask& other) : rows_(other.rows_), cols_(other.cols_), keep_(other.keep_.clone()) {}
  Mask& operator=(const Mask& other) {
    if (this != &other) *this = Mask(other);
    return *this;
  }
  Mask(Mask&&) noexcept = default;
  Mask& operator=(Mask&&) noexcept = default;

  // Kept where `dense` is nonzero (NaN counts as kept).
  static Mask nonzero_of(ConstMatrixView dense);

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  bool at(int64_t r, int64_t c) const { return keep_[r * cols_ + c] != 0; }
  void set(int64_t r, int64_t c, bool keep) { keep_[r * cols_ + c] = keep ? 1 : 0; }
  const uint8_t* row(int64_t r) const { return keep_.data() + r * cols_; }
  uint8_t* row(int64_t r) { return keep_.data() + r * cols_; }
  const uint8_t* data() const { return keep_.data(); }
  uint8_t* data() { return keep_.data(); }

  int64_t nnz() const;
  double sparsity() const;  // pruned fraction; 0 for an empty shape
  bool operator==(const Mask& other) const;

 private:
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  AlignedBuffer<uint8_t> keep_;
};

}  // namespace sparsetrain
