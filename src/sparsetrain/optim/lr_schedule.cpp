#include "sparsetrain/optim/lr_schedule.h"

#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {

const char* decay_name(LrDecay decay) {
  switch (decay) {
    case LrDecay::Constant: return "constant";
    case LrDecay::Linear: return "linear";
    case LrDecay::Cosine: return "cosine";
    case LrDecay::Step: return "step";
  }
  return "?";
}

void require_lr(const char* schedule, double lr) {
  if (!(lr >= 0.0) || !std::isfinite(lr))
    fail("{} lr schedule: 'lr' must be a finite number >= 0, got {}", schedule, lr);
}

void require_end(const char* schedule, const char* arg, double value, double lr) {
  if (!(value >= 0.0 && value <= lr))
    fail("{} lr schedule: '{}' must be in [0, 'lr' ({})], got {}", schedule, arg, lr, value);
}

void require_steps(const char* schedule, const char* arg, int64_t value) {
  if (value < 1) fail("{} lr schedule: '{}' must be a number of steps >= 1, got {}", schedule, arg, value);
}

void require_warmup(const char* schedule, int64_t warmup_steps, int64_t total_steps) {
  if (warmup_steps < 0) fail("{} lr schedule: 'warmup_steps' must be >= 0, got {}", schedule, warmup_steps);
  if (total_steps <= warmup_steps)
    fail("{} lr schedule: 'total_steps' must be > 'warmup_steps' ({}), got {}", schedule, warmup_steps, total_steps);
}

}  // namespace

LrSchedule LrSchedule::constant(double lr) {
  require_lr("constant", lr);
  return LrSchedule(LrDecay::Constant, lr);
}

LrSchedule LrSchedule::linear(double lr, int64_t decay_steps, double end_lr) {
  require_lr("linear", lr);
  require_steps("linear", "decay_steps", decay_steps);
  require_end("linear", "end_lr", end_lr, lr);
  LrSchedule s(LrDecay::Linear, lr);
  s.period_ = decay_steps;
  s.end_ = end_lr;
  return s;
}

LrSchedule LrSchedule::cosine(double lr, int64_t decay_steps, double min_lr) {
  require_lr("cosine", lr);
  require_steps("cosine", "decay_steps", decay_steps);
  require_end("cosine", "min_lr", min_lr, lr);
  LrSchedule s(LrDecay::Cosine, lr);
  s.period_ = decay_steps;
  s.end_ = min_lr;
  return s;
}

LrSchedule LrSchedule::step(double lr, int64_t step_size, double gamma) {
  require_lr("step", lr);
  require_steps("step", "step_size", step_size);
  if (!(gamma > 0.0 && gamma <= 1.0)) fail("step lr schedule: 'gamma' must be in (0, 1], got {}", gamma);
  LrSchedule s(LrDecay::Step, lr);
  s.period_ = step_size;
  s.end_ = gamma;
  return s;
}

LrSchedule LrSchedule::with_warmup(int64_t warmup_steps, double start_factor) const {
  const char* name = decay_name(decay_);
  if (warmup_steps_ > 0) fail("{} lr schedule: already has a warm-up of {} steps", name, warmup_steps_);
  if (warmup_steps < 0) fail("{} lr schedule: 'warmup_steps' must be >= 0, got {}", name, warmup_steps);
  if (!(start_factor >= 0.0 && start_factor <= 1.0))
    fail("{} lr schedule: 'start_factor' must be in [0, 1], got {}", name, start_factor);
  LrSchedule s = *this;
  s.warmup_steps_ = warmup_steps;
  s.start_factor_ = start_factor;
  return s;
}

LrSchedule LrSchedule::warmup_cosine(double lr, int64_t warmup_steps, int64_t total_steps, double min_lr) {
  require_lr("cosine", lr);
  require_warmup("cosine", warmup_steps, total_steps);
  return cosine(lr, total_steps - warmup_steps, min_lr).with_warmup(warmup_steps);
}

LrSchedule LrSchedule::warmup_linear(double lr, int64_t warmup_steps, int64_t total_steps, double end_lr) {
  require_lr("linear", lr);
  require_warmup("linear", warmup_steps, total_steps);
  return linear(lr, total_steps - warmup_steps, end_lr).with_warmup(warmup_steps);
}

double LrSchedule::at(int64_t step) const {
  if (step < 0) fail("{} lr schedule: the step must be >= 0, got {}", decay_name(decay_), step);
  if (step < warmup_steps_)
    return lr_ *
           (start_factor_ + (1.0 - start_factor_) * static_cast<double>(step) / static_cast<double>(warmup_steps_));
  const int64_t t = step - warmup_steps_;
  switch (decay_) {
    case LrDecay::Constant: return lr_;
    case LrDecay::Step: return lr_ * std::pow(end_, static_cast<double>(t / period_));
    case LrDecay::Linear:
    case LrDecay::Cosine: break;
  }
  if (t >= period_) return end_;
  const double progress = static_cast<double>(t) / static_cast<double>(period_);
  if (decay_ == LrDecay::Linear) return lr_ + (end_ - lr_) * progress;
  // min + (lr - min) * (1 + cos) / 2, written to give lr exactly at t = 0.
  return lr_ - (lr_ - end_) * 0.5 * (1.0 - std::cos(std::numbers::pi * progress));
}

std::string LrSchedule::describe() const {
  std::string decay;
  switch (decay_) {
    case LrDecay::Constant: decay = fmt::format("constant(lr={})", lr_); break;
    case LrDecay::Linear: decay = fmt::format("linear(lr={}, decay_steps={}, end_lr={})", lr_, period_, end_); break;
    case LrDecay::Cosine: decay = fmt::format("cosine(lr={}, decay_steps={}, min_lr={})", lr_, period_, end_); break;
    case LrDecay::Step: decay = fmt::format("step(lr={}, step_size={}, gamma={})", lr_, period_, end_); break;
  }
  if (warmup_steps_ == 0) return decay;
  return fmt::format("linear warm-up(warmup_steps={}, start_factor={}) then {}", warmup_steps_, start_factor_, decay);
}

}  // namespace sparsetrain
