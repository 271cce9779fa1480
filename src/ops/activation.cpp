#include "ops/activation.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/parallel.h"

namespace sparsetrain {

namespace {

// sqrt(2 / pi) and GPT-2's cubic coefficient.
constexpr float kGeluScale = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

// Element-wise work below this size is not worth waking a second thread for.
constexpr int64_t kMinPerThread = 1 << 15;

// Runs body(begin, end) over [0, n) in contiguous chunks; each element is computed on its own, so
// the split never changes a result.
template <typename Body>
void for_chunks(int64_t n, const Body& body) {
  const int parts = static_cast<int>(std::min<int64_t>(n / kMinPerThread + 1, 1 << 16));
  parallel_run(parts, [&](int ith, int nth) {
    int64_t begin = 0, end = 0;
    balance_even(n, ith, nth, begin, end);
    body(begin, end);
  });
}

}  // namespace

Activation parse_activation(const std::string& text, const std::string& source) {
  if (text == "none") return Activation::None;
  if (text == "relu") return Activation::ReLU;
  if (text == "sigmoid") return Activation::Sigmoid;
  if (text == "tanh") return Activation::Tanh;
  if (text == "gelu") return Activation::Gelu;
  fail("{}: unknown activation '{}'; expected one of none, relu, sigmoid, tanh, gelu", source, text);
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::None: return "none";
    case Activation::ReLU: return "relu";
    case Activation::Sigmoid: return "sigmoid";
    case Activation::Tanh: return "tanh";
    case Activation::Gelu: return "gelu";
  }
  return "unknown";
}

void activation_forward(Activation a, const float* x, float* y, int64_t n) {
  if (n < 0) fail("activation_forward: element count must be >= 0, got {}", n);
  for_chunks(n, [&](int64_t begin, int64_t end) {
    switch (a) {
      case Activation::None:
        if (y != x) std::copy(x + begin, x + end, y + begin);
        break;
      case Activation::ReLU:
        // `x < 0 ? 0 : x` rather than std::max, so a NaN passes through as in torch.relu.
        for (int64_t i = begin; i < end; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
        break;
      case Activation::Sigmoid:
        // exp(-x) overflows to inf for x < -88 and the quotient is then the correct 0.
        for (int64_t i = begin; i < end; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
        break;
      case Activation::Tanh:
        for (int64_t i = begin; i < end; ++i) y[i] = std::tanh(x[i]);
        break;
      case Activation::Gelu:
        for (int64_t i = begin; i < end; ++i) {
          const float v = x[i];
          y[i] = 0.5f * v * (1.0f + std::tanh(kGeluScale * (v + kGeluCubic * v * v * v)));
        }
        break;
    }
  });
}

void activation_backward(Activation a, const float* x, const float* y, const float* dy, float* dx, int64_t n) {
  if (n < 0) fail("activation_backward: element count must be >= 0, got {}", n);
  for_chunks(n, [&](int64_t begin, int64_t end) {
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
        // d/dx 0.5 x (1 + tanh u) = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,
        // u = s (x + c x^3), du/dx = s (1 + 3 c x^2).
        for (int64_t i = begin; i < end; ++i) {
          const float v = x[i];
          const float th = std::tanh(kGeluScale * (v + kGeluCubic * v * v * v));
          const float du = kGeluScale * (1.0f + 3.0f * kGeluCubic * v * v);
          dx[i] = dy[i] * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du);
        }
        break;
    }
  });
}

}  // namespace sparsetrain
