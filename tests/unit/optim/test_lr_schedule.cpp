// Learning-rate schedules at their boundaries (step 0, end of warm-up, end of decay, beyond) and
// their validation messages.
#include <gtest/gtest.h>

#include <cmath>

#include "optim_test_util.h"
#include "sparsetrain/optim/lr_schedule.h"

namespace sparsetrain {
namespace {

using testing::error_of;

TEST(LrSchedule, ConstantIsTheSameEverywhere) {
  const LrSchedule s = LrSchedule::constant(0.1);
  EXPECT_EQ(s.at(0), 0.1);
  EXPECT_EQ(s.at(1), 0.1);
  EXPECT_EQ(s.at(int64_t{1} << 40), 0.1);
  EXPECT_EQ(s.decay(), LrDecay::Constant);
  EXPECT_EQ(s.warmup_steps(), 0);
}

TEST(LrSchedule, WarmupCosineBoundaries) {
  const LrSchedule s = LrSchedule::warmup_cosine(1.0, 10, 110, 0.1);
  EXPECT_EQ(s.at(0), 0.0);         // warm-up starts at 0
  EXPECT_DOUBLE_EQ(s.at(1), 0.1);  // the first optimizer step already trains
  EXPECT_DOUBLE_EQ(s.at(5), 0.5);
  EXPECT_DOUBLE_EQ(s.at(9), 0.9);
  EXPECT_EQ(s.at(10), 1.0);  // end of warm-up: the base rate, exactly
  EXPECT_LT(s.at(11), 1.0);
  EXPECT_DOUBLE_EQ(s.at(60), 0.55);  // half way down: min + (lr - min) / 2
  EXPECT_GT(s.at(109), 0.1);
  EXPECT_EQ(s.at(110), 0.1);  // end of decay: the minimum, exactly
  EXPECT_EQ(s.at(111), 0.1);
  EXPECT_EQ(s.at(100000), 0.1);
  EXPECT_EQ(s.decay(), LrDecay::Cosine);
  EXPECT_EQ(s.warmup_steps(), 10);
  EXPECT_EQ(s.base_lr(), 1.0);
}

TEST(LrSchedule, WarmupLinearBoundaries) {
  const LrSchedule s = LrSchedule::warmup_linear(0.5, 4, 14);
  EXPECT_EQ(s.at(0), 0.0);
  EXPECT_DOUBLE_EQ(s.at(2), 0.25);
  EXPECT_EQ(s.at(4), 0.5);
  EXPECT_DOUBLE_EQ(s.at(9), 0.25);
  EXPECT_DOUBLE_EQ(s.at(13), 0.05);
  EXPECT_EQ(s.at(14), 0.0);
  EXPECT_EQ(s.at(15), 0.0);
}

TEST(LrSchedule, DecaysWithoutWarmup) {
  const LrSchedule linear = LrSchedule::linear(1.0, 10, 0.2);
  EXPECT_EQ(linear.at(0), 1.0);
  EXPECT_DOUBLE_EQ(linear.at(5), 0.6);
  EXPECT_EQ(linear.at(10), 0.2);
  EXPECT_EQ(linear.at(11), 0.2);
  const LrSchedule cosine = LrSchedule::cosine(1.0, 4);
  EXPECT_EQ(cosine.at(0), 1.0);
  EXPECT_DOUBLE_EQ(cosine.at(2), 0.5);
  EXPECT_EQ(cosine.at(4), 0.0);
  EXPECT_EQ(cosine.at(5), 0.0);
}

TEST(LrSchedule, StepDecayMultipliesByGammaEveryStepSize) {
  const LrSchedule s = LrSchedule::step(0.1, 10, 0.5);
  EXPECT_EQ(s.at(0), 0.1);
  EXPECT_EQ(s.at(9), 0.1);
  EXPECT_DOUBLE_EQ(s.at(10), 0.05);
  EXPECT_DOUBLE_EQ(s.at(19), 0.05);
  EXPECT_DOUBLE_EQ(s.at(20), 0.025);
  EXPECT_DOUBLE_EQ(s.at(100), 0.1 / 1024);
  EXPECT_DOUBLE_EQ(LrSchedule::step(1.0, 3).at(3), 0.1);  // default gamma
}

TEST(LrSchedule, WarmupComposesWithAnyDecayAndAStartFactor) {
  // Warm-up from 0.5 * lr over 2 steps, then the step decay counted from the end of warm-up.
  const LrSchedule s = LrSchedule::step(1.0, 5, 0.1).with_warmup(2, 0.5);
  EXPECT_EQ(s.at(0), 0.5);
  EXPECT_EQ(s.at(1), 0.75);
  EXPECT_EQ(s.at(2), 1.0);
  EXPECT_EQ(s.at(6), 1.0);
  EXPECT_DOUBLE_EQ(s.at(7), 0.1);
  EXPECT_EQ(s.start_factor(), 0.5);

  const LrSchedule c = LrSchedule::constant(2.0).with_warmup(4, 0.25);
  EXPECT_EQ(c.at(0), 0.5);
  EXPECT_EQ(c.at(2), 1.25);
  EXPECT_EQ(c.at(4), 2.0);
  EXPECT_EQ(c.at(1000), 2.0);

  // The same cosine whichever way it is written.
  const LrSchedule a = LrSchedule::warmup_cosine(0.3, 5, 25, 0.03);
  const LrSchedule b = LrSchedule::cosine(0.3, 20, 0.03).with_warmup(5);
  for (int64_t k = 0; k <= 30; ++k) EXPECT_EQ(a.at(k), b.at(k)) << k;

  // No warm-up at all.
  EXPECT_EQ(LrSchedule::cosine(0.3, 20).with_warmup(0).at(0), 0.3);
}

TEST(LrSchedule, Describe) {
  EXPECT_EQ(LrSchedule::constant(0.1).describe(), "constant(lr=0.1)");
  EXPECT_EQ(LrSchedule::warmup_cosine(0.001, 100, 1000).describe(),
            "linear warm-up(warmup_steps=100, start_factor=0) then cosine(lr=0.001, decay_steps=900, min_lr=0)");
  EXPECT_EQ(LrSchedule::warmup_linear(0.5, 4, 14, 0.1).describe(),
            "linear warm-up(warmup_steps=4, start_factor=0) then linear(lr=0.5, decay_steps=10, end_lr=0.1)");
  EXPECT_EQ(LrSchedule::step(0.1, 30, 0.5).describe(), "step(lr=0.1, step_size=30, gamma=0.5)");
}

TEST(LrSchedule, ErrorsNameTheScheduleAndTheArgument) {
  EXPECT_EQ(error_of([] { LrSchedule::warmup_cosine(0.1, 100, 50); }),
            "cosine lr schedule: 'total_steps' must be > 'warmup_steps' (100), got 50");
  EXPECT_EQ(error_of([] { LrSchedule::warmup_cosine(0.1, 100, 100); }),
            "cosine lr schedule: 'total_steps' must be > 'warmup_steps' (100), got 100");
  EXPECT_EQ(error_of([] { LrSchedule::warmup_cosine(0.1, -1, 100); }),
            "cosine lr schedule: 'warmup_steps' must be >= 0, got -1");
  EXPECT_EQ(error_of([] { LrSchedule::warmup_cosine(0.1, 10, 100, 0.2); }),
            "cosine lr schedule: 'min_lr' must be in [0, 'lr' (0.1)], got 0.2");
  EXPECT_EQ(error_of([] { LrSchedule::warmup_linear(0.1, 10, 5); }),
            "linear lr schedule: 'total_steps' must be > 'warmup_steps' (10), got 5");
  EXPECT_EQ(error_of([] { LrSchedule::linear(0.1, 10, -0.01); }),
            "linear lr schedule: 'end_lr' must be in [0, 'lr' (0.1)], got -0.01");
  EXPECT_EQ(error_of([] { LrSchedule::cosine(0.1, 0); }),
            "cosine lr schedule: 'decay_steps' must be a number of steps >= 1, got 0");
  EXPECT_EQ(error_of([] { LrSchedule::constant(-1.0); }),
            "constant lr schedule: 'lr' must be a finite number >= 0, got -1");
  EXPECT_EQ(error_of([] { LrSchedule::constant(INFINITY); }),
            "constant lr schedule: 'lr' must be a finite number >= 0, got inf");
  EXPECT_EQ(error_of([] { LrSchedule::step(0.1, 0); }),
            "step lr schedule: 'step_size' must be a number of steps >= 1, got 0");
  EXPECT_EQ(error_of([] { LrSchedule::step(0.1, 10, 1.5); }), "step lr schedule: 'gamma' must be in (0, 1], got 1.5");
  EXPECT_EQ(error_of([] { LrSchedule::step(0.1, 10, 0.0); }), "step lr schedule: 'gamma' must be in (0, 1], got 0");
  EXPECT_EQ(error_of([] { LrSchedule::constant(0.1).with_warmup(-5); }),
            "constant lr schedule: 'warmup_steps' must be >= 0, got -5");
  EXPECT_EQ(error_of([] { LrSchedule::constant(0.1).with_warmup(5, 1.5); }),
            "constant lr schedule: 'start_factor' must be in [0, 1], got 1.5");
  EXPECT_EQ(error_of([] { LrSchedule::warmup_cosine(0.1, 10, 20).with_warmup(5); }),
            "cosine lr schedule: already has a warm-up of 10 steps");
  EXPECT_EQ(error_of([] { LrSchedule::cosine(0.1, 10).at(-1); }), "cosine lr schedule: the step must be >= 0, got -1");
  EXPECT_EQ(error_of([] { LrSchedule::constant(0.0).at(0); }), "no error");  // lr 0 is allowed, as in PyTorch
}

}  // namespace
}  // namespace sparsetrain
