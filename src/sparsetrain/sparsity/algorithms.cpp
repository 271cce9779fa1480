#include "sparsetrain/sparsity/algorithms.h"

#include <cmath>
#include <optional>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/sparsity/balanced.h"
#include "sparsetrain/sparsity/mask_select.h"

namespace sparsetrain {

Static::Static(double sparsity, SparsityOptions options)
    : SparsityAlgorithm(LevelSchedule::constant(sparsity), std::move(options)) {
  if (!(sparsity >= 0.0 && sparsity < 1.0)) fail("static: sparsity must be in [0, 1), got {}", sparsity);
}

GMP::GMP(LevelSchedule sparsity, UpdateSchedule schedule, SparsityOptions options)
    : DynamicSparsityAlgorithm(std::move(sparsity), std::move(schedule), std::move(options)) {
  if (!sparsity_.changes())
    fail(
        "gmp: sparsity {} never changes with the step, so nothing would ever be pruned; give a schedule that does "
        "(e.g. polynomial)",
        sparsity_.describe());
}

Mask GMP::update_mask(Parameter& p, const Mask& /*mask*/, double sparsity, int64_t /*step*/) {
  return topk_mask(abs_values(p.to_dense()), unit_format(p), kept_count(sparsity, units(p)));
}

DropAndGrow::DropAndGrow(LevelSchedule sparsity, UpdateSchedule schedule, LevelSchedule drop_fraction,
                         SparsityOptions options)
    : DynamicSparsityAlgorithm(std::move(sparsity), std::move(schedule), std::move(options)),
      drop_fraction_(std::move(drop_fraction)) {}

Mask DropAndGrow::drop(ConstMatrixView values, ConstMatrixView magnitude, const Mask& current, const FormatSpec& f,
                       double fraction, int64_t limit) const {
  if (!drop_by_sign_)
    return drop_minimum(magnitude, current, f, std::min(kept_units(fraction, units_kept_by(current, f)), limit));
  // Each sign keeps its own (1 - fraction) share, largest |w| first; zeros are in neither.
  const int64_t rows = current.rows(), cols = current.cols();
  Mask positive(rows, cols), negative(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      positive.set(r, c, current.at(r, c) && values.at(r, c) > 0.0f);
      negative.set(r, c, current.at(r, c) && values.at(r, c) < 0.0f);
    }
  const Mask kept_positive = drop_minimum(magnitude, positive, f, kept_units(fraction, positive.nnz()));
  const Mask kept_negative = drop_minimum(magnitude, negative, f, kept_units(fraction, negative.nnz()));
  Mask both(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) both.set(r, c, kept_positive.at(r, c) || kept_negative.at(r, c));
  return both.nnz() > limit ? drop_minimum(magnitude, both, f, limit) : both;
}

void DropAndGrow::set_drop_by_sign(bool on) {
  const std::optional<FormatSpec>& f = options_.format;
  if (on && f && (f->kind == FormatKind::NM || f->block > 1))
    fail("{}: 'drop_by_sign' needs unstructured sparsity; format {} keeps blocks or groups, which have no sign", name(),
         f->name());
  drop_by_sign_ = on;
}

Mask DropAndGrow::update_mask(Parameter& p, const Mask& mask, double sparsity, int64_t step) {
  const FormatSpec f = unit_format(p);
  const double fraction = drop_fraction_.at(step, updates_done_);
  const Matrix magnitude = abs_values(p.to_dense()), grow = grow_scores(p, step);
  // The signed weights only when the drop looks at signs.
  const std::optional<Matrix> values = drop_by_sign_ ? std::optional<Matrix>(p.to_dense()) : std::nullopt;
  auto drop_and_grow = [&](const Stripe& s, const Mask* current) {
    const int64_t target = kept_count(sparsity, mask_units(f, s.rows, s.cols));
    const ConstMatrixView signed_values = values ? s.of(*values) : ConstMatrixView{};
    return grow_maximum(s.of(grow), drop(signed_values, s.of(magnitude), *current, f, fraction, target), f, target);
  };
  if (const std::optional<Balance> b = balance(p, f))
    return select_per_stripe(*b, p.rows(), p.cols(), &mask, drop_and_grow);
  return drop_and_grow(Stripe{0, 0, p.rows(), p.cols()}, &mask);
}

void DropAndGrow::set_grow_init_std(double std) {
  if (!(std >= 0.0) || !std::isfinite(std))
    fail("{}: 'grow_init_std' must be a finite number >= 0, got {}", name(), std);
  grow_init_std_ = std;
}

void DropAndGrow::init_grown(Parameter& p, const Mask& before, int64_t /*step*/) {
  if (grow_init_std_ == 0.0) return;
  const Mask after = p.mask();
  Matrix values = p.to_dense();
  // Keyed by the count of updates so far, which checkpoints keep: a resumed run draws the same.
  const Philox rng(options_.seed.value_or(0), "sparsity:grow:" + p.name(), static_cast<uint64_t>(updates_done_));
  int64_t grown = 0;
  for (int64_t i = 0; i < values.size(); ++i)
    if (after.data()[i] && !before.data()[i]) {
      values.data()[i] = static_cast<float>(grow_init_std_ * rng.normal(static_cast<uint64_t>(i)));
      ++grown;
    }
  if (grown > 0) p.assign_dense(values);
}

SET::SET(LevelSchedule sparsity, UpdateSchedule schedule, LevelSchedule drop_fraction, SparsityOptions options)
    : DropAndGrow(std::move(sparsity), std::move(schedule), std::move(drop_fraction), std::move(options)) {}

Matrix SET::grow_scores(Parameter& p, int64_t /*step*/) const {
  // Stream 0 drew the initial mask; update k draws from stream k + 1.
  return random_scores(p, static_cast<uint64_t>(updates_done_) + 1);
}

RigL::RigL(LevelSchedule sparsity, UpdateSchedule schedule, LevelSchedule drop_fraction, SparsityOptions options)
    : DropAndGrow(std::move(sparsity), std::move(schedule), std::move(drop_fraction), std::move(options)) {}

void RigL::prepare_step(int64_t step) {
  const bool wanted = schedule_.fires(step);
  for (Parameter* p : params_) p->wants_dense_grad = wanted;
}

Matrix RigL::grow_scores(Parameter& p, int64_t step) const {
  if (p.dense_grad.rows() != p.rows() || p.dense_grad.cols() != p.cols())
    fail("rigl: step {} updates '{}' but its dense gradient was not computed (is [{} x {}], expected [{} x {}])", step,
         p.name(), p.dense_grad.rows(), p.dense_grad.cols(), p.rows(), p.cols());
  Matrix score = abs_values(std::move(p.dense_grad));
  p.dense_grad = Matrix();  // used once: a later update without a fresh gradient is an error
  return score;
}

}  // namespace sparsetrain
