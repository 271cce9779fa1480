#include "sparsetrain/optim/optimizer.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"

namespace sparsetrain {

namespace {

// Elements per thread below which splitting costs more than it saves.
constexpr int64_t kGrain = int64_t{1} << 15;
// Elements updated before their bf16 copy is written: AdamW touches 16 bytes of values, gradient
// and state per element, so 2048 of them stay within L1.
constexpr std::size_t kBf16Chunk = 2048;

}  // namespace

Optimizer::Optimizer(std::vector<Parameter*> params, LrSchedule schedule)
    : params_(std::move(params)), schedule_(std::move(schedule)) {
  if (params_.empty()) fail("optimizer: the parameter list is empty");
  std::unordered_set<const Parameter*> seen;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (params_[i] == nullptr) fail("optimizer: parameter {} of {} is null", i, params_.size());
    if (!seen.insert(params_[i]).second) fail("optimizer: parameter '{}' is listed twice", params_[i]->name());
  }
}

void Optimizer::step() {
  const int64_t k = steps_ + 1;
  const double lr = schedule_.at(k);
  for (Parameter* p : params_) {
    if (p->grad().size() != p->values().size())
      fail("optimizer: parameter '{}' has {} gradient values for {} values", p->name(), p->grad().size(),
           p->values().size());
    p->mask_grad();
    Bf16* bf16 = p->bf16_update_target();
    update(*p, bf16, lr, k);
    p->enforce_mask();
    if (bf16 != nullptr) p->bf16_updated();
  }
  steps_ = k;
  for (const PostStepHook& hook : hooks_) hook(k);
}

// Large gradients (the tied embedding's is 16 MB in the benchmark GPT) are cleared by every
// thread; small ones in one pass each.
void Optimizer::zero_grad() {
  for (Parameter* p : params_) {
    float* g = p->grad().data();
    for_ranges(p->grad().size(), [g](std::size_t begin, std::size_t end) { std::fill(g + begin, g + end, 0.0f); });
  }
}

void Optimizer::set_step(int64_t step) {
  if (step < 0) fail("optimizer: the step must be >= 0, got {}", step);
  steps_ = step;
}

void Optimizer::add_post_step_hook(PostStepHook hook) {
  if (!hook) fail("optimizer: a post-step hook must be callable");
  hooks_.push_back(std::move(hook));
}

void Optimizer::for_ranges(std::size_t n, const RangeBody& body) {
  parallel_ranges(static_cast<int64_t>(n), kGrain, [&](int64_t begin, int64_t end) {
    body(static_cast<std::size_t>(begin), static_cast<std::size_t>(end));
  });
}

void Optimizer::update_ranges(std::size_t n, const float* values, Bf16* bf16, const RangeBody& body) {
  if (bf16 == nullptr) {
    for_ranges(n, body);
    return;
  }
  for_ranges(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t b = begin; b < end; b += kBf16Chunk) {
      const std::size_t e = std::min(end, b + kBf16Chunk);
      body(b, e);
      for (std::size_t i = b; i < e; ++i) bf16[i] = to_bf16(values[i]);
    }
  });
}

}  // namespace sparsetrain
