#pragma once
// The value refresh of the transposed companions: entry k of the companion is row index[k] of
// the source, `width` floats wide. Memory-bound, so every thread helps.
#include <cstdint>

#include "core/parallel.h"

namespace sparsetrain {

inline void parallel_gather(const float* src, const int32_t* index, int64_t count, int width, float* dst) {
  parallel_run(num_threads(), [&](int ith, int nth) {
    int64_t begin, end;
    balance_even(count, ith, nth, begin, end);
    for (int64_t k = begin; k < end; ++k)
      for (int s = 0; s < width; ++s) dst[k * width + s] = src[static_cast<int64_t>(index[k]) * width + s];
  });
}

}  // namespace sparsetrain
