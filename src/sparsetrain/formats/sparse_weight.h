#pragma once
// SparseWeight: a [rows x cols] weight held compressed, with the three kernel passes of a linear
// layer Y = X W^T + b (X [T x cols], Y [T x rows]). The trainable values are the stored entries;
// optimizer state is sized to values().size().
//
// Built for dynamic sparsity: update_mask() rebuilds the structure in place from a new mask,
// keeping the values of surviving connections and starting new ones at zero, within the capacity
// given by reserve() (no allocation when the nonzero count stays within it). The transposed
// companion that backward-data needs is rebuilt with the structure; its values are gathered
// from values() by every backward call (one O(nnz) pass), so values may change at any time.
#include <memory>
#include <span>
#include <string_view>

#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/core/tensor.h"
#include "sparsetrain/formats/format_spec.h"
#include "sparsetrain/formats/mask.h"
#include "sparsetrain/kernels/packed_tokens.h"

namespace sparsetrain {

class SparseWeight {
 public:
  virtual ~SparseWeight() = default;

  // A weight of the given format and shape with all values zero: no entries for block formats,
  // the first N of every group for N:M. Throws Error when the format cannot hold that shape (an
  // N:M format needs cols % M == 0).
  static std::unique_ptr<SparseWeight> create(const FormatSpec& format, int64_t rows, int64_t cols);
  // Compresses dense at mask's kept positions (mask must be representable in the format).
  static std::unique_ptr<SparseWeight> from_dense(const FormatSpec& format, ConstMatrixView dense, const Mask& mask);

  virtual FormatSpec format() const = 0;
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }

  // Structure and values from dense + mask. Throws Error naming the first offending position
  // when the mask does not fit the format (blocks not uniform, wrong count in an N:M group).
  virtual void assign(ConstMatrixView dense, const Mask& mask) = 0;
  // New structure from mask; surviving connections keep their values, new ones start at 0.
  // Each companion (a buffer laid out like values(): a gradient, optimizer state) is remapped
  // the same way, in place.
  virtual void update_mask(const Mask& mask, std::span<AlignedBuffer<float>* const> companions = {}) = 0;
  // Preallocates room for this many kept weights so later mask updates neither allocate nor move
  // values() (optimizer code may hold on to it).
  virtual void reserve(int64_t nnz) = 0;
  // How many values fit without reallocating: what companion buffers should reserve too.
  virtual std::size_t values_capacity() const = 0;

  virtual void to_dense(MatrixView dense) const = 0;  // zeros at pruned positions
  Matrix to_dense() const;
  virtual Mask mask() const = 0;
  virtual int64_t nnz() const = 0;  // kept weights (edge-block padding excluded)
  // Memory held: values, structure, the transposed companion and per-weight scratch, by capacity.
  virtual std::size_t memory_bytes() const = 0;
  double sparsity() const;
  // Checks every structural invariant; throws Error with the first violation found.
  virtual void validate() const = 0;

  virtual std::span<float> values() = 0;
  virtual std::span<const float> values() const = 0;

  // Y [T x rows] = X W^T + bias.
  virtual void forward(const PackedTokens& x, const float* bias, MatrixView y) const = 0;
  // dX [T x cols] = dY W.
  virtual void backward_data(const PackedTokens& dy, MatrixView dx) const = 0;
  // dvalues[i] (+)= gradient of values()[i]: dY^T X sampled at the stored entries.
  virtual void backward_weights(const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                                bool accumulate = false) const = 0;
  // Both backward passes (dX skipped when dx.data is null). Formats whose kernels can share
  // work between the two override it.
  virtual void backward(const PackedTokens& dy, const PackedTokens& x, MatrixView dx, float* dvalues,
                        bool accumulate = false) const;

  // Mixed precision: forward and both backward passes on bf16 operands, which read a bf16 copy of
  // values() (rounded to nearest even) that refresh_bf16() makes; call it after values() or the
  // structure changed (a Parameter keeps it current: Parameter::bf16_values). Outputs and
  // gradients are float32, as above.
  void refresh_bf16();
  std::span<const Bf16> values_bf16() const { return {values_bf16_.data(), values_bf16_.size()}; }
  // The copy sized to values(), for an optimizer that writes it as it updates the values.
  Bf16* bf16_copy_for_update();
  virtual void forward_bf16(const PackedTokensBf16& x, const float* bias, MatrixView y) const = 0;
  virtual void backward_bf16(const PackedTokensBf16& dy, const PackedTokensBf16& x, MatrixView dx, float* dvalues,
                             bool accumulate = false) const = 0;

 protected:
  SparseWeight(int64_t rows, int64_t cols) : rows_(rows), cols_(cols) {}
  void check_mask_shape(const Mask& mask) const;
  void check_companions(std::span<AlignedBuffer<float>* const> companions) const;
  // The bf16 copy, checked to be as long as values() (a copy older than the structure is refused).
  const Bf16* bf16_values(std::string_view pass) const;

  int64_t rows_;
  int64_t cols_;
  AlignedBuffer<Bf16> values_bf16_;
};

}  // namespace sparsetrain
