// Level and update schedules: each formula at hand-worked points and at its boundaries, the
// update cadence's exclusive stop, and the messages of bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <utility>
#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/sparsity/schedule.h"

namespace sparsetrain {
namespace {

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(LevelSchedule, ConstantLinearPowerAtHandWorkedSteps) {
  EXPECT_DOUBLE_EQ(LevelSchedule::constant(0.9).at(0), 0.9);
  EXPECT_DOUBLE_EQ(LevelSchedule::constant(0.9).at(123456), 0.9);
  EXPECT_DOUBLE_EQ(LevelSchedule::linear(0.1, 0.001).at(200), 0.3);
  EXPECT_DOUBLE_EQ(LevelSchedule::linear(0.1, 0.001).at(5000), 1.0);  // clamped
  EXPECT_DOUBLE_EQ(LevelSchedule::linear(0.5, -0.01).at(100), 0.0);   // clamped
  EXPECT_DOUBLE_EQ(LevelSchedule::power(0.8, 0.5).at(3), 0.1);
}

TEST(LevelSchedule, ExpApproachesFinalFromInit) {
  const LevelSchedule s = LevelSchedule::exp(0.2, -0.01, 0.9);
  EXPECT_DOUBLE_EQ(s.at(0), 0.2);
  EXPECT_NEAR(s.at(100), 0.9 - 0.7 * std::exp(-1.0), 1e-15);
  EXPECT_NEAR(s.at(100000), 0.9, 1e-12);
  // Growing exponent: far steps overflow, the level stays clamped instead of becoming NaN.
  EXPECT_DOUBLE_EQ(LevelSchedule::exp(0.2, 1.0).at(100000), 0.0);
}

TEST(LevelSchedule, CosineFallsToMinimumAtHalfPeriodAndRisesAfter) {
  const LevelSchedule s = LevelSchedule::cosine(0.3, 1000, 0.1);
  EXPECT_DOUBLE_EQ(s.at(0), 0.3);
  EXPECT_NEAR(s.at(500), 0.2, 1e-15);
  EXPECT_NEAR(s.at(1000), 0.1, 1e-15);
  EXPECT_NEAR(s.at(1500), 0.2, 1e-15);
  EXPECT_NEAR(s.at(2000), 0.3, 1e-15);
  // RigL's decay alpha / 2 (1 + cos(pi t / T)) is the cosine with minimum 0.
  const LevelSchedule rigl = LevelSchedule::cosine(0.3, 7500);
  EXPECT_NEAR(rigl.at(2500), 0.15 * (1.0 + std::cos(std::numbers::pi / 3.0)), 1e-15);
}

TEST(LevelSchedule, CyclingFollowsTheUpdateIndexAndWraps) {
  const LevelSchedule s = LevelSchedule::cycling({0.5, 0.7, 0.8});
  EXPECT_DOUBLE_EQ(s.at(999, 0), 0.5);
  EXPECT_DOUBLE_EQ(s.at(0, 1), 0.7);
  EXPECT_DOUBLE_EQ(s.at(0, 2), 0.8);
  EXPECT_DOUBLE_EQ(s.at(0, 3), 0.5);
  EXPECT_DOUBLE_EQ(s.at(0, 3001), 0.7);
}

TEST(LevelSchedule, PolynomialIsTheCubicGmpRampHeldOutsideItsRange) {
  const LevelSchedule s = LevelSchedule::polynomial(0.0, 0.9, 1000, 3000);
  EXPECT_DOUBLE_EQ(s.at(0), 0.0);
  EXPECT_DOUBLE_EQ(s.at(1000), 0.0);
  EXPECT_NEAR(s.at(2000), 0.9 - 0.9 * 0.125, 1e-15);
  EXPECT_DOUBLE_EQ(s.at(3000), 0.9);
  EXPECT_DOUBLE_EQ(s.at(10000), 0.9);
  EXPECT_NEAR(LevelSchedule::polynomial(0.5, 0.9, 0, 100, 1.0).at(25), 0.6, 1e-15);
}

TEST(LevelSchedule, GraphcoreCosineIsZeroUntilZeroStepsThenDecaysFromInit) {
  const LevelSchedule s = LevelSchedule::graphcore_cosine(0.5, 1100, 100);
  EXPECT_DOUBLE_EQ(s.at(99), 0.0);
  EXPECT_DOUBLE_EQ(s.at(100), 0.5);
  EXPECT_NEAR(s.at(600), 0.25, 1e-15);
  EXPECT_NEAR(s.at(1100), 0.0, 1e-15);
}

TEST(LevelSchedule, ChangesSaysWhetherTheLevelDependsOnTheStep) {
  // Each kind, with arguments that make it change and ones that make it a constant; the claim is
  // checked against the levels themselves.
  const std::vector<std::pair<LevelSchedule, bool>> cases = {
      {LevelSchedule::constant(0.5), false},
      {LevelSchedule::linear(0.1, 0.001), true},
      {LevelSchedule::linear(0.5, 0.0), false},
      {LevelSchedule::exp(0.1, -0.01, 0.9), true},
      {LevelSchedule::exp(0.1, 0.0, 0.9), false},
      {LevelSchedule::exp(0.4, -0.01, 0.4), false},
      {LevelSchedule::power(0.5, 0.99), true},
      {LevelSchedule::power(0.5, 1.0), false},
      {LevelSchedule::power(0.0, 0.5), false},
      {LevelSchedule::cosine(0.5, 100, 0.1), true},
      {LevelSchedule::cosine(0.3, 100, 0.3), false},
      {LevelSchedule::polynomial(0.0, 0.8, 0, 40), true},
      {LevelSchedule::polynomial(0.6, 0.6, 0, 40), false},
      {LevelSchedule::graphcore_cosine(0.5, 100), true},
      {LevelSchedule::graphcore_cosine(0.0, 100), false},
  };
  for (const auto& [schedule, changes] : cases) {
    EXPECT_EQ(schedule.changes(), changes) << schedule.describe();
    bool differs = false;
    for (int64_t step = 1; step <= 200; ++step) differs = differs || schedule.at(step) != schedule.at(0);
    EXPECT_EQ(differs, changes) << schedule.describe();
  }
  // A cycle changes from update to update, not with the step.
  EXPECT_TRUE(LevelSchedule::cycling({0.5, 0.7}).changes());
  EXPECT_FALSE(LevelSchedule::cycling({0.5, 0.5, 0.5}).changes());
}

TEST(LevelSchedule, DescribeNamesKindAndArguments) {
  EXPECT_EQ(LevelSchedule::cosine(0.3, 7500).describe(), "cosine(init=0.3, half_period=7500, minimum=0)");
  EXPECT_EQ(LevelSchedule::cycling({0.5, 0.7}).describe(), "cycling([0.5, 0.7])");
  EXPECT_TRUE(LevelSchedule::constant(0.2).is_constant());
  EXPECT_FALSE(LevelSchedule::linear(0.2, 0.0).is_constant());
}

TEST(LevelSchedule, BadArgumentsNameScheduleAndArgument) {
  expect_error([] { LevelSchedule::constant(1.5); }, "constant schedule: 'value' must be in [0, 1], got 1.5");
  expect_error([] { LevelSchedule::constant(NAN); }, "'value' must be in [0, 1]");
  expect_error([] { LevelSchedule::linear(0.1, INFINITY); }, "linear schedule: 'slope' must be a finite number");
  expect_error([] { LevelSchedule::power(0.5, 0.0); }, "power schedule: 'beta' must be");
  expect_error([] { LevelSchedule::cosine(0.3, 0.0); }, "cosine schedule: 'half_period'");
  expect_error([] { LevelSchedule::cycling({}); }, "cycling schedule: 'values' must list at least one level");
  expect_error([] { LevelSchedule::cycling({0.5, -0.1}); }, "cycling schedule: 'values' must be in [0, 1]");
  expect_error([] { LevelSchedule::polynomial(0.0, 0.9, 100, 100); }, "'begin' < 'end'");
  expect_error([] { LevelSchedule::graphcore_cosine(0.5, 10, 10); }, "'zero_steps' < 'total_steps'");
}

TEST(UpdateSchedule, StopIsExclusiveAndStartOffsetsTheCadence) {
  // Cerebras' {freq: 100, stop: 3584}: optimizer steps 1, 2, ... update at 100 ... 3500.
  const UpdateSchedule s = UpdateSchedule::every(100, 0, 3584);
  std::vector<int64_t> fired;
  for (int64_t step = 1; step < 5000; ++step)
    if (s.fires(step)) fired.push_back(step);
  ASSERT_EQ(fired.size(), 35u);
  EXPECT_EQ(fired.front(), 100);
  EXPECT_EQ(fired.back(), 3500);
  EXPECT_FALSE(UpdateSchedule::every(100, 0, 3500).fires(3500));
  const UpdateSchedule late = UpdateSchedule::every(50, 120);
  EXPECT_FALSE(late.fires(100));
  EXPECT_TRUE(late.fires(120));
  EXPECT_FALSE(late.fires(150));
  EXPECT_TRUE(late.fires(170));
  EXPECT_TRUE(late.fires(1000020));
  EXPECT_EQ(late.first(), 120);
}

TEST(UpdateSchedule, StepListFiresExactlyOnItsSteps) {
  const UpdateSchedule s = UpdateSchedule::steps({2000, 0, 1000});
  EXPECT_EQ(s.first(), 0);
  int fired = 0;
  for (int64_t step = 0; step <= 3000; ++step) fired += s.fires(step);
  EXPECT_EQ(fired, 3);
  EXPECT_TRUE(s.fires(1000));
  EXPECT_FALSE(s.fires(1001));
  EXPECT_EQ(s.describe(), "at steps [0, 1000, 2000]");
  EXPECT_EQ(UpdateSchedule::every(100, 0, 7500).describe(), "every 100 steps from 0 to 7500 (exclusive)");
}

TEST(UpdateSchedule, BadArgumentsAreNamed) {
  expect_error([] { UpdateSchedule::every(0); }, "'freq' must be a number of steps >= 1, got 0");
  expect_error([] { UpdateSchedule::every(10, -1); }, "'start' must be >= 0");
  expect_error([] { UpdateSchedule::every(10, 100, 100); }, "'stop' (100, exclusive) must be after 'start' (100)");
  expect_error([] { UpdateSchedule::steps({}); }, "'steps' must list at least one step");
  expect_error([] { UpdateSchedule::steps({5, 1, 5}); }, "lists step 5 twice");
  expect_error([] { UpdateSchedule::steps({-3, 1}); }, "'steps' must be >= 0, got -3");
}

}  // namespace
}  // namespace sparsetrain
