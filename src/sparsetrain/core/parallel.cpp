#include "sparsetrain/core/parallel.h"

#include <omp.h>

#include <algorithm>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

int num_threads() { return omp_get_max_threads(); }

void set_num_threads(int n) {
  if (n < 1) fail("thread count must be at least 1, got {}", n);
  omp_set_num_threads(n);
}

void parallel_run(int max_parts, const std::function<void(int, int)>& body) {
  int nth = std::max(1, std::min(num_threads(), max_parts));
  if (nth == 1) {
    body(0, 1);
    return;
  }
#pragma omp parallel num_threads(nth)
  body(omp_get_thread_num(), omp_get_num_threads());
}

std::vector<int64_t> balance_prefix(std::span<const int32_t> prefix, int nth) {
  int64_t n = static_cast<int64_t>(prefix.size()) - 1;
  std::vector<int64_t> bounds(nth + 1, n);
  bounds[0] = 0;
  int64_t total = prefix[n] - prefix[0];
  for (int i = 1; i < nth; ++i) {
    int64_t target = prefix[0] + total * i / nth;
    auto it = std::lower_bound(prefix.begin(), prefix.end() - 1, target);
    bounds[i] = std::max<int64_t>(bounds[i - 1], it - prefix.begin());
  }
  return bounds;
}

}  // namespace sparsetrain
