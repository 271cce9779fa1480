#pragma once
// Threading: one OpenMP pool per process (oneDNN uses the same one), behind two calls.
// Kernels never create threads and never call OpenMP directly; they receive (ith, nth) and
// split their own work, by nonzeros rather than rows (see balance_prefix).
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace sparsetrain {

int num_threads();
void set_num_threads(int n);  // n >= 1; also what oneDNN's OpenMP pool uses

// Runs body(ith, nth) on nth = min(num_threads(), max_parts) threads and waits.
void parallel_run(int max_parts, const std::function<void(int ith, int nth)>& body);

// Splits [0, n) into nth contiguous ranges of near-equal weight, where prefix[i] is the total
// weight before item i (a CSR row pointer: prefix.size() == n + 1). Returns nth + 1 boundaries.
std::vector<int64_t> balance_prefix(std::span<const int32_t> prefix, int nth);
// Even split of n items: the [begin, end) of part ith of nth.
inline void balance_even(int64_t n, int ith, int nth, int64_t& begin, int64_t& end) {
  begin = n * ith / nth;
  end = n * (ith + 1) / nth;
}

}  // namespace sparsetrain
