#include "sparsetrain/formats/sparse_weight.h"

#include <utility>

#include "sparsetrain/core/error.h"
#include "sparsetrain/formats/block_sparse.h"
#include "sparsetrain/formats/nm_sparse.h"

namespace sparsetrain {

std::unique_ptr<SparseWeight> SparseWeight::create(const FormatSpec& format, int64_t rows, int64_t cols) {
  if (format.kind == FormatKind::NM) return std::make_unique<NmMatrix>(rows, cols, format.n, format.m);
  return std::make_unique<BlockSparseMatrix>(rows, cols, format.block);
}

std::unique_ptr<SparseWeight> SparseWeight::from_dense(const FormatSpec& format, ConstMatrixView dense,
                                                       const Mask& mask) {
  auto weight = create(format, dense.rows, dense.cols);
  weight->assign(dense, mask);
  return weight;
}

Matrix SparseWeight::to_dense() const {
  Matrix dense(rows_, cols_);
  to_dense(dense.view());
  return dense;
}

void SparseWeight::refresh_bf16() {
  const std::span<const float> v = std::as_const(*this).values();
  values_bf16_.resize(v.size());
  to_bf16(v.data(), values_bf16_.data(), static_cast<int64_t>(v.size()));
}

Bf16* SparseWeight::bf16_copy_for_update() {
  values_bf16_.resize(std::as_const(*this).values().size());
  return values_bf16_.data();
}

const Bf16* SparseWeight::bf16_values(std::string_view pass) const {
  if (values_bf16_.size() != values().size())
    fail(
        "{} (bf16): the bf16 copy of the values has {} entries but the weight {}: refresh_bf16() was not called "
        "after the structure changed",
        pass, values_bf16_.size(), values().size());
  return values_bf16_.data();
}

void SparseWeight::backward(const PackedTokens& dy, const PackedTokens& x, MatrixView dx, float* dvalues,
                            bool accumulate) const {
  if (dx.data != nullptr) backward_data(dy, dx);
  backward_weights(dy, x, dvalues, accumulate);
}

double SparseWeight::sparsity() const {
  int64_t total = rows_ * cols_;
  return total == 0 ? 0.0 : 1.0 - static_cast<double>(nnz()) / static_cast<double>(total);
}

void SparseWeight::check_mask_shape(const Mask& mask) const {
  if (mask.rows() != rows_ || mask.cols() != cols_)
    fail("{}: mask is [{} x {}], the weight is [{} x {}]", format().name(), mask.rows(), mask.cols(), rows_, cols_);
}

void SparseWeight::check_companions(std::span<AlignedBuffer<float>* const> companions) const {
  const std::size_t expected = values().size();
  for (std::size_t i = 0; i < companions.size(); ++i)
    if (companions[i]->size() != expected)
      fail("{}: update_mask: companion buffer {} holds {} values, the weight stores {}", format().name(), i,
           companions[i]->size(), expected);
}

}  // namespace sparsetrain
