#pragma once
// The values of the transposed companions that backward-data reads. They are rebuilt from the
// weight's values on every backward call, into one buffer per calling thread shared by every
// weight: a permuted copy kept per weight would be 4 more bytes per kept weight (an eighth of
// its training footprint with AdamW), and keeping it fresh needs the same gather anyway, once
// per optimizer step.
#include <cstddef>
#include <cstdint>

#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/core/parallel.h"

namespace sparsetrain {

// The calling thread's companion-values buffer of T (float, or Bf16 in mixed precision), `count`
// values, valid until its next call.
template <typename T = float>
inline T* transposed_values_scratch(std::size_t count) {
  thread_local AlignedBuffer<T> buffer;
  buffer.resize(count);
  return buffer.data();
}

// Entry k of the companion is row index[k] of the source, `width` floats wide. Memory-bound,
// so every thread helps.
template <typename T>
inline void parallel_gather(const T* src, const int32_t* index, int64_t count, int width, T* dst) {
  parallel_run(num_threads(), [&](int ith, int nth) {
    int64_t begin, end;
    balance_even(count, ith, nth, begin, end);
    for (int64_t k = begin; k < end; ++k)
      for (int s = 0; s < width; ++s) dst[k * width + s] = src[static_cast<int64_t>(index[k]) * width + s];
  });
}

}  // namespace sparsetrain
