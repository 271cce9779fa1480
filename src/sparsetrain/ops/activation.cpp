#include "sparsetrain/ops/activation.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/profile.h"
#include "sparsetrain/ops/fast_math.h"

namespace sparsetrain {

namespace {

// sqrt(2 / pi) and GPT-2's cubic coefficient.
constexpr float kGeluScale = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;
// 1 / sqrt(2) and 1 / sqrt(2 pi), for the erf form.
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;

// The lower tail 1 - Phi(|x|) = erfc(a) / 2, a = |x| / sqrt(2), from Numerical Recipes' erfcc:
// erfc(a) = t exp(-a^2 + P(t)), t = 1 / (1 + a / 2), with a relative error below 1.2e-7 for
// every a >= 0, so the tail keeps its relative accuracy far out (libm's erfcf is an opaque call
// that loops cannot vectorize, and dominated BERT's FFN). Where the exponent passes -87 the tail is
// under 1e-38 and exp_nonpositive holds it there.
inline float gelu_tail(float x) {
  const float a = std::fabs(x) * kInvSqrt2;
  const float t = 1.0f / (1.0f + 0.5f * a);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return 0.5f * t * exp_nonpositive(p - a * a);
}

// Phi(x), the standard normal CDF: the tail below 0, one minus it above (a NaN stays NaN).
inline float normal_cdf(float x) {
  const float tail = gelu_tail(x);
  return select(x < 0.0f, tail, 1.0f - tail);
}

// tanh with ~2 ulp relative error everywhere. Near 0, 1 - 2 / (e^2u + 1) cancels, so |u| < 0.625
// uses Cephes' odd polynomial instead; beyond 9, 1 - tanh is below half an ulp of 1.
inline float tanh_fast(float u) {
  const float a = std::fabs(u);
  const float z = u * u;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * u + u;
  const float ac = select(a > 9.0f, 9.0f, a);  // a NaN stays NaN
  const float large = std::copysign(1.0f - 2.0f / (exp_bounded(2.0f * ac) + 1.0f), u);
  return select(a < 0.625f, small, large);
}

// 1 / (1 + e^-x). Above 30 the result is 1 to float precision; below -88 it is under the
// smallest normal float and is flushed to 0 (with libm's expf, 1 / (1 + inf) flushes it too from
// -88.7 down).
inline float sigmoid_fast(float x) {
  const float xc = select(x > 30.0f, 30.0f, x);
  const float s = 1.0f / (1.0f + exp_bounded(select(xc < -88.0f, 88.0f, -xc)));
  return select(x < -88.0f, 0.0f, s);
}

// GELU's tanh form rewritten as x * sigmoid(2u): 1 + tanh u = 2 / (1 + e^-2u) has no
// cancellation for negative x, where the textbook form loses all relative accuracy. Beyond
// |x| = 10, e^-2u leaves the float range; the clamp keeps it finite and the callers patch the
// result (it is x above 10 and below float's normal range under -10).
constexpr float kGeluClamp = 10.0f;

inline float gelu_clamp(float v) {
  // Selects rather than std::clamp, so a NaN stays NaN.
  return select(v > kGeluClamp, kGeluClamp, select(v < -kGeluClamp, -kGeluClamp, v));
}

// e^-2u for u = s (v + c v^3), v already clamped.
inline float gelu_exp(float v) { return exp_bounded(-2.0f * kGeluScale * (v + kGeluCubic * v * v * v)); }

// Element-wise work below this size is not worth waking a second thread for.
constexpr int64_t kMinPerThread = 1 << 15;

}  // namespace

Activation parse_activation(const std::string& text, const std::string& source) {
  if (text == "none") return Activation::None;
  if (text == "relu") return Activation::ReLU;
  if (text == "sigmoid") return Activation::Sigmoid;
  if (text == "tanh") return Activation::Tanh;
  if (text == "gelu") return Activation::Gelu;
  if (text == "gelu_erf") return Activation::GeluErf;
  fail("{}: unknown activation '{}'; expected one of none, relu, sigmoid, tanh, gelu, gelu_erf", source, text);
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::None: return "none";
    case Activation::ReLU: return "relu";
    case Activation::Sigmoid: return "sigmoid";
    case Activation::Tanh: return "tanh";
    case Activation::Gelu: return "gelu";
    case Activation::GeluErf: return "gelu_erf";
  }
  return "unknown";
}

void activation_forward_range(Activation a, const float* x, float* y, int64_t begin, int64_t end) {
  switch (a) {
    case Activation::None:
      if (y != x) std::copy(x + begin, x + end, y + begin);
      break;
    case Activation::ReLU:
      // `x < 0 ? 0 : x` rather than std::max, so a NaN passes through as in torch.relu.
      for (int64_t i = begin; i < end; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
      break;
    case Activation::Sigmoid:
      for (int64_t i = begin; i < end; ++i) y[i] = sigmoid_fast(x[i]);
      break;
    case Activation::Tanh:
      for (int64_t i = begin; i < end; ++i) y[i] = tanh_fast(x[i]);
      break;
    case Activation::Gelu:
      for (int64_t i = begin; i < end; ++i) {
        const float v = x[i];
        const float s = v / (1.0f + gelu_exp(gelu_clamp(v)));
        // Below -10 the result underflows; v * 0 keeps the sign and turns -inf into NaN as the
        // tanh form does.
        y[i] = select(v < -kGeluClamp, v * 0.0f, s);
      }
      break;
    case Activation::GeluErf:
      for (int64_t i = begin; i < end; ++i) y[i] = x[i] * normal_cdf(x[i]);
      break;
  }
}

void activation_backward_range(Activation a, const float* x, const float* y, const float* dy, float* dx, int64_t begin,
                               int64_t end) {
  switch (a) {
    case Activation::None:
      if (dx != dy) std::copy(dy + begin, dy + end, dx + begin);
      break;
    case Activation::ReLU:
      // torch's threshold_backward: zero where x <= 0, so a NaN input lets the gradient through.
      for (int64_t i = begin; i < end; ++i) dx[i] = x[i] <= 0.0f ? 0.0f : dy[i];
      break;
    case Activation::Sigmoid:
      for (int64_t i = begin; i < end; ++i) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
      break;
    case Activation::Tanh:
      for (int64_t i = begin; i < end; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
      break;
    case Activation::Gelu:
      // With S = sigmoid(2u) and e = e^-2u: d/dx x S = S + 2 x S (1 - S) du/dx, and 1 - S = e S
      // has no cancellation as S -> 1; u = s (x + c x^3), du/dx = s (1 + 3 c x^2). Past the
      // clamp the derivative is 1 (above) or below 1e-35 (under), which the clamped x gives.
      for (int64_t i = begin; i < end; ++i) {
        const float v = gelu_clamp(x[i]);
        const float e = gelu_exp(v);
        const float sg = 1.0f / (1.0f + e);
        const float du = kGeluScale * (1.0f + 3.0f * kGeluCubic * v * v);
        // e * sg first: e alone reaches 1e38 at the clamp.
        dx[i] = dy[i] * (sg * (1.0f + 2.0f * v * du * (e * sg)));
      }
      break;
    case Activation::GeluErf:
      // d/dx x Phi(x) = Phi(x) + x phi(x).
      for (int64_t i = begin; i < end; ++i) {
        const float v = x[i];
        dx[i] = dy[i] * (normal_cdf(v) + v * kInvSqrt2Pi * exp_nonpositive(-0.5f * v * v));
      }
      break;
  }
}

void activation_forward(Activation a, const float* x, float* y, int64_t n) {
  const ProfileScope profile("activation");
  if (n < 0) fail("activation_forward: element count must be >= 0, got {}", n);
  parallel_ranges(n, kMinPerThread, [&](int64_t begin, int64_t end) { activation_forward_range(a, x, y, begin, end); });
}

void activation_backward(Activation a, const float* x, const float* y, const float* dy, float* dx, int64_t n) {
  const ProfileScope profile("activation");
  if (n < 0) fail("activation_backward: element count must be >= 0, got {}", n);
  parallel_ranges(n, kMinPerThread,
                  [&](int64_t begin, int64_t end) { activation_backward_range(a, x, y, dy, dx, begin, end); });
}

bool derivative_needs_output(Activation a) { return a == Activation::Sigmoid || a == Activation::Tanh; }

}  // namespace sparsetrain
