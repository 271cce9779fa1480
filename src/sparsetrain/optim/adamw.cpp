#include "sparsetrain/optim/adamw.h"

#include <cmath>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {

struct AdamWScalars {
  float decay;      // 1 - lr * weight_decay
  float weight;     // lerp weight 1 - beta1
  float beta2;      //
  float one_beta2;  // 1 - beta2
  float bc2_sqrt;   // sqrt(1 - beta2^k)
  float eps;        //
  float neg_step;   // -(lr / (1 - beta1^k))
};

// PyTorch's scalar lerp (ATen/native/Lerp.h), exact at both ends of the weight range: the form
// for |weight| < 0.5 (kNearSelf) or the other one. The weight is the same for every element, so
// the form is a template argument: a branch per element kept the loop scalar.
template <bool kNearSelf>
inline float lerp(float self, float end, float weight) {
  if constexpr (kNearSelf) return self + weight * (end - self);
  return end - (end - self) * (1.0f - weight);
}

// The element loop; each line is one tensor op of PyTorch's _single_tensor_adamw. The scalars
// come by value: read through a reference, any store to p, m or v might change them, and GCC
// reloaded them per element instead of vectorizing. Vector and scalar code give the same bits
// (IEEE sqrt and division, no contraction in this library).
template <bool kDecay, bool kNearSelf>
void adamw_range(float* p, const float* g, float* m, float* v, const AdamWScalars s, std::size_t begin,
                 std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    float x = p[i];
    if constexpr (kDecay) x = x * s.decay;                // param.mul_(1 - lr * weight_decay)
    const float gi = g[i];
    const float mi = lerp<kNearSelf>(m[i], gi, s.weight);  // exp_avg.lerp_(grad, 1 - beta1)
    float vi = v[i] * s.beta2;                             // exp_avg_sq.mul_(beta2)
    vi = vi + s.one_beta2 * gi * gi;                       //     .addcmul_(grad, grad, value=1 - beta2)
    float denom = std::sqrt(vi) / s.bc2_sqrt;              // (exp_avg_sq.sqrt() / bias_correction2_sqrt)
    denom = denom + s.eps;                                 //     .add_(eps)
    x = x + s.neg_step * mi / denom;                       // param.addcdiv_(exp_avg, denom, value=-step_size)
    m[i] = mi;
    v[i] = vi;
    p[i] = x;
  }
}

using RangeFn = void (*)(float*, const float*, float*, float*, AdamWScalars, std::size_t, std::size_t);

RangeFn pick(bool decay, bool near_self) {
  if (decay) return near_self ? adamw_range<true, true> : adamw_range<true, false>;
  return near_self ? adamw_range<false, true> : adamw_range<false, false>;
}

}  // namespace

AdamW::AdamW(std::vector<Parameter*> params, LrSchedule lr, AdamWOptions options)
    : Optimizer(std::move(params), std::move(lr)), options_(options) {
  if (!(options_.beta1 >= 0.0 && options_.beta1 < 1.0))
    fail("adamw: 'beta1' must be in [0, 1), got {}", options_.beta1);
  if (!(options_.beta2 >= 0.0 && options_.beta2 < 1.0))
    fail("adamw: 'beta2' must be in [0, 1), got {}", options_.beta2);
  if (!(options_.eps >= 0.0) || !std::isfinite(options_.eps))
    fail("adamw: 'eps' must be a finite number >= 0, got {}", options_.eps);
  if (!(options_.weight_decay >= 0.0) || !std::isfinite(options_.weight_decay))
    fail("adamw: 'weight_decay' must be a finite number >= 0, got {}", options_.weight_decay);
}

void AdamW::update(Parameter& p, Bf16* bf16, double lr, int64_t step) {
  // Scalars as PyTorch computes them: Python floats (double), rounded to float by the kernel.
  const auto k = static_cast<double>(step);
  const double bias_correction1 = 1.0 - std::pow(options_.beta1, k);
  const double bias_correction2 = 1.0 - std::pow(options_.beta2, k);
  const AdamWScalars s{
      .decay = static_cast<float>(1.0 - lr * options_.weight_decay),
      .weight = static_cast<float>(1.0 - options_.beta1),
      .beta2 = static_cast<float>(options_.beta2),
      .one_beta2 = static_cast<float>(1.0 - options_.beta2),
      .bc2_sqrt = static_cast<float>(std::sqrt(bias_correction2)),
      .eps = static_cast<float>(options_.eps),
      .neg_step = static_cast<float>(-(lr / bias_correction1)),
  };
  float* values = p.values().data();
  const float* grad = p.grad().data();
  float* exp_avg = p.state("exp_avg").data();
  float* exp_avg_sq = p.state("exp_avg_sq").data();
  const RangeFn range = pick(options_.weight_decay != 0.0, std::abs(s.weight) < 0.5f);
  update_ranges(p.values().size(), values, bf16, [&](std::size_t begin, std::size_t end) {
    range(values, grad, exp_avg, exp_avg_sq, s, begin, end);
  });
}

}  // namespace sparsetrain
