// The 8-lane AVX2 vector helpers (`struct Simd`) the ISA-generic kernel bodies in simd/ are
// written against. Included only by translation units compiled with this ISA's flags.
#pragma once

#include <immintrin.h>

#include "sparsetrain/core/bf16.h"

// Kernel bodies live in SPARSETRAIN_SIMD_NS; the entry points spmm.h and attention_kernels.h
// declare are defined in SPARSETRAIN_ISA_NS.
#define SPARSETRAIN_SIMD_NS avx2_detail
#define SPARSETRAIN_ISA_NS avx2
namespace sparsetrain::avx2_detail {
struct Simd {
  using V = __m256;
  static constexpr int W = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, V v) { _mm256_store_ps(p, v); }
  static V bcast(float s) { return _mm256_set1_ps(s); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void stream(float* p, V v) { _mm256_stream_ps(p, v); }
  static void stream_fence() { _mm_sfence(); }
  // Vector v of a bf16 tile line (packed_tokens.h), widened: the 32 bytes at word 32g + 16s hold,
  // per 128-bit lane, tokens 32g + 8s + 4q .. + 3 then 32g + 16 + 8s + 4q .. + 3 (q = lane).
  static V load_bf16(const Bf16* line, int v) {
    const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(line + v / 4 * 32 + v % 2 * 16));
    const __m256i zero = _mm256_setzero_si256();
    return _mm256_castsi256_ps(v / 2 % 2 == 0 ? _mm256_unpacklo_epi16(zero, x) : _mm256_unpackhi_epi16(zero, x));
  }
  // The 8 lanes of v rounded to bf16 (nearest even; a NaN stays a quiet NaN), in lane order.
  static void store_bf16(Bf16* out, V v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i high = _mm256_srli_epi32(u, 16);
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(high, _mm256_set1_epi32(1)));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(high, _mm256_set1_epi32(0x40)),
                           _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), words);
  }
  // In-register 8 x 8 transpose: r[i] lane j <-> r[j] lane i.
  static void transpose(V* r) {
    V t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
      u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
      u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
      u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
      u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; ++i) {
      r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
      r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
  }
  // The fused CSR backward (simd/csr.h) reduces kGroup entries' gradients together over
  // kBackwardTiles tiles: one tile's dX row (8 vectors), 4 gradient accumulators, a dY vector and
  // a weight fit the 16 registers.
  static constexpr int kGroup = 4;
  static constexpr int kBackwardTiles = 1;
  // Lane j < 4 of the result = sum of the 8 lanes of v[j]; lanes 4..7 repeat them.
  static V reduce_group(const V* v) {
    const V s = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const V swapped = _mm256_permute2f128_ps(s, s, 0x01);
    return _mm256_add_ps(s, swapped);
  }
  // Lane j of the result = sum of the 8 lanes of v[j]: 12 shuffles and 7 adds for 8 sums.
  static V reduce_lanes(const V* v) {
    V l1[4], l2[2];
    for (int i = 0; i < 4; ++i)
      l1[i] = _mm256_add_ps(_mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    for (int i = 0; i < 2; ++i)
      l2[i] = _mm256_add_ps(_mm256_shuffle_ps(l1[2 * i], l1[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm256_shuffle_ps(l1[2 * i], l1[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm256_add_ps(_mm256_permute2f128_ps(l2[0], l2[1], 0x20), _mm256_permute2f128_ps(l2[0], l2[1], 0x31));
  }
};
}  // namespace sparsetrain::avx2_detail
