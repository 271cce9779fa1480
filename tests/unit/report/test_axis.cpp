// Axis ticks: 1-2-5 steps whose ends cover the data, powers of ten on log axes, labels without
// floating-point noise, and the SVG number format every figure goes through.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sparsetrain/report/axis.h"
#include "sparsetrain/report/svg_document.h"

namespace sparsetrain {
namespace {

// Whether `x` is 1, 2 or 5 times a power of ten.
bool is_one_two_five(double x) {
  const double mantissa = x / std::pow(10.0, std::floor(std::log10(x) + 1e-12));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (std::abs(mantissa - m) < 1e-9) return true;
  return false;
}

TEST(NiceStep, PicksTheOneTwoFiveStepAtOrAboveTheRawStep) {
  EXPECT_DOUBLE_EQ(nice_step(10, 5), 2);
  EXPECT_DOUBLE_EQ(nice_step(10, 10), 1);
  EXPECT_DOUBLE_EQ(nice_step(7, 5), 2);   // raw 1.4
  EXPECT_DOUBLE_EQ(nice_step(13, 5), 5);  // raw 2.6
  EXPECT_DOUBLE_EQ(nice_step(0.3, 6), 0.05);
  EXPECT_DOUBLE_EQ(nice_step(3000, 6), 500);
  EXPECT_DOUBLE_EQ(nice_step(60, 6), 10);  // raw exactly 10
}

TEST(LinearTicks, CoverTheRangeWithEvenOneTwoFiveSteps) {
  struct Case {
    double lo, hi;
  };
  for (const Case c : {Case{0, 1}, Case{2.46, 3.31}, Case{-7, 13}, Case{10, 10000}, Case{0.8931, 0.9012},
                       Case{1e-5, 3e-4}, Case{123456, 123999}}) {
    SCOPED_TRACE(testing::Message() << c.lo << " .. " << c.hi);
    const std::vector<double> t = linear_ticks(c.lo, c.hi, 6);
    ASSERT_GE(t.size(), 2u);
    EXPECT_LE(t.size(), 13u);
    EXPECT_LE(t.front(), c.lo);
    EXPECT_GE(t.back(), c.hi);
    const double step = t[1] - t[0];
    EXPECT_TRUE(is_one_two_five(step)) << step;
    // The ends are the nearest ticks outside the data: one step in would cut it.
    EXPECT_GT(t.front() + step, c.lo);
    EXPECT_LT(t.back() - step, c.hi);
    for (std::size_t i = 1; i < t.size(); ++i) EXPECT_NEAR(t[i] - t[i - 1], step, 1e-9 * step);
    for (double v : t) EXPECT_NEAR(v / step, std::round(v / step), 1e-9);  // multiples of the step
  }
}

// Ticks equal to `expected` up to rounding: i * step is not always the decimal it stands for.
void expect_ticks(const std::vector<double>& ticks, const std::vector<double>& expected) {
  ASSERT_EQ(ticks.size(), expected.size());
  for (std::size_t i = 0; i < ticks.size(); ++i)
    EXPECT_NEAR(ticks[i], expected[i], 1e-12 * std::abs(expected[i]) + 1e-15);
}

TEST(LinearTicks, ExactValuesForCommonRanges) {
  expect_ticks(linear_ticks(0, 1, 5), {0, 0.2, 0.4, 0.6, 0.8, 1});
  expect_ticks(linear_ticks(0, 200, 4), {0, 50, 100, 150, 200});
  expect_ticks(linear_ticks(3.28, 2.46, 6), {2.4, 2.6, 2.8, 3.0, 3.2, 3.4});  // either order of the ends
  expect_ticks(linear_ticks(3.28, 2.46, 4), {2.0, 2.5, 3.0, 3.5});            // 0.205 a tick rounds up to 0.5
}

TEST(LinearTicks, AnEmptyRangeIsWidenedAroundTheValue) {
  const std::vector<double> flat = linear_ticks(0.9, 0.9, 6);
  ASSERT_GE(flat.size(), 2u);
  EXPECT_LT(flat.front(), 0.9);
  EXPECT_GT(flat.back(), 0.9);
  EXPECT_LT(flat.back() - flat.front(), 0.2);  // around 0.9, not 0 to 1
  const std::vector<double> zero = linear_ticks(0, 0, 6);
  EXPECT_LT(zero.front(), 0);
  EXPECT_GT(zero.back(), 0);
}

TEST(LogTicks, PowersOfTenCoveringTheRange) {
  expect_ticks(log_ticks(3.2e11, 2.1e13), {1e11, 1e12, 1e13, 1e14});
  expect_ticks(log_ticks(1e9, 1e11), {1e9, 1e10, 1e11});  // exact powers stay the ends
  expect_ticks(log_ticks(5, 5), {1, 10});                 // never a single tick
  expect_ticks(log_ticks(0.02, 0.5), {0.01, 0.1, 1});
}

TEST(LogTicks, ManyDecadesTakeAStrideWithBothEndsOnIt) {
  const std::vector<double> t = log_ticks(3e-3, 2e14, 9);  // decades -3 .. 15
  ASSERT_GE(t.size(), 2u);
  EXPECT_LE(t.size(), 9u);
  EXPECT_LE(t.front(), 3e-3);
  EXPECT_GE(t.back(), 2e14);
  const double stride = std::round(std::log10(t[1] / t[0]));
  EXPECT_GE(stride, 2);
  for (std::size_t i = 1; i < t.size(); ++i) EXPECT_NEAR(std::log10(t[i] / t[i - 1]), stride, 1e-9);
  for (double v : t) EXPECT_NEAR(std::log10(v), std::round(std::log10(v)), 1e-9);
}

TEST(TickLabels, AsManyDecimalsAsTheStepNeeds) {
  EXPECT_EQ(linear_tick_label(0.6000000000000001, 0.2), "0.6");
  EXPECT_EQ(linear_tick_label(0.85, 0.05), "0.85");
  EXPECT_EQ(linear_tick_label(1500, 500), "1500");
  EXPECT_EQ(linear_tick_label(-1e-17, 0.1), "0.0");  // no "-0.0"
  EXPECT_EQ(log_tick_label(1e12), "1e12");
  EXPECT_EQ(log_tick_label(1e-5), "1e-5");
  EXPECT_EQ(log_tick_label(1000), "1000");
  EXPECT_EQ(log_tick_label(0.01), "0.01");
}

TEST(MakeAxis, MapsTheEndsToZeroAndOne) {
  const Axis linear = make_axis(2.46, 3.31, AxisScale::Linear, 6);
  EXPECT_DOUBLE_EQ(linear.fraction(linear.lo), 0);
  EXPECT_DOUBLE_EQ(linear.fraction(linear.hi), 1);
  EXPECT_EQ(linear.labels.size(), linear.ticks.size());
  const Axis log = make_axis(3.2e11, 2.1e13, AxisScale::Log);
  EXPECT_DOUBLE_EQ(log.lo, 1e11);
  EXPECT_DOUBLE_EQ(log.hi, 1e14);
  EXPECT_NEAR(log.fraction(1e12), 1.0 / 3, 1e-12);
  EXPECT_EQ(log.labels, (std::vector<std::string>{"1e11", "1e12", "1e13", "1e14"}));
  ASSERT_EQ(log.minor.size(), 3u * 8u);  // 2..9 times each decade's power, unlabelled
  EXPECT_DOUBLE_EQ(log.minor.front(), 2e11);
  EXPECT_DOUBLE_EQ(log.minor.back(), 9e13);
  EXPECT_TRUE(linear.minor.empty());
  const Axis empty = make_axis(1, 0, AxisScale::Linear);  // no data
  EXPECT_EQ(empty.lo, 0);
  EXPECT_EQ(empty.hi, 1);
}

TEST(SvgNumber, FixedPrecisionWithoutNegativeZero) {
  EXPECT_EQ(svg_number(1.0 / 3), "0.33");
  EXPECT_EQ(svg_number(-0.001), "0.00");
  EXPECT_EQ(svg_number(-1.5), "-1.50");
  EXPECT_EQ(svg_number(2.0, 0), "2");
  EXPECT_EQ(xml_escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
}

}  // namespace
}  // namespace sparsetrain
