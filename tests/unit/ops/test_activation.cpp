// Activations against float64 formulas, their derivatives by central differences, in-place use,
// NaN propagation and the name parser.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "layer_ops_testing.h"
#include "ops/activation.h"

namespace sparsetrain {
namespace {

using namespace layer_testing;

constexpr Activation kAll[] = {Activation::None, Activation::ReLU, Activation::Sigmoid, Activation::Tanh,
                               Activation::Gelu};

double ref_forward(Activation a, double x) {
  switch (a) {
    case Activation::None: return x;
    case Activation::ReLU: return x > 0.0 ? x : 0.0;
    case Activation::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Activation::Tanh: return std::tanh(x);
    case Activation::Gelu: {
      const double k = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    }
  }
  return 0.0;
}

// Inputs in (-5, 5) kept away from 0 (ReLU's kink): |x| >= 0.05.
std::vector<float> make_inputs(int64_t n, uint64_t seed) {
  std::vector<float> x(static_cast<size_t>(n));
  Philox rng(seed, "act.x");
  for (int64_t i = 0; i < n; ++i) {
    const float u = rng.uniform(static_cast<uint64_t>(i));
    x[i] = (u < 0.5f ? -1.0f : 1.0f) * (0.05f + 9.9f * std::fabs(u - 0.5f));
  }
  return x;
}

// Sizes from one element to several parallel chunks.
constexpr int64_t kSizes[] = {1, 3, 17, 33, 100003};

TEST(Activation, ForwardMatchesFloat64Reference) {
  for (Activation a : kAll) {
    for (int64_t n : kSizes) {
      SCOPED_TRACE(std::string(activation_name(a)) + " n=" + std::to_string(n));
      const std::vector<float> x = make_inputs(n, static_cast<uint64_t>(n));
      std::vector<float> y(static_cast<size_t>(n), kNaN);
      activation_forward(a, x.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        // float tanh/exp are within a few ulp; GELU's 1 + tanh cancels for negative x, which
        // costs absolute, not relative, accuracy.
        ASSERT_TRUE(close(y[i], ref_forward(a, x[i]), 2e-6, 5e-7)) << "at " << i << ", x = " << x[i];
      }
    }
  }
}

TEST(Activation, ForwardInPlaceEqualsOutOfPlace) {
  const int64_t n = 100003;
  for (Activation a : kAll) {
    SCOPED_TRACE(activation_name(a));
    const std::vector<float> x = make_inputs(n, 7);
    std::vector<float> y(static_cast<size_t>(n), kNaN), inplace = x;
    activation_forward(a, x.data(), y.data(), n);
    activation_forward(a, inplace.data(), inplace.data(), n);
    EXPECT_TRUE(bitwise_equal(y.data(), inplace.data(), static_cast<size_t>(n)));
  }
}

TEST(Activation, NaNInputPropagates) {
  for (Activation a : kAll) {
    SCOPED_TRACE(activation_name(a));
    std::vector<float> x = make_inputs(5, 3);
    x[2] = kNaN;
    std::vector<float> y(5, kNaN);
    activation_forward(a, x.data(), y.data(), 5);
    EXPECT_TRUE(std::isnan(y[2]));
    for (int i : {0, 1, 3, 4}) EXPECT_FALSE(std::isnan(y[i])) << i;
  }
}

// L = sum_i f(x_i) R_i, so dL/dx_i = R_i f'(x_i): the derivative of the float64 forward by
// central differences against the float backward. For the small sizes every element is
// perturbed and L is recomputed in full.
TEST(Activation, BackwardMatchesFiniteDifferences) {
  for (Activation a : kAll) {
    for (int64_t n : {int64_t{1}, int64_t{17}, int64_t{33}}) {
      SCOPED_TRACE(std::string(activation_name(a)) + " n=" + std::to_string(n));
      const std::vector<float> x = make_inputs(n, static_cast<uint64_t>(100 + n));
      std::vector<float> r(static_cast<size_t>(n));
      fill_nonzero(r.data(), n, Philox(static_cast<uint64_t>(n), "act.r"));
      std::vector<float> y(static_cast<size_t>(n), kNaN), dx(static_cast<size_t>(n), kNaN);
      activation_forward(a, x.data(), y.data(), n);
      activation_backward(a, x.data(), y.data(), r.data(), dx.data(), n);

      std::vector<double> xd = to_double(x.data(), n);
      auto loss = [&] {
        double l = 0.0;
        for (int64_t i = 0; i < n; ++i) l += ref_forward(a, xd[i]) * r[i];
        return l;
      };
      for (int64_t i = 0; i < n; ++i) {
        const double fd = central_diff(xd, static_cast<size_t>(i), loss);
        // y is a float, so sigmoid and tanh derivatives carry its rounding (~1e-7 relative to y).
        ASSERT_TRUE(close(dx[i], fd, 1e-5, 1e-6)) << "at " << i << ", x = " << x[i];
      }
    }
  }
}

TEST(Activation, BackwardOnLargeInputsMatchesFiniteDifferences) {
  const int64_t n = 100003;
  for (Activation a : kAll) {
    SCOPED_TRACE(activation_name(a));
    const std::vector<float> x = make_inputs(n, 11);
    std::vector<float> r(static_cast<size_t>(n));
    fill_nonzero(r.data(), n, Philox(11, "act.r"));
    std::vector<float> y(static_cast<size_t>(n)), dx(static_cast<size_t>(n), kNaN);
    activation_forward(a, x.data(), y.data(), n);
    activation_backward(a, x.data(), y.data(), r.data(), dx.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double xi = x[i], h = 1e-5 * std::max(1.0, std::fabs(xi));
      const double fd = (ref_forward(a, xi + h) - ref_forward(a, xi - h)) / (2.0 * h) * r[i];
      ASSERT_TRUE(close(dx[i], fd, 1e-5, 1e-6)) << "at " << i << ", x = " << x[i];
    }
    // In place: dx aliases dy.
    std::vector<float> inplace = r;
    activation_backward(a, x.data(), y.data(), inplace.data(), inplace.data(), n);
    EXPECT_TRUE(bitwise_equal(dx.data(), inplace.data(), static_cast<size_t>(n)));
  }
}

// Sigmoid and tanh differentiate through y, ReLU and GELU through x: poisoning the other
// argument must not change the result.
TEST(Activation, BackwardReadsOnlyTheArgumentItNeeds) {
  const int64_t n = 33;
  const std::vector<float> x = make_inputs(n, 5);
  std::vector<float> r(static_cast<size_t>(n)), poison(static_cast<size_t>(n), kNaN);
  fill_nonzero(r.data(), n, Philox(5, "act.r"));
  for (Activation a : kAll) {
    SCOPED_TRACE(activation_name(a));
    std::vector<float> y(static_cast<size_t>(n)), want(static_cast<size_t>(n)), got(static_cast<size_t>(n), kNaN);
    activation_forward(a, x.data(), y.data(), n);
    activation_backward(a, x.data(), y.data(), r.data(), want.data(), n);
    const bool uses_y = a == Activation::Sigmoid || a == Activation::Tanh;
    if (uses_y) {
      activation_backward(a, poison.data(), y.data(), r.data(), got.data(), n);
    } else {
      activation_backward(a, x.data(), poison.data(), r.data(), got.data(), n);
    }
    EXPECT_TRUE(bitwise_equal(want.data(), got.data(), static_cast<size_t>(n)));
    for (int64_t i = 0; i < n; ++i) ASSERT_FALSE(std::isnan(got[i])) << i;
  }
}

TEST(Activation, NamesRoundTrip) {
  for (Activation a : kAll) EXPECT_EQ(parse_activation(activation_name(a), "test"), a);
  EXPECT_STREQ(activation_name(Activation::Gelu), "gelu");
  EXPECT_STREQ(activation_name(Activation::ReLU), "relu");
}

TEST(Activation, UnknownNameIsAnErrorNamingItAndTheSource) {
  const std::string msg = testing::error_of([] { parse_activation("swish", "model.mlp.activation"); });
  EXPECT_TRUE(has_substr(msg, "'swish'"));
  EXPECT_TRUE(has_substr(msg, "model.mlp.activation"));
  EXPECT_TRUE(has_substr(msg, "none, relu, sigmoid, tanh, gelu"));
  EXPECT_TRUE(has_substr(testing::error_of([] { parse_activation("GELU", "cfg"); }), "'GELU'"));
}

}  // namespace
}  // namespace sparsetrain
