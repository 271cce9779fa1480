#include "sparsetrain/nn/parameter.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

const char* storage_name(Storage s) {
  switch (s) {
    case Storage::Dense: return "dense";
    case Storage::MaskedDense: return "masked-dense";
    case Storage::Compressed: return "compressed";
  }
  return "?";
}

Parameter::Parameter(std::string name, Shape shape) : name_(std::move(name)), shape_(std::move(shape)) {
  if (shape_.empty() || shape_.size() > 4)
    fail("parameter '{}': needs 1 to 4 dimensions, got {}", name_, shape_.size());
  for (int64_t d : shape_)
    if (d <= 0) fail("parameter '{}': every dimension must be positive, got {}", name_, d);
  dense_.assign(static_cast<std::size_t>(numel()), 0.0f);
  grad_.assign(static_cast<std::size_t>(numel()), 0.0f);
}

int64_t Parameter::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

int64_t Parameter::rows() const { return shape_.size() == 1 ? 1 : shape_[0]; }
int64_t Parameter::cols() const { return numel() / rows(); }

std::span<float> Parameter::values() {
  bf16_current_ = false;
  if (storage_ == Storage::Compressed) return compressed_->values();
  return {dense_.data(), dense_.size()};
}

std::span<const float> Parameter::values() const {
  if (storage_ == Storage::Compressed) return std::as_const(*compressed_).values();
  return {dense_.data(), dense_.size()};
}

void Parameter::zero_grad() { std::fill(grad_.begin(), grad_.end(), 0.0f); }

AlignedBuffer<float>& Parameter::state(const std::string& key) {
  auto [it, inserted] = states_.try_emplace(key);
  if (inserted) {
    // Room for the reserved capacity too, so a later mask update does not move the state.
    if (storage_ == Storage::Compressed) it->second.reserve(compressed_->values_capacity());
    it->second.assign(values().size(), 0.0f);
  }
  return it->second;
}

MatrixView Parameter::dense() {
  bf16_current_ = false;
  if (storage_ == Storage::Compressed) fail("parameter '{}': dense() of a compressed parameter", name_);
  return {dense_.data(), rows(), cols(), cols()};
}

ConstMatrixView Parameter::dense() const {
  if (storage_ == Storage::Compressed) fail("parameter '{}': dense() of a compressed parameter", name_);
  return {dense_.data(), rows(), cols(), cols()};
}

SparseWeight& Parameter::compressed() {
  bf16_current_ = false;
  if (storage_ != Storage::Compressed) fail("parameter '{}' is {}, not compressed", name_, storage_name(storage_));
  return *compressed_;
}

const SparseWeight& Parameter::compressed() const {
  if (storage_ != Storage::Compressed) fail("parameter '{}' is {}, not compressed", name_, storage_name(storage_));
  return *compressed_;
}

const Bf16* Parameter::bf16_values() {
  bf16_kept_ = true;
  const std::span<const float> v = std::as_const(*this).values();
  const Bf16* copy = nullptr;
  if (storage_ == Storage::Compressed) {
    if (!bf16_current_) compressed_->refresh_bf16();
    copy = compressed_->values_bf16().data();
  } else {
    if (!bf16_current_) {
      bf16_.resize(v.size());
      to_bf16(v.data(), bf16_.data(), static_cast<int64_t>(v.size()));
    }
    copy = bf16_.data();
  }
#ifdef SPARSETRAIN_CHECK_BF16_COPIES
  // Sanitizer builds: a copy said to be current must be the values rounded, or some write to the
  // values escaped the accessors that mark it stale.
  if (bf16_current_)
    for (std::size_t i = 0; i < v.size(); ++i)
      if (copy[i].bits != to_bf16(v[i]).bits)
        fail("parameter '{}': the bf16 copy is stale at entry {} ({} for {})", name_, i, to_float(copy[i]), v[i]);
#endif
  bf16_current_ = true;
  return copy;
}

Bf16* Parameter::bf16_update_target() {
  if (!bf16_kept_ || storage_ == Storage::MaskedDense) return nullptr;
  if (storage_ == Storage::Compressed) return compressed_->bf16_copy_for_update();
  bf16_.resize(dense_.size());
  return bf16_.data();
}

Mask Parameter::mask() const {
  switch (storage_) {
    case Storage::Dense: return Mask(rows(), cols(), true);
    case Storage::MaskedDense: return mask_;
    case Storage::Compressed: return compressed_->mask();
  }
  return {};
}

int64_t Parameter::kept() const {
  switch (storage_) {
    case Storage::Dense: return numel();
    case Storage::MaskedDense: return mask_.nnz();
    case Storage::Compressed: return compressed_->nnz();
  }
  return 0;
}

std::string Parameter::storage_label() const {
  return storage_ == Storage::Compressed ? compressed_->format().name() : storage_name(storage_);
}

double Parameter::sparsity() const { return 1.0 - static_cast<double>(kept()) / static_cast<double>(numel()); }

ParameterMemory Parameter::memory() const {
  ParameterMemory m;
  m.values = dense_.bytes() +
             (storage_ == Storage::MaskedDense ? static_cast<std::size_t>(mask_.rows() * mask_.cols()) : 0) +
             (compressed_ ? compressed_->memory_bytes() : 0);
  m.grad = grad_.bytes() + static_cast<std::size_t>(dense_grad.size()) * sizeof(float);
  for (const auto& [key, buffer] : states_) m.state += buffer.bytes();
  return m;
}

void Parameter::check_mask(const Mask& mask, const char* what) const {
  if (mask.rows() != rows() || mask.cols() != cols())
    fail("parameter '{}': {} mask is [{} x {}], the parameter is [{} x {}]", name_, what, mask.rows(), mask.cols(),
         rows(), cols());
}

std::vector<AlignedBuffer<float>*> Parameter::companions() {
  std::vector<AlignedBuffer<float>*> buffers{&grad_};
  for (auto& [key, buffer] : states_) buffers.push_back(&buffer);
  return buffers;
}

void Parameter::sparsify(const Mask& mask, std::optional<FormatSpec> format, int64_t reserve) {
  if (storage_ != Storage::Dense) fail("parameter '{}' is already sparse ({})", name_, storage_name(storage_));
  bf16_current_ = false;
  check_mask(mask, "the");
  if (!format) {
    mask_ = mask;
    storage_ = Storage::MaskedDense;
    enforce_mask();
    mask_grad();
    return;
  }
  if (shape_.size() != 2)
    fail("parameter '{}': the {} format needs a matrix, the parameter has {} dimensions", name_, format->name(),
         shape_.size());
  // Dense state is carried into the compressed layout through the same conversion as the values.
  auto to_entries = [&](const AlignedBuffer<float>& elements) {
    auto w = SparseWeight::from_dense(*format, ConstMatrixView{elements.data(), rows(), cols(), cols()}, mask);
    AlignedBuffer<float> entries(w->values().size());
    std::copy(w->values().begin(), w->values().end(), entries.begin());
    return entries;
  };
  auto weight = SparseWeight::from_dense(*format, ConstMatrixView{dense_.data(), rows(), cols(), cols()}, mask);
  grad_ = to_entries(grad_);
  for (auto& [key, buffer] : states_) buffer = to_entries(buffer);
  if (reserve > 0) weight->reserve(reserve);
  compressed_ = std::move(weight);
  for (AlignedBuffer<float>* buffer : companions()) buffer->reserve(compressed_->values_capacity());
  dense_ = AlignedBuffer<float>();
  bf16_ = AlignedBuffer<Bf16>();
  storage_ = Storage::Compressed;
}

void Parameter::set_mask(const Mask& mask) {
  check_mask(mask, "the new");
  bf16_current_ = false;
  switch (storage_) {
    case Storage::Dense: fail("parameter '{}' is dense; sparsify it before changing its mask", name_);
    case Storage::MaskedDense:
      mask_ = mask;
      enforce_mask();
      mask_grad();
      return;
    case Storage::Compressed: {
      std::vector<AlignedBuffer<float>*> buffers = companions();
      compressed_->update_mask(mask, buffers);
      return;
    }
  }
}

void Parameter::enforce_mask() {
  if (storage_ != Storage::MaskedDense) return;
  bf16_current_ = false;
  const uint8_t* keep = mask_.data();
  const std::size_t n = dense_.size();
  for (std::size_t i = 0; i < n; ++i)
    if (!keep[i]) dense_[i] = 0.0f;
  for (auto& [key, buffer] : states_)
    for (std::size_t i = 0; i < n; ++i)
      if (!keep[i]) buffer[i] = 0.0f;
}

void Parameter::mask_grad() {
  if (storage_ != Storage::MaskedDense) return;
  const uint8_t* keep = mask_.data();
  for (std::size_t i = 0; i < grad_.size(); ++i) grad_[i] = keep[i] ? grad_[i] : 0.0f;
}

Matrix Parameter::to_dense() const {
  if (storage_ == Storage::Compressed) return compressed_->to_dense();
  Matrix m(rows(), cols());
  std::copy(dense_.begin(), dense_.end(), m.data());
  return m;
}

void Parameter::assign_dense(ConstMatrixView dense) {
  if (dense.rows != rows() || dense.cols != cols())
    fail("parameter '{}': values are [{} x {}], the parameter is [{} x {}]", name_, dense.rows, dense.cols, rows(),
         cols());
  bf16_current_ = false;
  if (storage_ == Storage::Compressed) {
    compressed_->assign(dense, compressed_->mask());
    return;
  }
  for (int64_t r = 0; r < rows(); ++r) std::copy_n(dense.row(r), cols(), dense_.data() + r * cols());
  enforce_mask();
}

}  // namespace sparsetrain
