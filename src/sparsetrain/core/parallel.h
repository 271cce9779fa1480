#pragma once
// Threading: one OpenMP pool per process (oneDNN uses the same one), behind two calls.
// Kernels never create threads and never call OpenMP directly; they receive (ith, nth) and
// split their own work, by nonzeros rather than rows (see balance_prefix).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace sparsetrain {

int num_threads();
void set_num_threads(int n);  // n >= 1; also what oneDNN's OpenMP pool uses

// Runs body(ith, nth) on nth = min(num_threads(), max_parts) threads and waits.
void parallel_run(int max_parts, const std::function<void(int ith, int nth)>& body);

// Runs body(begin, end) over [0, n) in contiguous ranges, one per thread, each of at least
// min_per_part items (fewer threads for small n). For items computed independently of one
// another, so the split never changes a result.
template <typename Body>
void parallel_ranges(int64_t n, int64_t min_per_part, const Body& body);

// Splits [0, n) into nth contiguous ranges of near-equal weight, where prefix[i] is the total
// weight before item i (a CSR row pointer: prefix.size() == n + 1). Returns nth + 1 boundaries.
std::vector<int64_t> balance_prefix(std::span<const int32_t> prefix, int nth);
// Even split of n items: the [begin, end) of part ith of nth.
inline void balance_even(int64_t n, int ith, int nth, int64_t& begin, int64_t& end) {
  begin = n * ith / nth;
  end = n * (ith + 1) / nth;
}

template <typename Body>
void parallel_ranges(int64_t n, int64_t min_per_part, const Body& body) {
  const int parts = static_cast<int>(std::clamp<int64_t>(n / std::max<int64_t>(min_per_part, 1), 1, 1 << 16));
  parallel_run(parts, [&](int ith, int nth) {
    int64_t begin = 0, end = 0;
    balance_even(n, ith, nth, begin, end);
    if (begin < end) body(begin, end);
  });
}

}  // namespace sparsetrain
