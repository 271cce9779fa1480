#include "sparsetrain/data/numpy_shuffle.h"

#include <random>
#include <utility>

#include "sparsetrain/core/error.h"

namespace sparsetrain {
namespace {

// numpy's random_interval: a uniform draw from [0, max] by masking 32-bit Mersenne Twister
// outputs to the smallest covering power of two and rejecting those above max.
uint64_t interval(std::mt19937& mt, uint32_t max) {
  if (max == 0) return 0;
  uint32_t mask = max;
  for (int shift = 1; shift < 32; shift *= 2) mask |= mask >> shift;
  uint32_t value = 0;
  do value = static_cast<uint32_t>(mt()) & mask;
  while (value > max);
  return value;
}

}  // namespace

std::vector<std::vector<int64_t>> numpy_legacy_shuffles(std::span<const int64_t> sizes, uint32_t seed) {
  // RandomState.seed(int) is Matsumoto and Nishimura's init_genrand, which is what
  // std::mt19937's seeding constructor specifies.
  std::mt19937 mt(seed);
  std::vector<std::vector<int64_t>> out;
  for (const int64_t n : sizes) {
    if (n < 0 || n > (int64_t{1} << 32))
      fail("numpy_legacy_shuffles: n = {}: expected 0 <= n <= 2^32 (numpy draws wider intervals differently)", n);
    std::vector<int64_t>& order = out.emplace_back(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(order[static_cast<std::size_t>(i)], order[interval(mt, static_cast<uint32_t>(i))]);
  }
  return out;
}

}  // namespace sparsetrain
