#include "sparsetrain/sparsity/schedule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {

void require_finite(const char* schedule, const char* arg, double value) {
  if (!std::isfinite(value)) fail("{} schedule: '{}' must be a finite number, got {}", schedule, arg, value);
}

void require_level(const char* schedule, const char* arg, double value) {
  if (!(value >= 0.0 && value <= 1.0)) fail("{} schedule: '{}' must be in [0, 1], got {}", schedule, arg, value);
}

}  // namespace

bool LevelSchedule::writes_level_one() const {
  switch (kind_) {
    case LevelKind::Cycling: return std::any_of(values_.begin(), values_.end(), [](double v) { return v >= 1.0; });
    case LevelKind::Cosine: return a_ >= 1.0 || c_ >= 1.0;
    case LevelKind::Polynomial: return a_ >= 1.0 || b_ >= 1.0;
    default: return a_ >= 1.0;
  }
}

bool LevelSchedule::changes() const {
  switch (kind_) {
    case LevelKind::Constant: return false;
    case LevelKind::Linear: return b_ != 0.0;
    case LevelKind::Exp: return b_ != 0.0 && c_ != a_;
    case LevelKind::Power: return a_ != 0.0 && b_ != 1.0;
    case LevelKind::Cosine: return c_ != a_;
    case LevelKind::Cycling:
      return std::any_of(values_.begin(), values_.end(), [&](double v) { return v != values_.front(); });
    case LevelKind::Polynomial: return b_ != a_;
    case LevelKind::GraphcoreCosine: return a_ != 0.0;
  }
  return true;
}

LevelSchedule LevelSchedule::constant(double value) {
  require_level("constant", "value", value);
  LevelSchedule s(LevelKind::Constant);
  s.a_ = value;
  return s;
}

LevelSchedule LevelSchedule::linear(double init, double slope) {
  require_level("linear", "init", init);
  require_finite("linear", "slope", slope);
  LevelSchedule s(LevelKind::Linear);
  s.a_ = init;
  s.b_ = slope;
  return s;
}

LevelSchedule LevelSchedule::exp(double init, double gamma, double final_value) {
  require_level("exp", "init", init);
  require_finite("exp", "gamma", gamma);
  require_level("exp", "final", final_value);
  LevelSchedule s(LevelKind::Exp);
  s.a_ = init;
  s.b_ = gamma;
  s.c_ = final_value;
  return s;
}

LevelSchedule LevelSchedule::power(double init, double beta) {
  require_level("power", "init", init);
  if (!(beta > 0.0) || !std::isfinite(beta)) fail("power schedule: 'beta' must be a finite number > 0, got {}", beta);
  LevelSchedule s(LevelKind::Power);
  s.a_ = init;
  s.b_ = beta;
  return s;
}

LevelSchedule LevelSchedule::cosine(double init, double half_period, double minimum) {
  require_level("cosine", "init", init);
  require_level("cosine", "minimum", minimum);
  if (!(half_period > 0.0) || !std::isfinite(half_period))
    fail("cosine schedule: 'half_period' must be a finite number of steps > 0, got {}", half_period);
  LevelSchedule s(LevelKind::Cosine);
  s.a_ = init;
  s.b_ = half_period;
  s.c_ = minimum;
  return s;
}

LevelSchedule LevelSchedule::cycling(std::vector<double> values) {
  if (values.empty()) fail("cycling schedule: 'values' must list at least one level");
  for (double v : values) require_level("cycling", "values", v);
  LevelSchedule s(LevelKind::Cycling);
  s.values_ = std::move(values);
  return s;
}

LevelSchedule LevelSchedule::polynomial(double init, double final_value, int64_t begin, int64_t end, double power) {
  require_level("polynomial", "init", init);
  require_level("polynomial", "final", final_value);
  if (begin < 0 || end <= begin)
    fail("polynomial schedule: needs 0 <= 'begin' < 'end', got begin {} and end {}", begin, end);
  if (!(power > 0.0) || !std::isfinite(power)) fail("polynomial schedule: 'power' must be > 0, got {}", power);
  LevelSchedule s(LevelKind::Polynomial);
  s.a_ = init;
  s.b_ = final_value;
  s.c_ = power;
  s.begin_ = begin;
  s.end_ = end;
  return s;
}

LevelSchedule LevelSchedule::graphcore_cosine(double init, int64_t total_steps, int64_t zero_steps, double phase_delay,
                                              double period) {
  require_level("graphcore_cosine", "init", init);
  require_finite("graphcore_cosine", "phase_delay", phase_delay);
  require_finite("graphcore_cosine", "period", period);
  if (zero_steps < 0 || total_steps <= zero_steps)
    fail("graphcore_cosine schedule: needs 0 <= 'zero_steps' < 'total_steps', got zero_steps {} and total_steps {}",
         zero_steps, total_steps);
  LevelSchedule s(LevelKind::GraphcoreCosine);
  s.a_ = init;
  s.b_ = phase_delay;
  s.c_ = period;
  s.begin_ = zero_steps;
  s.end_ = total_steps;
  return s;
}

double LevelSchedule::at(int64_t step, int64_t update_index) const {
  const double t = static_cast<double>(step);
  double v = 0.0;
  switch (kind_) {
    case LevelKind::Constant: v = a_; break;
    case LevelKind::Linear: v = a_ + b_ * t; break;
    case LevelKind::Exp: v = c_ - (c_ - a_) * std::exp(b_ * t); break;
    case LevelKind::Power: v = a_ * std::pow(b_, t); break;
    case LevelKind::Cosine: {
      const double offset = (a_ + c_) / 2.0;
      v = offset + (a_ - offset) * std::cos(std::numbers::pi * t / b_);
      break;
    }
    case LevelKind::Cycling: {
      const auto n = static_cast<int64_t>(values_.size());
      v = values_[static_cast<std::size_t>(((update_index % n) + n) % n)];
      break;
    }
    case LevelKind::Polynomial: {
      const double progress =
          std::clamp((t - static_cast<double>(begin_)) / static_cast<double>(end_ - begin_), 0.0, 1.0);
      v = b_ + (a_ - b_) * std::pow(1.0 - progress, c_);
      break;
    }
    case LevelKind::GraphcoreCosine:
      if (step < begin_) return 0.0;
      v = a_ * 0.5 *
          (1.0 + std::cos(b_ + c_ * 2.0 * std::numbers::pi * (t - static_cast<double>(begin_)) /
                                   static_cast<double>(end_ - begin_)));
      break;
  }
  // exp and power can overflow to inf or NaN far from their range; the level stays a level.
  return std::isnan(v) ? 0.0 : std::clamp(v, 0.0, 1.0);
}

std::string LevelSchedule::describe() const {
  switch (kind_) {
    case LevelKind::Constant: return fmt::format("constant({})", a_);
    case LevelKind::Linear: return fmt::format("linear(init={}, slope={})", a_, b_);
    case LevelKind::Exp: return fmt::format("exp(init={}, gamma={}, final={})", a_, b_, c_);
    case LevelKind::Power: return fmt::format("power(init={}, beta={})", a_, b_);
    case LevelKind::Cosine: return fmt::format("cosine(init={}, half_period={}, minimum={})", a_, b_, c_);
    case LevelKind::Cycling: return fmt::format("cycling({})", values_);
    case LevelKind::Polynomial:
      return fmt::format("polynomial(init={}, final={}, begin={}, end={}, power={})", a_, b_, begin_, end_, c_);
    case LevelKind::GraphcoreCosine:
      return fmt::format("graphcore_cosine(init={}, total_steps={}, zero_steps={}, phase_delay={}, period={})", a_,
                         end_, begin_, b_, c_);
  }
  return "?";
}

UpdateSchedule UpdateSchedule::every(int64_t freq, int64_t start, std::optional<int64_t> stop) {
  if (freq < 1) fail("update schedule: 'freq' must be a number of steps >= 1, got {}", freq);
  if (start < 0) fail("update schedule: 'start' must be >= 0, got {}", start);
  if (stop && *stop <= start)
    fail("update schedule: 'stop' ({}, exclusive) must be after 'start' ({}); no update would run", *stop, start);
  UpdateSchedule s;
  s.freq_ = freq;
  s.start_ = start;
  s.stop_ = stop;
  return s;
}

UpdateSchedule UpdateSchedule::steps(std::vector<int64_t> steps) {
  if (steps.empty()) fail("update schedule: 'steps' must list at least one step");
  std::sort(steps.begin(), steps.end());
  if (steps.front() < 0) fail("update schedule: 'steps' must be >= 0, got {}", steps.front());
  if (auto dup = std::adjacent_find(steps.begin(), steps.end()); dup != steps.end())
    fail("update schedule: 'steps' lists step {} twice", *dup);
  UpdateSchedule s;
  s.steps_ = std::move(steps);
  return s;
}

bool UpdateSchedule::fires(int64_t step) const {
  if (!steps_.empty()) return std::binary_search(steps_.begin(), steps_.end(), step);
  return step >= start_ && (!stop_ || step < *stop_) && (step - start_) % freq_ == 0;
}

int64_t UpdateSchedule::first() const { return steps_.empty() ? start_ : steps_.front(); }

std::string UpdateSchedule::describe() const {
  if (!steps_.empty()) return fmt::format("at steps {}", steps_);
  std::string text = fmt::format("every {} steps from {}", freq_, start_);
  if (stop_) text += fmt::format(" to {} (exclusive)", *stop_);
  return text;
}

}  // namespace sparsetrain
