#pragma once
// Matrix: an owning row-major float32 matrix on an AlignedBuffer, and the plain views that
// kernels take. Activations are token-major: one row per token, features contiguous.
#include <cstdint>

#include "sparsetrain/core/aligned_buffer.h"

namespace sparsetrain {

struct ConstMatrixView {
  const float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;  // elements between the starts of consecutive rows, >= cols
  const float* row(int64_t r) const { return data + r * ld; }
  float at(int64_t r, int64_t c) const { return data[r * ld + c]; }
  ConstMatrixView row_range(int64_t first, int64_t n) const { return {row(first), n, cols, ld}; }
};

struct MatrixView {
  float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;
  float* row(int64_t r) const { return data + r * ld; }
  float& at(int64_t r, int64_t c) const { return data[r * ld + c]; }
  operator ConstMatrixView() const { return {data, rows, cols, ld}; }
};

class Matrix {
 public:
  Matrix() = default;
  Matrix(int64_t rows, int64_t cols) : rows_(rows), cols_(cols), buffer_(rows * cols) {}
  Matrix(int64_t rows, int64_t cols, float fill) : rows_(rows), cols_(cols), buffer_(rows * cols, fill) {}

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t size() const { return rows_ * cols_; }
  float* data() { return buffer_.data(); }
  const float* data() const { return buffer_.data(); }
  float& at(int64_t r, int64_t c) { return buffer_[r * cols_ + c]; }
  float at(int64_t r, int64_t c) const { return buffer_[r * cols_ + c]; }
  MatrixView view() { return {data(), rows_, cols_, cols_}; }
  ConstMatrixView view() const { return {data(), rows_, cols_, cols_}; }
  operator MatrixView() { return view(); }
  operator ConstMatrixView() const { return view(); }
  // Makes this rows x cols, allocating only past the capacity: a buffer whose row count changes
  // every step (BERT's masked tokens) keeps its pages instead of being freed and faulted in again.
  // Within the capacity the elements stay in place as a flat array; past it they are unspecified.
  void reshape(int64_t rows, int64_t cols) {
    const auto n = static_cast<std::size_t>(rows * cols);
    if (n > buffer_.capacity()) {
      buffer_.resize(0);   // nothing worth copying
      buffer_.reserve(n);  // exactly: the largest size seen, not twice it
    }
    buffer_.resize(n);
    rows_ = rows;
    cols_ = cols;
  }
  Matrix clone() const {
    Matrix copy;
    copy.rows_ = rows_;
    copy.cols_ = cols_;
    copy.buffer_ = buffer_.clone();
    return copy;
  }

 private:
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  AlignedBuffer<float> buffer_;
};

}  // namespace sparsetrain
