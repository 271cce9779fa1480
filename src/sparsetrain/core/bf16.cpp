#include "sparsetrain/core/bf16.h"

#include "sparsetrain/core/parallel.h"

namespace sparsetrain {

namespace {
// Below this many elements a conversion is not worth waking the pool.
constexpr int64_t kParallelElements = 1 << 16;

template <typename Fn>
void for_chunks(int64_t n, Fn fn) {
  if (n < kParallelElements) {
    fn(int64_t{0}, n);
    return;
  }
  parallel_run(num_threads(), [&](int ith, int nth) {
    int64_t begin = 0, end = 0;
    balance_even(n, ith, nth, begin, end);
    fn(begin, end);
  });
}
}  // namespace

void to_bf16(const float* src, Bf16* dst, int64_t n) {
  for_chunks(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dst[i] = to_bf16(src[i]);
  });
}

void to_float(const Bf16* src, float* dst, int64_t n) {
  for_chunks(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dst[i] = to_float(src[i]);
  });
}

}  // namespace sparsetrain
