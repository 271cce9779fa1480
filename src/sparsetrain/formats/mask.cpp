#include "sparsetrain/formats/mask.h"

#include <cmath>
#include <cstring>

namespace sparsetrain {

Mask Mask::nonzero_of(ConstMatrixView dense) {
  Mask mask(dense.rows, dense.cols);
  for (int64_t r = 0; r < dense.rows; ++r)
    for (int64_t c = 0; c < dense.cols; ++c) mask.set(r, c, dense.at(r, c) != 0.0f);
  return mask;
}

int64_t Mask::nnz() const {
  int64_t count = 0;
  for (uint8_t k : keep_) count += k != 0;
  return count;
}

double Mask::sparsity() const {
  int64_t total = rows_ * cols_;
  return total == 0 ? 0.0 : 1.0 - static_cast<double>(nnz()) / static_cast<double>(total);
}

bool Mask::operator==(const Mask& other) const {
  if (rows_ != other.rows_ || cols_ != other.cols_) return false;
  for (std::size_t i = 0; i < keep_.size(); ++i)
    if ((keep_[i] != 0) != (other.keep_[i] != 0)) return false;
  return true;
}

}  // namespace sparsetrain
