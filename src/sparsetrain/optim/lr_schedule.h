#pragma once
// LrSchedule: the learning rate as a function of the optimizer step. The k-th optimizer.step()
// evaluates the schedule at k (k >= 1) and updates with that rate; at(0) is the rate before the
// first step (what Optimizer::lr() reports then).
//
// A schedule is an optional linear warm-up followed by one decay:
//
//   warm-up   k < W:  lr * (f + (1 - f) * k / W)          from f*lr at step 0 to lr at step W
//   then, with t = k - W (t >= 0):
//     constant        lr
//     linear          lr + (end_lr - lr) * t / D           end_lr from t = D on
//     cosine          min_lr + (lr - min_lr) * (1 + cos(pi * t / D)) / 2, min_lr from t = D on
//     step            lr * gamma^floor(t / step_size)
//
// Schedules are plain values. Factories validate their arguments and fail with a message that
// names the schedule and the argument ("cosine lr schedule: 'total_steps' must be > ...") so a
// config layer can prefix the file and key.
#include <cstdint>
#include <string>

namespace sparsetrain {

enum class LrDecay { Constant, Linear, Cosine, Step };

class LrSchedule {
 public:
  // lr at every step.
  static LrSchedule constant(double lr);
  // From lr at t = 0 down to end_lr at t = decay_steps, end_lr after (0 <= end_lr <= lr).
  static LrSchedule linear(double lr, int64_t decay_steps, double end_lr = 0.0);
  // Half a cosine from lr at t = 0 to min_lr at t = decay_steps, min_lr after (0 <= min_lr <= lr).
  static LrSchedule cosine(double lr, int64_t decay_steps, double min_lr = 0.0);
  // lr multiplied by gamma (in (0, 1]) every step_size steps.
  static LrSchedule step(double lr, int64_t step_size, double gamma = 0.1);

  // The same decay, delayed by a linear warm-up of warmup_steps steps that starts at
  // start_factor * lr (0 <= start_factor <= 1). warmup_steps == 0 means no warm-up.
  LrSchedule with_warmup(int64_t warmup_steps, double start_factor = 0.0) const;

  // Warm-up from 0 over warmup_steps, then a cosine down to min_lr at total_steps.
  static LrSchedule warmup_cosine(double lr, int64_t warmup_steps, int64_t total_steps, double min_lr = 0.0);
  // Warm-up from 0 over warmup_steps, then a straight line down to end_lr at total_steps.
  static LrSchedule warmup_linear(double lr, int64_t warmup_steps, int64_t total_steps, double end_lr = 0.0);

  // The learning rate at optimizer step `step` (>= 0).
  double at(int64_t step) const;

  LrDecay decay() const { return decay_; }
  double base_lr() const { return lr_; }
  int64_t warmup_steps() const { return warmup_steps_; }
  double start_factor() const { return start_factor_; }
  // e.g. "linear warm-up(warmup_steps=100, start_factor=0) then cosine(lr=0.001, decay_steps=900, min_lr=0)"
  std::string describe() const;

 private:
  LrSchedule(LrDecay decay, double lr) : decay_(decay), lr_(lr) {}

  LrDecay decay_;
  double lr_;
  int64_t warmup_steps_ = 0;
  double start_factor_ = 0.0;
  int64_t period_ = 0;  // decay_steps (linear, cosine) or step_size (step)
  double end_ = 0.0;    // end_lr (linear), min_lr (cosine) or gamma (step)
};

}  // namespace sparsetrain
