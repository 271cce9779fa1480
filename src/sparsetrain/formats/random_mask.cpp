#include "sparsetrain/formats/random_mask.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {
// The first `keep` entries of a Fisher-Yates shuffle of [0, n).
std::vector<int64_t> choose(int64_t n, int64_t keep, const Philox& rng) {
  std::vector<int64_t> items(n);
  std::iota(items.begin(), items.end(), 0);
  for (int64_t i = 0; i < keep; ++i) std::swap(items[i], items[i + rng.below(i, n - i)]);
  items.resize(keep);
  return items;
}
}  // namespace

Mask random_mask(const FormatSpec& format, int64_t rows, int64_t cols, double sparsity, const Philox& rng) {
  if (!(sparsity >= 0.0 && sparsity <= 1.0)) fail("random mask: sparsity {} is outside [0, 1]", sparsity);
  Mask mask(rows, cols);
  if (format.kind == FormatKind::NM) {
    if (cols % format.m != 0) fail("random {} mask: cols {} is not a multiple of {}", format.name(), cols, format.m);
    const int64_t groups = rows * (cols / format.m);
    uint64_t draw = 0;
    for (int64_t g = 0; g < groups; ++g) {
      int slots[32];
      std::iota(slots, slots + format.m, 0);
      for (int i = 0; i < format.n; ++i) std::swap(slots[i], slots[i + rng.below(draw++, format.m - i)]);
      int64_t r = g / (cols / format.m), c0 = g % (cols / format.m) * format.m;
      for (int i = 0; i < format.n; ++i) mask.set(r, c0 + slots[i], true);
    }
    return mask;
  }
  const int64_t b = format.block;
  const int64_t block_rows = (rows + b - 1) / b, block_cols = (cols + b - 1) / b;
  const int64_t units = block_rows * block_cols;
  const auto keep = static_cast<int64_t>(std::llround((1.0 - sparsity) * static_cast<double>(units)));
  for (int64_t unit : choose(units, keep, rng)) {
    int64_t br = unit / block_cols, bc = unit % block_cols;
    for (int64_t r = br * b; r < std::min(rows, (br + 1) * b); ++r)
      for (int64_t c = bc * b; c < std::min(cols, (bc + 1) * b); ++c) mask.set(r, c, true);
  }
  return mask;
}

}  // namespace sparsetrain
