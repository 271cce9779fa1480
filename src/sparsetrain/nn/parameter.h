#pragma once
// Parameter: one trainable tensor of a module, in one of three storages.
//
//   Dense        every element is trainable.
//   MaskedDense  every element is stored, a Mask says which are kept; pruned elements are held
//                at zero (with zero optimizer state). Any parameter can be sparse this way
//                (bias, embedding, norm) — API parity, no speed claim.
//   Compressed   a matrix weight held in a kernel format (SparseWeight); only the kept entries
//                exist, so values(), grad() and every optimizer state are sized to them.
//
// Optimizers see only values(), grad() and state buffers of the same length, whatever the
// storage; sparsity algorithms see only masks and dense views. A mask change goes through
// set_mask(), which keeps survivors' values and state and starts new connections at zero.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/core/bf16.h"
#include "sparsetrain/core/tensor.h"
#include "sparsetrain/formats/format_spec.h"
#include "sparsetrain/formats/mask.h"
#include "sparsetrain/formats/sparse_weight.h"

namespace sparsetrain {

using Shape = std::vector<int64_t>;

enum class Storage { Dense, MaskedDense, Compressed };
const char* storage_name(Storage s);

// Bytes a parameter holds for training, by role (buffer capacities, not just sizes).
struct ParameterMemory {
  std::size_t values = 0;  // the elements (and mask), or the whole compressed weight
  std::size_t grad = 0;    // its gradient, and RigL's dense gradient while held
  std::size_t state = 0;   // optimizer state
  std::size_t total() const { return values + grad + state; }
};

class Parameter {
 public:
  // A dense parameter of this shape, all zeros. Shapes have 1 to 4 positive dimensions.
  Parameter(std::string name, Shape shape);

  const std::string& name() const { return name_; }  // full dotted name, e.g. "h.0.mlp.c_fc.weight"
  const Shape& shape() const { return shape_; }
  int64_t numel() const;
  // The matrix view of the parameter: [shape[0] x the product of the other dimensions]
  // (a vector is one row).
  int64_t rows() const;
  int64_t cols() const;

  // Never sparsified by algorithms (Cerebras `requires_dense`).
  bool requires_dense = false;

  // RigL's growth signal: the full dense gradient [rows x cols], which the owning layer's
  // backward computes only on the steps where an algorithm sets wants_dense_grad.
  bool wants_dense_grad = false;
  Matrix dense_grad;

  Storage storage() const { return storage_; }
  bool is_sparse() const { return storage_ != Storage::Dense; }
  // How the parameter is held, in one word: the compressed format's name (csr, bcsr16, 2:4) when
  // Compressed, else storage_name() (dense, masked-dense).
  std::string storage_label() const;

  // The trainable values and their gradient, of equal length: every element for Dense and
  // MaskedDense, the stored entries for Compressed. The non-const accessors of the values
  // (values(), dense(), compressed()) make the bf16 copy stale.
  std::span<float> values();
  std::span<const float> values() const;
  std::span<float> grad() { return {grad_.data(), grad_.size()}; }
  std::span<const float> grad() const { return {grad_.data(), grad_.size()}; }
  void zero_grad();

  // Optimizer state laid out like values(): created as zeros on first use, remapped by every
  // mask change (a survivor keeps its state, a new connection starts at zero).
  AlignedBuffer<float>& state(const std::string& key);
  const std::map<std::string, AlignedBuffer<float>>& states() const { return states_; }

  // The elements as a matrix (Dense and MaskedDense only).
  MatrixView dense();
  ConstMatrixView dense() const;
  // The compressed weight (Compressed only).
  SparseWeight& compressed();
  const SparseWeight& compressed() const;

  // bf16 mixed precision: values() rounded to bf16 (nearest even) for the products, made the
  // first time it is asked for. From then on the optimizer writes it in its update loop
  // (bf16_update_target / bf16_updated), so a training step pays no pass of its own for it. Any
  // other change of the values goes through a non-const accessor, sparsify, set_mask or
  // assign_dense, which mark the copy stale; bf16_values() then remakes it before returning it.
  // Compressed: the copy is the SparseWeight's (values_bf16()), in the order of its entries.
  const Bf16* bf16_values();
  // For the optimizer, before it updates the values: where to write the copy of the updated
  // values, or null when no copy is kept or the storage is masked-dense (its pruned values are
  // zeroed after the update, so the copy is remade when next asked for).
  Bf16* bf16_update_target();
  // The optimizer wrote the copy of every updated value.
  void bf16_updated() { bf16_current_ = true; }
  // Whether the copy equals the values rounded, so bf16_values() has nothing to remake.
  bool bf16_current() const { return bf16_current_; }

  // Which elements are kept: all of them for a Dense parameter.
  Mask mask() const;
  int64_t kept() const;
  double sparsity() const;  // 1 - kept / numel
  ParameterMemory memory() const;

  // Makes the parameter sparse under `mask`: compressed in `format` when given (matrices only;
  // `reserve` kept weights of capacity for later mask changes), masked-dense otherwise. Values
  // at pruned positions are dropped; state at pruned positions is zeroed.
  void sparsify(const Mask& mask, std::optional<FormatSpec> format = std::nullopt, int64_t reserve = 0);
  // A new mask for a sparse parameter: survivors keep values, gradient and state; new
  // connections start at zero; pruned ones are dropped (zeroed when masked-dense).
  void set_mask(const Mask& mask);

  // Masked-dense: zero values and every state at pruned positions (after an optimizer step).
  // Masked-dense gradients: keep the gradient only at kept positions, by selection, so a NaN
  // or Inf in a pruned slot does not survive. No-ops for the other storages.
  void enforce_mask();
  void mask_grad();

  // The elements with zeros at pruned positions, [rows x cols].
  Matrix to_dense() const;
  // Replaces all elements from dense [rows x cols]; a sparse parameter keeps its mask and
  // takes the values at kept positions.
  void assign_dense(ConstMatrixView dense);

 private:
  friend class Module;  // prefixes the name when the owning module is attached to a parent

  void check_mask(const Mask& mask, const char* what) const;
  std::vector<AlignedBuffer<float>*> companions();

  std::string name_;
  Shape shape_;
  Storage storage_ = Storage::Dense;
  AlignedBuffer<float> dense_;  // Dense, MaskedDense: the elements
  Mask mask_;                   // MaskedDense
  std::unique_ptr<SparseWeight> compressed_;
  AlignedBuffer<float> grad_;
  std::map<std::string, AlignedBuffer<float>> states_;
  AlignedBuffer<Bf16> bf16_;   // Dense, MaskedDense: the bf16 copy (Compressed: the weight's)
  bool bf16_kept_ = false;     // a bf16 copy was asked for, so the optimizer keeps it current
  bool bf16_current_ = false;  // the copy equals the values rounded to bf16
};

}  // namespace sparsetrain
