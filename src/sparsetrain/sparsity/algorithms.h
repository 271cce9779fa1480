#pragma once
// The built-in algorithms (Cerebras semantics; see docs/sparsity.md):
//
//   Static  masks fixed at apply() by the init method.
//   GMP     gradual magnitude pruning: at each update, the top-k |w| at the scheduled level.
//   SET     drop the lowest-|w| fraction of the kept weights, regrow at random to the level.
//   RigL    drop the lowest-|w| fraction, regrow where the dense gradient is largest.
//
// SET and RigL drop `drop_fraction` (a schedule) of the kept units: they keep
// int((1 - drop_fraction) * kept), and never more than the level allows, so a parameter that
// starts dense is pruned to its level at the first update. Regrown connections start at zero
// (or, with grow_init_std > 0, at N(0, grow_init_std^2) draws, as the SET reference code's
// randn / 10) with zero optimizer state; one dropped and regrown in the same update keeps its
// value. With drop_by_sign (unstructured only), the positive and the negative weights each lose
// `drop_fraction` of their own count, those closest to zero, and zero-valued weights are always
// dropped, as in the SET reference code.
#include "sparsetrain/sparsity/algorithm.h"

namespace sparsetrain {

class Static final : public SparsityAlgorithm {
 public:
  explicit Static(double sparsity, SparsityOptions options = {});
  std::string name() const override { return "static"; }
  void update(int64_t) override {}
};

class GMP final : public DynamicSparsityAlgorithm {
 public:
  // The schedule must change the level: a constant one would never prune.
  GMP(LevelSchedule sparsity, UpdateSchedule schedule, SparsityOptions options = {});
  std::string name() const override { return "gmp"; }
  Mask update_mask(Parameter& p, const Mask& mask, double sparsity, int64_t step) override;
};

// The drop half shared by SET and RigL.
class DropAndGrow : public DynamicSparsityAlgorithm {
 public:
  DropAndGrow(LevelSchedule sparsity, UpdateSchedule schedule, LevelSchedule drop_fraction, SparsityOptions options);
  Mask update_mask(Parameter& p, const Mask& mask, double sparsity, int64_t step) override;
  void init_grown(Parameter& p, const Mask& before, int64_t step) override;
  const LevelSchedule& drop_fraction() const { return drop_fraction_; }
  // > 0: regrown weights are drawn from N(0, std^2) instead of starting at zero.
  void set_grow_init_std(double std);
  double grow_init_std() const { return grow_init_std_; }
  // true: drop by sign, as the SET reference does; an Error for block and N:M formats, whose
  // units have no sign.
  void set_drop_by_sign(bool on);
  bool drop_by_sign() const { return drop_by_sign_; }

 protected:
  // Scores for regrowth (higher grows first) over the whole [rows x cols] parameter.
  virtual Matrix grow_scores(Parameter& p, int64_t step) const = 0;

 private:
  // The kept units of `current` after the drop, at most `limit` of them; `magnitude` is the
  // stripe's absolute weights, `values` its signed ones (read only with drop_by_sign).
  Mask drop(ConstMatrixView values, ConstMatrixView magnitude, const Mask& current, const FormatSpec& f,
            double fraction, int64_t limit) const;

  LevelSchedule drop_fraction_;
  double grow_init_std_ = 0.0;
  bool drop_by_sign_ = false;
};

// What SET and RigL drop at each update when a spec gives no drop_fraction (Cerebras' default).
inline constexpr double kDefaultDropFraction = 0.3;

class SET final : public DropAndGrow {
 public:
  SET(LevelSchedule sparsity, UpdateSchedule schedule,
      LevelSchedule drop_fraction = LevelSchedule::constant(kDefaultDropFraction), SparsityOptions options = {});
  std::string name() const override { return "set"; }

 protected:
  Matrix grow_scores(Parameter& p, int64_t step) const override;
};

class RigL final : public DropAndGrow {
 public:
  RigL(LevelSchedule sparsity, UpdateSchedule schedule,
       LevelSchedule drop_fraction = LevelSchedule::constant(kDefaultDropFraction), SparsityOptions options = {});
  std::string name() const override { return "rigl"; }
  // Asks for the dense gradient on update steps only.
  void prepare_step(int64_t step) override;

 protected:
  Matrix grow_scores(Parameter& p, int64_t step) const override;
};

}  // namespace sparsetrain
