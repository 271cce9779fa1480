// Compile-time register blocking chosen at run time, shared by the attention kernels of every
// ISA (simd/attention.h, attention_avx512_bf16.cpp). Each call instantiates these for its own
// closure or vector type, so units compiled with different ISA flags never share an
// instantiation.
#pragma once

#include <type_traits>

namespace sparsetrain::simd {

// f(std::integral_constant<int, n>{}) for the run-time n in [1, kMax].
template <int kMax, typename F>
inline void with_vectors(int n, F&& f) {
  if constexpr (kMax > 1) {
    if (n < kMax) return with_vectors<kMax - 1>(n, f);
  }
  f(std::integral_constant<int, kMax>{});
}

// Zeroes a block of R x NC vector accumulators (V{}: all lanes zero).
template <typename V, int R, int NC>
inline void clear(V (&acc)[R][NC]) {
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NC; ++c) acc[r][c] = V{};
}

}  // namespace sparsetrain::simd
