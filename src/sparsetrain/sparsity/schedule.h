#pragma once
// When masks change and to what level. Two kinds of schedule, evaluated at the optimizer step
// (the k-th optimizer step is step k, as in the Cerebras API):
//
//   LevelSchedule   a number in [0, 1] that may change with the step: the sparsity level, or
//                   the drop fraction of SET and RigL.
//   UpdateSchedule  the steps on which a dynamic algorithm updates its masks.
//
// Both are plain values; algorithms and the config loader build them, and their validation
// messages name the schedule and the offending argument so the config layer can prefix file
// and key.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sparsetrain {

enum class LevelKind {
  Constant,         // value
  Linear,           // init + slope * step
  Exp,              // final - (final - init) * e^(gamma * step)
  Power,            // init * beta^step
  Cosine,           // o + a * cos(pi * step / half_period), o = (init + minimum) / 2, a = init - o
  Cycling,          // values[k % size] at the k-th mask update (0-based)
  Polynomial,       // Zhu & Gupta's GMP ramp: final + (init - final) * (1 - (step - begin) / (end - begin))^power
  GraphcoreCosine,  // init * 0.5 * (1 + cos(phase_delay + period * 2 pi * (step - zero_steps) / (total_steps -
                    // zero_steps)))
};

class LevelSchedule {
 public:
  static LevelSchedule constant(double value);
  static LevelSchedule linear(double init, double slope);
  static LevelSchedule exp(double init, double gamma, double final_value = 1.0);
  static LevelSchedule power(double init, double beta);
  static LevelSchedule cosine(double init, double half_period, double minimum = 0.0);
  static LevelSchedule cycling(std::vector<double> values);
  static LevelSchedule polynomial(double init, double final_value, int64_t begin, int64_t end, double power = 3.0);
  // Graphcore's prune-ratio decay: 0 before zero_steps, then a cosine from init (period 0.5
  // takes it from init down to 0 at total_steps).
  static LevelSchedule graphcore_cosine(double init, int64_t total_steps, int64_t zero_steps = 0,
                                        double phase_delay = 0.0, double period = 0.5);

  // The level at optimizer step `step`, clamped to [0, 1]. `update_index` counts the mask
  // updates made before this one; only Cycling reads it.
  double at(int64_t step, int64_t update_index = 0) const;

  // Whether a level written in the schedule is 1 (a layer at that level keeps no weight): the
  // constant value, a cycling value, an init, a cosine's minimum or a polynomial's final. An exp
  // schedule's final (1 by default) is only approached, so it does not count.
  bool writes_level_one() const;

  // Whether the level written depends on the step at all: false for a constant, and for the
  // schedules whose arguments make them one (a linear slope of 0, a polynomial, cosine or exp
  // that ends where it starts, a power of 0 or with beta 1, a cycle of equal values).
  bool changes() const;

  LevelKind kind() const { return kind_; }
  bool is_constant() const { return kind_ == LevelKind::Constant; }
  std::string describe() const;  // e.g. "cosine(init=0.3, half_period=7500, minimum=0)"

 private:
  explicit LevelSchedule(LevelKind kind) : kind_(kind) {}
  LevelKind kind_;
  double a_ = 0, b_ = 0, c_ = 0, d_ = 0;  // the kind's arguments, in the order its factory takes them
  int64_t begin_ = 0, end_ = 0;
  std::vector<double> values_;
};

class UpdateSchedule {
 public:
  // Every `freq` steps from `start` on, while step < stop (stop is exclusive).
  static UpdateSchedule every(int64_t freq, int64_t start = 0, std::optional<int64_t> stop = std::nullopt);
  // Exactly the listed steps (any order, no duplicates).
  static UpdateSchedule steps(std::vector<int64_t> steps);

  bool fires(int64_t step) const;
  // The first step that fires, the step before which the mask stays dense when it is > 0.
  int64_t first() const;
  std::string describe() const;  // e.g. "every 100 steps from 0 to 7500 (exclusive)"

 private:
  UpdateSchedule() = default;
  int64_t freq_ = 1, start_ = 0;
  std::optional<int64_t> stop_;
  std::vector<int64_t> steps_;  // sorted; non-empty for a step list
};

}  // namespace sparsetrain
