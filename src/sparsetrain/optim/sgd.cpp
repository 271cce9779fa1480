#include "sparsetrain/optim/sgd.h"

#include <cmath>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {

// The element loop, with the options as template arguments so each variant is a branch-free
// loop. The statements follow PyTorch's _single_tensor_sgd; each line is one of its tensor ops.
enum class Decay { None, Coupled, Decoupled };

// `shrink` is 1 - lr * weight_decay, used by Decay::Decoupled only.
template <Decay kDecay, bool kMomentum, bool kFirst, bool kNesterov>
void sgd_range(float* p, const float* g, float* buf, float weight_decay, float shrink, float momentum, float keep,
               float neg_lr, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    float d = g[i];
    if constexpr (kDecay == Decay::Coupled) d = d + weight_decay * p[i];  // grad.add(param, alpha=weight_decay)
    if constexpr (kDecay == Decay::Decoupled) p[i] = p[i] * shrink;       // param.mul_(1 - lr * weight_decay)
    if constexpr (kMomentum) {
      float b;
      if constexpr (kFirst) {
        b = d;  // buf = clone(grad)
      } else {
        b = buf[i] * momentum;  // buf.mul_(momentum)
        b = b + keep * d;       //    .add_(grad, alpha=1 - dampening)
      }
      buf[i] = b;
      if constexpr (kNesterov) {
        d = d + momentum * b;  // grad.add(buf, alpha=momentum)
      } else {
        d = b;
      }
    }
    p[i] = p[i] + neg_lr * d;  // param.add_(grad, alpha=-lr)
  }
}

using RangeFn = void (*)(float*, const float*, float*, float, float, float, float, float, std::size_t, std::size_t);

template <Decay kDecay>
RangeFn pick(bool momentum, bool first, bool nesterov) {
  if (!momentum) return sgd_range<kDecay, false, false, false>;
  if (first) return nesterov ? sgd_range<kDecay, true, true, true> : sgd_range<kDecay, true, true, false>;
  return nesterov ? sgd_range<kDecay, true, false, true> : sgd_range<kDecay, true, false, false>;
}

}  // namespace

Sgd::Sgd(std::vector<Parameter*> params, LrSchedule lr, SgdOptions options)
    : Optimizer(std::move(params), std::move(lr)), options_(options) {
  if (!(options_.momentum >= 0.0) || !std::isfinite(options_.momentum))
    fail("sgd: 'momentum' must be a finite number >= 0, got {}", options_.momentum);
  if (!(options_.dampening >= 0.0 && options_.dampening <= 1.0))
    fail("sgd: 'dampening' must be in [0, 1], got {}", options_.dampening);
  if (!(options_.weight_decay >= 0.0) || !std::isfinite(options_.weight_decay))
    fail("sgd: 'weight_decay' must be a finite number >= 0, got {}", options_.weight_decay);
  if (options_.nesterov && (options_.momentum <= 0.0 || options_.dampening != 0.0))
    fail("sgd: nesterov momentum needs 'momentum' > 0 and 'dampening' == 0, got momentum {} and dampening {}",
         options_.momentum, options_.dampening);
}

std::vector<std::string> Sgd::state_keys() const {
  if (options_.momentum == 0.0) return {};
  return {"momentum"};
}

void Sgd::update(Parameter& p, Bf16* bf16, double lr, int64_t step) {
  const bool momentum = options_.momentum != 0.0;
  const Decay decay = options_.weight_decay == 0.0         ? Decay::None
                      : options_.decoupled_weight_decay ? Decay::Decoupled
                                                        : Decay::Coupled;
  float* values = p.values().data();
  const float* grad = p.grad().data();
  float* buf = momentum ? p.state("momentum").data() : nullptr;
  const auto wd = static_cast<float>(options_.weight_decay);
  const auto m = static_cast<float>(options_.momentum);
  const auto keep = static_cast<float>(1.0 - options_.dampening);
  const auto neg_lr = static_cast<float>(-lr);
  const auto shrink = static_cast<float>(1.0 - lr * options_.weight_decay);
  const bool first = step == 1;
  const RangeFn range = decay == Decay::None       ? pick<Decay::None>(momentum, first, options_.nesterov)
                        : decay == Decay::Coupled ? pick<Decay::Coupled>(momentum, first, options_.nesterov)
                                                  : pick<Decay::Decoupled>(momentum, first, options_.nesterov);
  update_ranges(p.values().size(), values, bf16, [&](std::size_t begin, std::size_t end) {
    range(values, grad, buf, wd, shrink, m, keep, neg_lr, begin, end);
  });
}

}  // namespace sparsetrain
