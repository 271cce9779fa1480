#pragma once
// Shared helpers of the layer-operation tests: seeded random fills, float64 copies, central
// finite differences, a thread-count guard and message checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "error_of.h"
#include "isa_testing.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/core/tensor.h"

namespace sparsetrain::layer_testing {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Uniform in [lo, hi).
inline float uniform_in(const Philox& rng, uint64_t i, float lo, float hi) { return lo + (hi - lo) * rng.uniform(i); }

// Nonzero values: magnitude in [0.5, 1.5) * amp, random sign.
inline float nonzero_at(const Philox& rng, uint64_t i, float amp = 1.0f) {
  const float u = rng.uniform(i);
  return amp * (u < 0.5f ? -1.0f : 1.0f) * (0.5f + 2.0f * std::fabs(u - 0.5f));
}
inline void fill_nonzero(float* data, int64_t n, const Philox& rng, float amp = 1.0f) {
  for (int64_t i = 0; i < n; ++i) data[i] = nonzero_at(rng, static_cast<uint64_t>(i), amp);
}

// A matrix stored with `pad` unused floats after every row (filled with NaN), so tests catch any
// use of cols where ld was meant.
struct Padded {
  std::vector<float> storage;
  int64_t rows = 0, cols = 0, ld = 0;
  Padded(int64_t r, int64_t c, int64_t pad, float fill = kNaN)
      : storage(static_cast<size_t>(r * (c + pad) + 1), kNaN), rows(r), cols(c), ld(c + pad) {
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) at(i, j) = fill;
  }
  float& at(int64_t r, int64_t c) { return storage[static_cast<size_t>(r * ld + c)]; }
  float at(int64_t r, int64_t c) const { return storage[static_cast<size_t>(r * ld + c)]; }
  MatrixView view() { return {storage.data(), rows, cols, ld}; }
  ConstMatrixView cview() const { return {storage.data(), rows, cols, ld}; }
  void fill_nonzero(const Philox& rng, float amp = 1.0f) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) at(i, j) = nonzero_at(rng, static_cast<uint64_t>(i * cols + j), amp);
  }
  // The padding still holds NaN: nothing wrote past cols.
  bool padding_untouched() const {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = cols; j < ld; ++j)
        if (!std::isnan(at(i, j))) return false;
    return true;
  }
  std::vector<double> to_double() const {
    std::vector<double> out(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) out[static_cast<size_t>(i * cols + j)] = at(i, j);
    return out;
  }
};

inline std::vector<double> to_double(const float* p, int64_t n) { return std::vector<double>(p, p + n); }

// Central difference of f at x[i] in double: (f(x + h e_i) - f(x - h e_i)) / 2h, x restored.
// The step is 1e-5 relative to x[i] (at least 1e-5) unless given.
inline double central_diff(std::vector<double>& x, size_t i, const std::function<double()>& f, double step = 0.0) {
  const double h = step > 0.0 ? step : 1e-5 * std::max(1.0, std::fabs(x[i]));
  const double saved = x[i];
  x[i] = saved + h;
  const double up = f();
  x[i] = saved - h;
  const double down = f();
  x[i] = saved;
  return (up - down) / (2.0 * h);
}

// |got - want| <= rtol * |want| + atol, with a readable failure.
inline ::testing::AssertionResult close(double got, double want, double rtol, double atol) {
  if (std::fabs(got - want) <= rtol * std::fabs(want) + atol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << ", want " << want << " (diff " << std::fabs(got - want)
                                       << ", tolerance " << rtol * std::fabs(want) + atol << ")";
}

inline double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

inline bool bitwise_equal(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

using testing::ThreadCount;
using testing_isa::IsaCap;
using testing_isa::usable_isas;

inline ::testing::AssertionResult has_substr(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

}  // namespace sparsetrain::layer_testing
