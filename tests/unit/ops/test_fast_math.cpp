// The reductions and exponential of ops/fast_math.h on their own: a wrong row maximum still
// gives correct softmaxes for moderate inputs (the maximum cancels), so the softmax tests
// cannot see it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "layer_ops_testing.h"
#include "sparsetrain/ops/fast_math.h"

namespace sparsetrain {
namespace {

using namespace layer_testing;

// Lengths below, at and past the 16 lanes, with the largest value at every position: in the
// vector part, in the tail, first and last.
TEST(FastMath, RowMaxFindsTheLargestAtEveryPosition) {
  const Philox rng(7, "row_max");
  for (int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 47, 64, 70, 257}) {
    std::vector<float> x(static_cast<size_t>(n));
    // All negative, so starting from zero (or from any lane's wrong value) would show.
    for (int64_t i = 0; i < n; ++i)
      x[static_cast<size_t>(i)] = uniform_in(rng, static_cast<uint64_t>(i), -90.0f, -1.0f);
    for (int64_t p = 0; p < n; ++p) {
      std::vector<float> y = x;
      y[static_cast<size_t>(p)] = -0.5f;
      ASSERT_EQ(row_max(y.data(), n), -0.5f) << "n=" << n << " largest at " << p;
    }
    ASSERT_EQ(row_max(x.data(), n), *std::max_element(x.begin(), x.end())) << "n=" << n;
  }
}

TEST(FastMath, LaneSumMatchesTheDoubleSum) {
  const Philox rng(8, "lane_sum");
  for (int64_t n : {0, 1, 7, 8, 9, 100, 1001}) {
    std::vector<float> x(static_cast<size_t>(n));
    fill_nonzero(x.data(), n, rng);
    double ref = 0.0, ref_sq = 0.0, ref_dot = 0.0;
    for (float v : x) {
      ref += v;
      ref_sq += (static_cast<double>(v) - 0.25) * (static_cast<double>(v) - 0.25);
      ref_dot += static_cast<double>(v) * v;
    }
    EXPECT_NEAR(row_sum(x.data(), n), ref, 1e-12 * (1.0 + static_cast<double>(n))) << "n=" << n;
    EXPECT_NEAR(row_sum_squared_deviation(x.data(), n, 0.25), ref_sq, 1e-12 * (1.0 + static_cast<double>(n)));
    EXPECT_NEAR(row_dot_product(x.data(), x.data(), n), ref_dot, 1e-12 * (1.0 + static_cast<double>(n)));
  }
}

TEST(FastMath, ExpNonpositiveWithinAFewUlp) {
  for (int i = 0; i <= 20000; ++i) {
    const float x = -100.0f * static_cast<float>(i) / 20000.0f;
    const double ref = std::exp(std::max(static_cast<double>(x), -87.0));
    ASSERT_NEAR(exp_nonpositive(x), ref, 4e-7 * ref) << "x=" << x;
  }
  EXPECT_TRUE(std::isnan(exp_nonpositive(std::nanf(""))));
}

}  // namespace
}  // namespace sparsetrain
