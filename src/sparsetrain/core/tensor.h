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
