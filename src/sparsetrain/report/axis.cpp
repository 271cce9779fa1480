#include "sparsetrain/report/axis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sparsetrain/core/error.h"
#include "sparsetrain/report/svg_document.h"

namespace sparsetrain {

namespace {

// Tolerance for "is a multiple of the step" and "is a power of ten": data that sits on a tick,
// but is off by a rounding error, must not add a whole step to the axis.
constexpr double kSlack = 1e-9;

// The largest multiple of `k` (> 0) that is <= n.
int64_t floor_multiple(int64_t n, int64_t k) { return (n >= 0 ? n / k : -((-n + k - 1) / k)) * k; }

}  // namespace

double nice_step(double span, int target_count) {
  if (!(span > 0) || target_count < 1) fail("nice_step: span {} and count {} must be positive", span, target_count);
  const double raw = span / target_count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / power;
  const double nice = f <= 1 + kSlack ? 1 : f <= 2 + kSlack ? 2 : f <= 5 + kSlack ? 5 : 10;
  return nice * power;
}

std::vector<double> linear_ticks(double lo, double hi, int target_count) {
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) {
    const double half = lo == 0 ? 1.0 : std::abs(lo) * 0.05;
    lo -= half;
    hi += half;
  }
  const double step = nice_step(hi - lo, target_count);
  const auto first = static_cast<int64_t>(std::floor(lo / step + kSlack));
  auto last = static_cast<int64_t>(std::ceil(hi / step - kSlack));
  if (last == first) ++last;
  std::vector<double> ticks;
  // i * step, not a running sum: the sum drifts (0.1 + 0.2 != 0.3) and the ticks would too.
  for (int64_t i = first; i <= last; ++i) ticks.push_back(static_cast<double>(i) * step);
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi, int max_count) {
  if (!(lo > 0) || hi < lo) fail("log_ticks: needs 0 < lo <= hi, got {} and {}", lo, hi);
  const auto low = static_cast<int64_t>(std::floor(std::log10(lo) + kSlack));
  auto high = static_cast<int64_t>(std::ceil(std::log10(hi) - kSlack));
  if (high == low) ++high;
  // With a stride of k decades both ends move out to multiples of k, so that both are ticks.
  for (int64_t every = 1;; ++every) {
    const int64_t first = floor_multiple(low, every), last = -floor_multiple(-high, every);
    if ((last - first) / every + 1 > std::max(max_count, 2)) continue;
    std::vector<double> ticks;
    for (int64_t e = first; e <= last; e += every) ticks.push_back(std::pow(10.0, static_cast<double>(e)));
    return ticks;
  }
}

std::string linear_tick_label(double value, double step) {
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + kSlack)));
  return svg_number(value, decimals);
}

std::string log_tick_label(double power_of_ten) {
  const auto e = static_cast<int>(std::lround(std::log10(power_of_ten)));
  if (e >= -3 && e <= 4) return fmt::format("{:.{}f}", power_of_ten, std::max(0, -e));
  return fmt::format("1e{}", e);
}

double Axis::fraction(double value) const {
  if (scale == AxisScale::Log) return (std::log10(value) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  return (value - lo) / (hi - lo);
}

Axis make_axis(double min, double max, AxisScale scale, int target_count) {
  Axis a;
  a.scale = scale;
  if (min > max) {
    min = scale == AxisScale::Log ? 1.0 : 0.0;
    max = scale == AxisScale::Log ? 10.0 : 1.0;
  }
  if (scale == AxisScale::Log) {
    a.ticks = log_ticks(min, max, std::max(target_count + 3, 2));
    for (double t : a.ticks) a.labels.push_back(log_tick_label(t));
    const bool single_decades = a.ticks.size() < 2 || std::abs(a.ticks[1] / a.ticks[0] - 10) < 1e-6;
    for (std::size_t i = 0; single_decades && i + 1 < a.ticks.size(); ++i)
      for (int k = 2; k <= 9; ++k) a.minor.push_back(k * a.ticks[i]);
  } else {
    a.ticks = linear_ticks(min, max, target_count);
    const double step = a.ticks[1] - a.ticks[0];  // linear_ticks gives two at least
    for (double t : a.ticks) a.labels.push_back(linear_tick_label(t, step));
  }
  a.lo = a.ticks.front();
  a.hi = a.ticks.back();
  return a;
}

}  // namespace sparsetrain
