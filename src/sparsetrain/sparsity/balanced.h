#pragma once
// Balanced selection (Cerebras' OutputGroupScoreShaper / InputGroupScoreShaper): the matrix is
// cut into `groups` equal stripes of consecutive rows (output groups) or columns (input
// groups), and a selection runs in each stripe on its own, so every stripe keeps the same
// count. Unstructured (element) units only.
#include <functional>

#include "sparsetrain/core/tensor.h"
#include "sparsetrain/formats/mask.h"

namespace sparsetrain {

enum class StripeAxis { Rows, Cols };

struct Balance {
  StripeAxis axis = StripeAxis::Rows;
  int groups = 1;
};

struct Stripe {
  int64_t r0, c0, rows, cols;
  ConstMatrixView of(ConstMatrixView m) const { return {m.data + r0 * m.ld + c0, rows, cols, m.ld}; }
};

// select(stripe, stripe's part of `mask`) -> the stripe's new mask, once per stripe in order;
// `mask` may be null (initial masks), and then so is the stripe's. Throws when the axis does not
// divide into `groups`.
Mask select_per_stripe(const Balance& balance, int64_t rows, int64_t cols, const Mask* mask,
                       const std::function<Mask(const Stripe& stripe, const Mask* stripe_mask)>& select);

}  // namespace sparsetrain
