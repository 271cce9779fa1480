// The 16-lane AVX-512 vector helpers (`struct Simd`) the ISA-generic kernel bodies in simd/ are
// written against. Included only by translation units compiled with this ISA's flags.
#pragma once

#include <immintrin.h>

#include "sparsetrain/core/bf16.h"

// Kernel bodies live in SPARSETRAIN_SIMD_NS; the entry points spmm.h and attention_kernels.h
// declare are defined in SPARSETRAIN_ISA_NS. A translation unit compiled with more than AVX-512
// (spmm_avx512_bf16.cpp) names namespaces of its own first, so no inline body compiled with its
// flags can stand in for the AVX-512 one at link time.
#ifndef SPARSETRAIN_SIMD_NS
#define SPARSETRAIN_SIMD_NS avx512_detail
#define SPARSETRAIN_ISA_NS avx512
#endif
namespace sparsetrain::SPARSETRAIN_SIMD_NS {
struct Simd {
  using V = __m512;
  static constexpr int W = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_load_ps(p); }
  static void store(float* p, V v) { _mm512_store_ps(p, v); }
  static V bcast(float s) { return _mm512_set1_ps(s); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void stream(float* p, V v) { _mm512_stream_ps(p, v); }
  static void stream_fence() { _mm_sfence(); }
  // Vector v of a bf16 tile line (packed_tokens.h), widened: tokens 32p .. 32p + 31 sit in one
  // 64-byte line whose low and high words per 128-bit lane are tokens 32p + 16h + 4q .. + 3.
  static V load_bf16(const Bf16* line, int v) {
    const __m512i x = _mm512_load_si512(line + v / 2 * 32);
    const __m512i zero = _mm512_setzero_si512();
    return _mm512_castsi512_ps(v % 2 == 0 ? _mm512_unpacklo_epi16(zero, x) : _mm512_unpackhi_epi16(zero, x));
  }
  // The 16 lanes of v rounded to bf16 (nearest even; a NaN stays a quiet NaN), in lane order.
  static void store_bf16(Bf16* out, V v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i high = _mm512_srli_epi32(u, 16);
    const __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(high, _mm512_set1_epi32(1)));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
                              _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi32_epi16(r));
  }
  // In-register 16 x 16 transpose: r[i] lane j <-> r[j] lane i.
  static void transpose(V* r) {
    V t[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
      auto pd = [](V v) { return _mm512_castps_pd(v); };
      r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[i]), pd(t[i + 2])));
      r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[i]), pd(t[i + 2])));
      r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[i + 1]), pd(t[i + 3])));
      r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[i + 1]), pd(t[i + 3])));
    }
    for (int h = 0; h < 16; h += 8)
      for (int i = 0; i < 4; ++i) {
        t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
        t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
      }
    for (int i = 0; i < 8; ++i) {
      r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
      r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
  }
  // The fused CSR backward (simd/csr.h) reduces kGroup entries' gradients together over
  // kBackwardTiles tiles: two tiles' dX rows (2 x 4 vectors) and 16 gradient accumulators fit the
  // 32 registers, X[k] read from L1 by the FMAs.
  static constexpr int kGroup = 16;
  static constexpr int kBackwardTiles = 2;
  static V reduce_group(const V* v) { return reduce_lanes(v); }
  // Lane j of the result = sum of the 16 lanes of v[j]: a transpose-and-add tree,
  // 30 shuffles and 15 adds for 16 horizontal sums.
  static V reduce_lanes(const V* v) {
    V l1[8], l2[4], l3[2];
    for (int i = 0; i < 8; ++i)
      l1[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    for (int i = 0; i < 4; ++i)
      l2[i] = _mm512_add_ps(_mm512_shuffle_ps(l1[2 * i], l1[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm512_shuffle_ps(l1[2 * i], l1[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (int i = 0; i < 2; ++i)
      l3[i] = _mm512_add_ps(_mm512_shuffle_f32x4(l2[2 * i], l2[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_f32x4(l2[2 * i], l2[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(l3[0], l3[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(l3[0], l3[1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
};
}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
