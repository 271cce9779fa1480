// AVX512-BF16 attention products for bf16 mixed precision: every operand rounded to bf16 (nearest
// even; see to_words), pairs of them multiplied and both products added to a float32
// lane by vdpbf16ps, which does 32 multiply-adds where an fp32 FMA does 16. The contract is
// attention_kernels.h's, with the same keys seen and nothing non-finite crossing the mask:
//
//   scores  pairs run over channels: the keys are packed channel-pair-major, B^T in lines of 16
//           tokens whose lanes hold (b[s][2j], b[s][2j + 1]); a query's pair is broadcast.
//   rows    pairs run over keys: X is packed key-pair-major, lanes (x[2i][d], x[2i + 1][d]);
//           P's row in bf16 is already in pairs (p[t][2i], p[t][2i + 1]).
//   cols    pairs run over queries: X packed the same way over queries; P's entries for a strip
//           of 16 output keys are paired across two query rows, (p[2i][s], p[2i + 1][s]).
//
// A pair whose second (or, in cols, first) term lies outside what the output row sees is
// multiplied with that half of X's line zeroed as well as P's, so a non-finite future or padded
// value meets no zero it could turn into NaN. Sums run in a fixed order per output element.
#include "sparsetrain/kernels/attention_kernels.h"

// GCC 12 reports the undefined passthrough operand inside its own AVX-512 intrinsics as
// uninitialized in the sanitizer build; see spmm_avx512.cpp.
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>

// The AVX-512 vector helpers in the namespaces of the AVX512-BF16 units (spmm_avx512_bf16.cpp).
#define SPARSETRAIN_SIMD_NS avx512_bf16_detail
#define SPARSETRAIN_ISA_NS avx512_bf16
#include "sparsetrain/kernels/simd/isa_avx512.h"
#include "sparsetrain/kernels/simd/with_vectors.h"

namespace sparsetrain {
namespace {

using avx512_bf16_detail::Simd;
using simd::clear;
using simd::with_vectors;

constexpr int W = 16;
using V = __m512;
using Vi = __m512i;

// Scores: kScoreRows queries x up to kScoreVectors vectors of 16 keys in registers.
constexpr int kScoreRows = 6;
constexpr int kScoreVectors = 4;
// rows / cols: a block of output rows x up to kProductVectors vectors of 16 channels.
constexpr int kProductVectors = 4;
constexpr int product_rows(int vectors) { return std::min(8, (32 - 2 - vectors) / vectors); }

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// A per-thread buffer of at least n words, 64-byte aligned, kept between calls (a fresh one per
// call would be mapped and page-faulted anew). slot: one buffer per use within a call.
uint32_t* scratch(int slot, int64_t n) {
  struct Buffer {
    uint32_t* words = nullptr;
    int64_t size = 0;
    ~Buffer() { std::free(words); }
  };
  thread_local Buffer buffers[2];
  Buffer& b = buffers[slot];
  if (b.size < n) {
    std::free(b.words);
    b.words = static_cast<uint32_t*>(std::aligned_alloc(64, static_cast<size_t>(round_up(n, 16)) * 4));
    b.size = b.words != nullptr ? n : 0;
    if (b.words == nullptr) throw std::bad_alloc();
  }
  return b.words;
}

__mmask16 first_lanes(int64_t n) {
  return n >= W ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << std::max<int64_t>(n, 0)) - 1);
}

// lo and hi rounded to bf16 by vcvtne2ps2bf16, 32 values in order: lo's 16, then hi's. It rounds
// to nearest even and keeps NaN a quiet NaN, as core/bf16.h does, and turns float32 denormals
// into zeros, which vdpbf16ps would treat as zeros anyway.
Vi to_words(V lo, V hi) { return reinterpret_cast<Vi>(_mm512_cvtne2ps_pbh(hi, lo)); }

// Lane l: (a[l], b[l]) as a bf16 pair, a in the low half.
Vi pair_lanes(V a, V b) {
  const Vi interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(interleave, to_words(a, b));
}

// out[j] = (v[2j], v[2j + 1]) rounded, for the pairs of the first `count` values of v, zero from
// v[count] on, in whole groups of 16 pairs: out must have room for round_up(count, 32) / 2.
void store_row_pairs(const float* v, int64_t count, uint32_t* out) {
  for (int64_t k = 0; k < count; k += 2 * W) {
    const V lo = _mm512_maskz_loadu_ps(first_lanes(count - k), v + k);
    const V hi = _mm512_maskz_loadu_ps(first_lanes(count - k - W), v + k + W);
    _mm512_storeu_si512(out + k / 2, to_words(lo, hi));
  }
}

V dp(V acc, Vi pairs, Vi broadcast) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(pairs), reinterpret_cast<__m512bh>(broadcast));
}

// The first or the second bf16 of each pair (functions: a namespace-scope vector constant would
// run AVX-512 code when the program starts, on any CPU).
Vi low_halves() { return _mm512_set1_epi32(0x0000ffff); }
Vi high_halves() { return _mm512_set1_epi32(static_cast<int>(0xffff0000u)); }

// --- scores -------------------------------------------------------------------------------------

// bt[j * ldt + u] = (b[u][2j], b[u][2j + 1]) for the L keys u < L, zero for u in [L, ldt) and for
// the channel past an odd D; P = (D + 1) / 2 pair lines of ldt = round_up(L, 16) tokens.
void pack_key_pairs(int64_t L, int64_t D, const float* b, int64_t ldb, uint32_t* bt, int64_t ldt) {
  const int64_t P = (D + 1) / 2;
  for (int64_t u0 = 0; u0 < L; u0 += W)
    for (int64_t c0 = 0; c0 < D; c0 += 2 * W) {
      V r[16];  // 32-bit pairs, moved as floats by the transpose
      for (int u = 0; u < W; ++u) {
        if (u0 + u >= L) {
          r[u] = _mm512_setzero_ps();
          continue;
        }
        const float* row = b + (u0 + u) * ldb + c0;
        r[u] = _mm512_castsi512_ps(to_words(_mm512_maskz_loadu_ps(first_lanes(D - c0), row),
                                            _mm512_maskz_loadu_ps(first_lanes(D - c0 - W), row + W)));
      }
      Simd::transpose(r);
      for (int64_t j = 0; j < W && c0 / 2 + j < P; ++j)
        _mm512_store_si512(bt + (c0 / 2 + j) * ldt + u0, _mm512_castps_si512(r[j]));
    }
}

// s[i][c * W + l] = alpha * sum_j at[i][j] . bt[j][c * W + l] for i < R, c < NC.
template <int R, int NC>
void score_chunk(int64_t P, float alpha, const uint32_t* at, const uint32_t* bt, int64_t ldt, float* s, int64_t lds) {
  V acc[R][NC];
  clear(acc);
  for (int64_t j = 0; j < P; ++j) {
    Vi bv[NC];
    for (int c = 0; c < NC; ++c) bv[c] = _mm512_load_si512(bt + j * ldt + c * W);
    for (int i = 0; i < R; ++i) {
      const Vi av = _mm512_set1_epi32(static_cast<int>(at[i * P + j]));
      for (int c = 0; c < NC; ++c) acc[i][c] = dp(acc[i][c], bv[c], av);
    }
  }
  const V al = _mm512_set1_ps(alpha);
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < NC; ++c) _mm512_storeu_ps(s + i * lds + c * W, _mm512_mul_ps(acc[i][c], al));
}

// Rows [t0, t0 + R) of S over the keys the last row sees, whole vectors (lds covers them).
template <int R>
void score_rows(int64_t t0, int64_t P, AttentionMask m, float alpha, const uint32_t* at, const uint32_t* bt,
                int64_t ldt, float* s, int64_t lds) {
  const int64_t end = m.end(t0 + R - 1);
  for (int64_t s0 = 0; s0 < end; s0 += kScoreVectors * W) {
    const int nv = static_cast<int>(std::min<int64_t>(kScoreVectors, (end - s0 + W - 1) / W));
    with_vectors<kScoreVectors>(nv, [&](auto nc) {
      score_chunk<R, decltype(nc)::value>(P, alpha, at + t0 * P, bt + s0, ldt, s + t0 * lds + s0, lds);
    });
  }
}

// --- rows and cols ------------------------------------------------------------------------------

// xp[i * ldx2 + d] = (x[2i][d], x[2i + 1][d]) for i < (n + 1) / 2, with rows >= n and channels
// >= D zero; ldx2 = round_up(D, 16).
void pack_row_pairs(int64_t n, int64_t D, const float* x, int64_t ldx, uint32_t* xp, int64_t ldx2) {
  for (int64_t i = 0; i < (n + 1) / 2; ++i) {
    const float* r0 = x + 2 * i * ldx;
    const float* r1 = r0 + ldx;
    for (int64_t d = 0; d < ldx2; d += W) {
      const __mmask16 k = first_lanes(D - d);
      const V a = _mm512_maskz_loadu_ps(k, r0 + d);
      const V b = 2 * i + 1 < n ? _mm512_maskz_loadu_ps(k, r1 + d) : _mm512_setzero_ps();
      _mm512_store_si512(xp + i * ldx2 + d, pair_lanes(a, b));
    }
  }
}

// y[r][c * W + l] = alpha * acc[r][c] lane l, the last vector's first `tail` lanes only.
template <int R, int NC>
void store_block(const V (&acc)[R][NC], float alpha, int64_t tail, float* y, int64_t ldy) {
  const V al = _mm512_set1_ps(alpha);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NC; ++c) {
      const __mmask16 k = c == NC - 1 ? first_lanes(tail) : static_cast<__mmask16>(0xffff);
      _mm512_mask_storeu_ps(y + r * ldy + c * W, k, _mm512_mul_ps(acc[r][c], al));
    }
}

// acc[r] += pair(r) . lines for every block row r: the rows all take both halves of the pair.
template <int R, int NC, typename Pair>
void add_pair(V (&acc)[R][NC], const Vi (&lines)[NC], Pair pair) {
  for (int r = 0; r < R; ++r) {
    const Vi bc = _mm512_set1_epi32(static_cast<int>(pair(r)));
    for (int c = 0; c < NC; ++c) acc[r][c] = dp(acc[r][c], lines[c], bc);
  }
}

// acc[r] += pair(r) . lines over the block rows r for which sees(r) says which halves of the pair
// the row takes: 3 both, 1 the first, 2 the second, 0 none.
template <int R, int NC, typename Pair, typename Sees>
void add_pair_partial(V (&acc)[R][NC], const Vi (&lines)[NC], Pair pair, Sees sees) {
  for (int r = 0; r < R; ++r) {
    const int halves = sees(r);
    if (halves == 0) continue;
    const Vi bc = _mm512_set1_epi32(static_cast<int>(pair(r)));
    for (int c = 0; c < NC; ++c) {
      const Vi l = halves == 3 ? lines[c] : _mm512_and_si512(lines[c], halves == 1 ? low_halves() : high_halves());
      acc[r][c] = dp(acc[r][c], l, bc);
    }
  }
}

// Output rows [t0, t0 + R), NC vectors of channels from xp's column d0:
// y[t] = alpha * sum_{s < m.end(t)} p[t][s] x[s], pairs of keys at a time.
template <int R, int NC>
void rows_block(int64_t t0, AttentionMask m, float alpha, const float* p, int64_t ldp, const uint32_t* xp, int64_t ldx2,
                int64_t tail, float* y, int64_t ldy) {
  int64_t ends[R];
  for (int r = 0; r < R; ++r) ends[r] = m.end(t0 + r);
  const int64_t first = *std::min_element(ends, ends + R), last = *std::max_element(ends, ends + R);
  const int64_t ldq = round_up((last + 1) / 2, 16);
  uint32_t* pp = scratch(1, R * ldq);  // pp[r * ldq + i] = (p[t][2i], p[t][2i + 1]), zero from end(t)
  for (int r = 0; r < R; ++r) store_row_pairs(p + (t0 + r) * ldp, ends[r], pp + r * ldq);
  V acc[R][NC];
  clear(acc);
  Vi lines[NC];
  auto load = [&](int64_t i) {
    for (int c = 0; c < NC; ++c) lines[c] = _mm512_load_si512(xp + i * ldx2 + c * W);
  };
  // The pairs of keys every row sees both of.
  for (int64_t i = 0; i < first / 2; ++i) {
    load(i);
    add_pair(acc, lines, [&](int r) { return pp[r * ldq + i]; });
  }
  for (int64_t i = first / 2; i < (last + 1) / 2; ++i) {
    load(i);
    add_pair_partial(
        acc, lines, [&](int r) { return pp[r * ldq + i]; },
        [&](int r) { return 2 * i + 1 < ends[r] ? 3
                            : 2 * i < ends[r]   ? 1
                                                : 0; });
  }
  store_block(acc, alpha, tail, y + t0 * ldy, ldy);
}

// Output rows [s0 + r0, s0 + r0 + R) of a strip that starts at key s0, NC vectors of channels:
// y[s] = alpha * sum_{t : s < m.end(t)} p[t][s] x[t], pairs of queries at a time. pt[i * 16 + u]
// = (p[2i][s0 + u], p[2i + 1][s0 + u]), zero where query 2i or 2i + 1 (or none, past T) does
// not see key s0 + u.
template <int R, int NC>
void cols_block(int64_t T, int64_t s0, int r0, AttentionMask m, float alpha, const uint32_t* pt, const uint32_t* xq,
                int64_t ldx2, int64_t tail, float* y, int64_t ldy) {
  V acc[R][NC];
  clear(acc);
  Vi lines[NC];
  auto load = [&](int64_t i) {
    for (int c = 0; c < NC; ++c) lines[c] = _mm512_load_si512(xq + i * ldx2 + c * W);
  };
  const int64_t pairs = (T + 1) / 2;
  const int64_t s_first = s0 + r0;
  // Causal: query t sees key s when t >= s; every row of the block sees both queries of pair i
  // once 2i >= s_first + R - 1. Bidirectional: every query sees every live key.
  const int64_t from = m.causal ? s_first / 2 : 0;
  const int64_t full = m.causal ? (s_first + R) / 2 : 0;
  auto sees = [&](int64_t t, int r) { return t < T && s_first + r < m.end(t); };
  for (int64_t i = from; i < std::min(full, pairs); ++i) {
    load(i);
    add_pair_partial(
        acc, lines, [&](int r) { return pt[i * W + r0 + r]; },
        [&](int r) { return (sees(2 * i, r) ? 1 : 0) | (sees(2 * i + 1, r) ? 2 : 0); });
  }
  for (int64_t i = std::max(full, from); i < pairs; ++i) {
    load(i);
    add_pair(acc, lines, [&](int r) { return pt[i * W + r0 + r]; });
  }
  store_block(acc, alpha, tail, y + s_first * ldy, ldy);
}

// Runs block(rows, vectors, first row, first channel, tail) over n rows and all D channels in
// chunks of up to kProductVectors vectors, the last vector of the last chunk `tail` lanes wide.
template <typename Block>
void over_blocks(int64_t n, int64_t D, Block&& block) {
  const int64_t vectors = (D + W - 1) / W;
  for (int64_t v0 = 0; v0 < vectors; v0 += kProductVectors) {
    const int nv = static_cast<int>(std::min<int64_t>(kProductVectors, vectors - v0));
    const int64_t tail = std::min<int64_t>(W, D - (v0 + nv - 1) * W);
    with_vectors<kProductVectors>(nv, [&](auto nc) {
      constexpr int R = product_rows(decltype(nc)::value);
      int64_t t0 = 0;
      for (; t0 + R <= n; t0 += R) block(std::integral_constant<int, R>{}, nc, t0, v0 * W, tail);
      for (; t0 < n; ++t0) block(std::integral_constant<int, 1>{}, nc, t0, v0 * W, tail);
    });
  }
}

}  // namespace

namespace avx512_bf16 {

void attention_scores(int64_t T, int64_t D, AttentionMask m, float alpha, const float* a, int64_t lda, const float* b,
                      int64_t ldb, float* s, int64_t lds) {
  const int64_t P = (D + 1) / 2, ldt = round_up(m.keys, W);
  uint32_t* bt = scratch(0, P * ldt);
  pack_key_pairs(m.keys, D, b, ldb, bt, ldt);
  uint32_t* at = scratch(1, T * P + W);  // at[t * P + j] = (a[t][2j], a[t][2j + 1]); W words of slack
  for (int64_t t = 0; t < T; ++t) {
    // store_row_pairs writes whole 16-pair groups: rows are written in order, so a group that runs
    // past row t is overwritten by row t + 1 (or lands in the slack).
    store_row_pairs(a + t * lda, D, at + t * P);
  }
  int64_t t0 = 0;
  for (; t0 + kScoreRows <= T; t0 += kScoreRows) score_rows<kScoreRows>(t0, P, m, alpha, at, bt, ldt, s, lds);
  for (; t0 < T; ++t0) score_rows<1>(t0, P, m, alpha, at, bt, ldt, s, lds);
}

void attention_rows(int64_t T, int64_t D, AttentionMask m, float alpha, const float* p, int64_t ldp, const float* x,
                    int64_t ldx, float* y, int64_t ldy) {
  const int64_t ldx2 = round_up(D, W);
  uint32_t* xp = scratch(0, (m.keys + 1) / 2 * ldx2);
  pack_row_pairs(m.keys, D, x, ldx, xp, ldx2);
  over_blocks(T, D, [&](auto r, auto nc, int64_t t0, int64_t d0, int64_t tail) {
    rows_block<decltype(r)::value, decltype(nc)::value>(t0, m, alpha, p, ldp, xp + d0, ldx2, tail, y + d0, ldy);
  });
}

void attention_cols(int64_t T, int64_t D, AttentionMask m, float alpha, const float* p, int64_t ldp, const float* x,
                    int64_t ldx, float* y, int64_t ldy) {
  const int64_t ldx2 = round_up(D, W), pairs = (T + 1) / 2;
  uint32_t* xq = scratch(0, pairs * ldx2);
  pack_row_pairs(T, D, x, ldx, xq, ldx2);
  uint32_t* pt = scratch(1, pairs * W);
  for (int64_t s0 = 0; s0 < m.keys; s0 += W) {
    const int64_t rows = std::min<int64_t>(W, m.keys - s0);
    // The strip's P pairs, from the first pair of queries any of its keys has.
    for (int64_t i = m.causal ? s0 / 2 : 0; i < pairs; ++i) {
      const int64_t t = 2 * i;
      const V lo = _mm512_maskz_loadu_ps(first_lanes(std::min(rows, m.end(t) - s0)), p + t * ldp + s0);
      const V hi = t + 1 < T
                       ? _mm512_maskz_loadu_ps(first_lanes(std::min(rows, m.end(t + 1) - s0)), p + (t + 1) * ldp + s0)
                       : _mm512_setzero_ps();
      _mm512_store_si512(pt + i * W, pair_lanes(lo, hi));
    }
    over_blocks(rows, D, [&](auto r, auto nc, int64_t r0, int64_t d0, int64_t tail) {
      cols_block<decltype(r)::value, decltype(nc)::value>(T, s0, static_cast<int>(r0), m, alpha, pt, xq + d0, ldx2,
                                                          tail, y + d0, ldy);
    });
  }
  for (int64_t s = m.keys; s < T; ++s) std::fill(y + s * ldy, y + s * ldy + D, 0.0f);
}

}  // namespace avx512_bf16
}  // namespace sparsetrain
