#pragma once
// Axis ranges and tick marks that a reader can take in at a glance: linear axes step by 1, 2 or 5
// times a power of ten and end on a tick; log axes put their ticks on powers of ten.
#include <string>
#include <vector>

namespace sparsetrain {

enum class AxisScale { Linear, Log };

// The 1-2-5 step (1, 2 or 5 times a power of ten) nearest above span / target_count; span > 0.
double nice_step(double span, int target_count);

// Ticks `step` apart from the largest multiple of step <= lo to the smallest >= hi, where step is
// nice_step(hi - lo, target_count). lo == hi is widened first (by 10% of |lo|, or by 1 around 0),
// so the range is never empty.
std::vector<double> linear_ticks(double lo, double hi, int target_count = 6);

// Powers of ten from the largest <= lo to the smallest >= hi (at least two), every decade while
// they are at most max_count, else every k-th with k as small as fits; needs 0 < lo <= hi.
std::vector<double> log_ticks(double lo, double hi, int max_count = 9);

// A tick label: linear ticks with as many decimals as `step` needs, powers of ten as 0.001 to
// 10000 written out and 1e-4, 1e5, ... beyond.
std::string linear_tick_label(double value, double step);
std::string log_tick_label(double power_of_ten);

struct Axis {
  AxisScale scale = AxisScale::Linear;
  double lo = 0, hi = 1;  // the ends: the first and last tick
  std::vector<double> ticks;
  std::vector<std::string> labels;
  std::vector<double> minor;  // unlabelled: 2..9 times each power of ten on a log axis of single decades

  // Where `value` falls between the ends: 0 at lo, 1 at hi (log10 of both on a log axis).
  double fraction(double value) const;
};

// An axis covering [min, max] (data, already checked finite and, on a log axis, positive). With
// no data (min > max) it spans [0, 1], or [1, 10] on a log axis.
Axis make_axis(double min, double max, AxisScale scale, int target_count = 6);

}  // namespace sparsetrain
