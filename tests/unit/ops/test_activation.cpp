// Activations against float64 formulas, their derivatives by central differences, in-place use,
// NaN propagation and the name parser.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "layer_ops_testing.h"
#include "sparsetrain/ops/activation.h"

namespace sparsetrain {
namespace {

using namespace layer_testing;

constexpr Activation kAll[] = {Activation::None, Activation::ReLU, Activation::Sigmoid,
                               Activation::Tanh, Activation::Gelu, Activation::GeluErf};

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
    case Activation::GeluErf: return 0.5 * x * std::erfc(-x / std::numbers::sqrt2);
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

// GELU as x * sigmoid(2u): the textbook 1 + tanh u rounds to 0 in float64 too for x below about
// -6, so it cannot judge relative accuracy there.
double ref_gelu_stable(double x) {
  const double u = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));
}

double ref_gelu_derivative(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  const double u = k * (x + 0.044715 * x * x * x), du = k * (1.0 + 3.0 * 0.044715 * x * x);
  const double s = 1.0 / (1.0 + std::exp(-2.0 * u)), e = std::exp(-2.0 * u);
  return s + 2.0 * x * s * (e * s) * du;
}

// d/dx x Phi(x) = Phi(x) + x phi(x).
double ref_gelu_erf_derivative(double x) {
  return 0.5 * std::erfc(-x / std::numbers::sqrt2) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
}

double ref_exact(Activation a, double x) { return a == Activation::Gelu ? ref_gelu_stable(x) : ref_forward(a, x); }

// Relative error against float64 over a dense sweep of [-20, 20] (every 2^-12, plus the
// neighbourhood of 0 where tanh and GELU are ~x). Outputs below kTiny are held to it as an
// absolute bound instead: they are near or under float's smallest normal, and GELU flushes to
// zero below x = -10, where it is under 1.4e-37. The bound of 4e-7 (about 3 ulp) covers the exp
// polynomial, the division and the final rounding. For GELU it is scaled by max(1, |u|): u is
// rounded to float before e^-2u, whose relative error is then 2|u| times that of u (1e-5 at
// x = -10, where the output is 1e-37). The erf form's tail is e^(P - x^2/2): scaled by max(1, x^2/2).
constexpr double kTiny = 2e-37;

TEST(Activation, DenseSweepWithinFewUlpOfFloat64) {
  std::vector<float> x;
  for (int i = -20 * 4096; i <= 20 * 4096; ++i) x.push_back(static_cast<float>(i) / 4096.0f);
  for (float v = 1e-30f; v < 1.0f; v *= 1.37f) {
    x.push_back(v);
    x.push_back(-v);
  }
  const int64_t n = static_cast<int64_t>(x.size());
  for (Activation a : {Activation::Sigmoid, Activation::Tanh, Activation::Gelu, Activation::GeluErf}) {
    SCOPED_TRACE(activation_name(a));
    std::vector<float> y(x.size(), kNaN);
    activation_forward(a, x.data(), y.data(), n);
    double worst = 0.0;
    float worst_x = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      const double want = ref_exact(a, x[i]);
      if (std::fabs(want) < kTiny) {
        ASSERT_LE(std::fabs(y[i] - want), kTiny) << "x = " << x[i];
        continue;
      }
      double rel = std::fabs(y[i] - want) / std::fabs(want);
      if (a == Activation::Gelu) {
        const double u = std::sqrt(2.0 / std::numbers::pi) * (x[i] + 0.044715 * x[i] * x[i] * x[i]);
        rel /= std::max(1.0, std::fabs(u));
      }
      if (a == Activation::GeluErf) rel /= std::max(1.0, 0.5 * x[i] * x[i]);  // e^-(x^2/2) likewise
      if (rel > worst) worst = rel, worst_x = x[i];
    }
    RecordProperty(std::string(activation_name(a)) + "_max_rel_error", std::to_string(worst));
    std::printf("%s: max (scaled) relative error %.3g at x = %.9g\n", activation_name(a), worst, worst_x);
    // The erf form's fit (erfcc) contributes up to 1.2e-7 of its own.
    EXPECT_LE(worst, a == Activation::GeluErf ? 6e-7 : 4e-7) << "at x = " << worst_x;
  }
}

// Both GELUs' derivatives over the same sweep, to 1e-6 relative plus 1e-6 absolute: the float
// computation of u and du (tanh form) or of Phi and e^(-x^2/2) (erf form) carries a few ulp of its
// own, amplified where GELU' crosses zero.
TEST(Activation, GeluDerivativeDenseSweep) {
  std::vector<float> x;
  for (int i = -20 * 1024; i <= 20 * 1024; ++i) x.push_back(static_cast<float>(i) / 1024.0f);
  const int64_t n = static_cast<int64_t>(x.size());
  for (Activation a : {Activation::Gelu, Activation::GeluErf}) {
    SCOPED_TRACE(activation_name(a));
    std::vector<float> ones(x.size(), 1.0f), y(x.size()), dx(x.size(), kNaN);
    activation_forward(a, x.data(), y.data(), n);
    activation_backward(a, x.data(), y.data(), ones.data(), dx.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double want = a == Activation::Gelu ? ref_gelu_derivative(x[i]) : ref_gelu_erf_derivative(x[i]);
      ASSERT_TRUE(close(dx[i], want, 1e-6, 1e-6)) << "x = " << x[i];
    }
  }
}

// Infinities, the edges of float's exp range and huge finite inputs: the limits, never a spurious
// NaN or overflow, and NaN in, NaN out.
TEST(Activation, ExtremeInputs) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {kInf,   -kInf,   88.0f,    -88.0f,  88.7f,    -88.7f, 100.0f, -100.0f, 1e30f,
                                -1e30f, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 1e-45f, 0.0f,   -0.0f,   kNaN};
  const int64_t n = static_cast<int64_t>(x.size());
  for (Activation a : {Activation::Sigmoid, Activation::Tanh, Activation::Gelu}) {
    SCOPED_TRACE(activation_name(a));
    std::vector<float> y(x.size()), dx(x.size()), ones(x.size(), 1.0f);
    activation_forward(a, x.data(), y.data(), n);
    activation_backward(a, x.data(), y.data(), ones.data(), dx.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      SCOPED_TRACE("x = " + std::to_string(x[i]));
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(y[i]));
        EXPECT_TRUE(std::isnan(dx[i]));
        continue;
      }
      // GELU(-inf) is -inf * 0 in the tanh form and stays NaN, as in torch.
      if (a == Activation::Gelu && x[i] == -kInf) {
        EXPECT_TRUE(std::isnan(y[i]));
        continue;
      }
      const double want = ref_exact(a, x[i]);
      if (std::isinf(want)) {
        EXPECT_EQ(y[i], want);
      } else {
        EXPECT_TRUE(close(y[i], want, 4e-7, kTiny));
      }
      EXPECT_FALSE(std::isnan(dx[i]));
      EXPECT_TRUE(std::isfinite(dx[i]));
    }
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
