#include "sparsetrain/sparsity/balanced.h"

#include <algorithm>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

Mask select_per_stripe(const Balance& balance, int64_t rows, int64_t cols, const Mask* mask,
                       const std::function<Mask(const Stripe& stripe, const Mask* stripe_mask)>& select) {
  const bool by_rows = balance.axis == StripeAxis::Rows;
  const int64_t extent = by_rows ? rows : cols;
  if (balance.groups < 1 || extent % balance.groups != 0)
    fail("balanced selection: {} {} do not split into {} equal groups", extent,
         by_rows ? "output rows" : "input columns", balance.groups);
  const int64_t width = extent / balance.groups;
  Mask result(rows, cols);
  for (int g = 0; g < balance.groups; ++g) {
    const Stripe s = by_rows ? Stripe{g * width, 0, width, cols} : Stripe{0, g * width, rows, width};
    Mask part;
    if (mask) {
      part = Mask(s.rows, s.cols);
      for (int64_t r = 0; r < s.rows; ++r) std::copy_n(mask->row(s.r0 + r) + s.c0, s.cols, part.row(r));
    }
    const Mask chosen = select(s, mask ? &part : nullptr);
    for (int64_t r = 0; r < s.rows; ++r) std::copy_n(chosen.row(r), s.cols, result.row(s.r0 + r) + s.c0);
  }
  return result;
}

}  // namespace sparsetrain
