// The multiply-add peak loop on vdpbf16ps: per float32 lane, two bf16 products added, 32
// multiply-adds an instruction where an fp32 FMA does 16. Compiled with AVX512-BF16 flags only here.
#include "sparsetrain/kernels/peak_rate.h"

#pragma GCC diagnostic ignored "-Wuninitialized"  // see spmm_avx512.cpp

#include <immintrin.h>

namespace sparsetrain::avx512_bf16 {

// Each lane adds seed * 1 + seed * 0 per round to its start, 1 (it stops growing, without
// overflow, once seed is below half its spacing); 12 chains as in simd/peak.h.
int64_t multiply_add_chains(int64_t iterations, float seed, float* sum) {
  constexpr int kChains = 12, kLanes = 16;
  __m512 chains[kChains];
  for (auto& c : chains) c = _mm512_set1_ps(1.0f);
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(seed), _mm512_set1_ps(seed));
  const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x00003f80));  // bf16 pairs (1, 0)
  for (int64_t i = 0; i < iterations; ++i)
    for (auto& c : chains) c = _mm512_dpbf16_ps(c, a, b);
  float total = 0.0f;
  for (const auto& c : chains) total += _mm512_reduce_add_ps(c);
  *sum = total;
  return iterations * kChains * kLanes * 4;
}

}  // namespace sparsetrain::avx512_bf16
