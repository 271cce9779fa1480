// Attention products (kernels/attention_kernels.h), ISA-generic bodies.
// Included by an ISA's attention translation unit after kernels/simd/isa_<isa>.h has defined
// SPARSETRAIN_SIMD_NS, SPARSETRAIN_ISA_NS and `struct Simd`; ends with the entry points.
// Nothing here is ISA-specific.
#pragma once

#include <algorithm>
#include <type_traits>

#include "sparsetrain/kernels/attention_kernels.h"
#include "sparsetrain/kernels/simd/with_vectors.h"
#include "sparsetrain/kernels/spmm.h"

// After the declarations they use (PackedTokens, Range, ref::).
#include "sparsetrain/kernels/simd/common.h"
#include "sparsetrain/kernels/simd/pack.h"

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

constexpr int kVectorRegisters = W == 16 ? 32 : 16;

// Scores: kScoreRows query rows x up to kScoreVectors vectors of keys in registers, one
// broadcast of A per row and one load of B^T per vector for each channel.
constexpr int kScoreRows = 6;
constexpr int kScoreVectors = W == 16 ? 4 : 2;  // 6 x 4 + 4 + 1 of 32 registers; 6 x 2 + 2 + 1 of 16
static_assert(kTokenTile % (kScoreVectors * W) == 0, "a chunk of keys lies inside one packed tile");

// rows / cols: a block of output rows x up to kProductVectors vectors of channels in registers;
// the block is as tall as the registers left after the loaded X row and one broadcast allow.
// Each X row (of v, k, q or dout: rows 3C or C floats apart) comes from L2 and feeds every row
// of the block. AVX-512 holds 6 rows x 4 vectors. AVX2's 16 registers hold 2 rows x 4 vectors
// or 6 rows x 2: the second needs a third of the bytes per FMA (a 64-byte line per 12 FMAs
// instead of 128 bytes per 8) and took the GPT-shaped backward 34.1 -> 29.6 ms on a Zen 3 core
// (3 vectors x 4 rows 31.7, 1 x 8 worse). Each output sums in the same order either way.
constexpr int kProductVectors = W == 16 ? 4 : 2;
constexpr int product_rows(int vectors) { return std::min(8, (kVectorRegisters - 1 - vectors) / vectors); }

using simd::clear;
using simd::with_vectors;

// y[i][c * W + l] = alpha * acc[i][c] lane l, rows ldy floats apart.
template <int R, int NC>
inline void store_scaled(const V (&acc)[R][NC], float alpha, float* y, int64_t ldy) {
  const V al = Simd::bcast(alpha);
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < NC; ++c) Simd::storeu(y + i * ldy + c * W, Simd::mul(acc[i][c], al));
}

// B [T x D] -> bp: B^T in token tiles, zero-padded (PackedTokens).
inline void pack_keys(int64_t T, int64_t D, const float* b, int64_t ldb, PackedTokens& bp) {
  bp.shape_for(T, D);
  const TokenRows rows = rows_of(ConstMatrixView{b, T, D, ldb});
  for (int64_t tile = 0; tile < bp.tiles; ++tile) pack_tile(pack_rows, rows, bp, tile, nullptr, nullptr);
}

// s[i][c * W + l] = alpha * sum_d a[i][d] bt[d][c * W + l] for i < R, c < NC, where bt points
// into a packed tile (rows kTokenTile floats apart).
template <int R, int NC>
inline void score_chunk(int64_t D, float alpha, const float* a, int64_t lda, const float* bt, float* s, int64_t lds) {
  V acc[R][NC];
  clear(acc);
  for (int64_t d = 0; d < D; ++d) {
    V bv[NC];
    for (int c = 0; c < NC; ++c) bv[c] = Simd::load(bt + d * kTokenTile + c * W);
    for (int i = 0; i < R; ++i) {
      const V av = Simd::bcast(a[i * lda + d]);
      for (int c = 0; c < NC; ++c) acc[i][c] = Simd::fma(av, bv[c], acc[i][c]);
    }
  }
  store_scaled(acc, alpha, s, lds);
}

// Rows [t0, t0 + R) of S, over the keys the last row sees, whole vectors.
template <int R>
inline void score_rows(int64_t t0, int64_t D, AttentionMask m, float alpha, const float* a, int64_t lda,
                       const PackedTokens& bp, float* s, int64_t lds) {
  const int64_t end = m.end(t0 + R - 1);
  for (int64_t s0 = 0; s0 < end; s0 += kScoreVectors * W) {
    const int nv = static_cast<int>(std::min<int64_t>(kScoreVectors, (end - s0 + W - 1) / W));
    const float* bt = bp.tile(s0 / kTokenTile) + s0 % kTokenTile;
    with_vectors<kScoreVectors>(nv, [&](auto nc) {
      score_chunk<R, decltype(nc)::value>(D, alpha, a + t0 * lda, lda, bt, s + t0 * lds + s0, lds);
    });
  }
}

inline void attention_scores(int64_t T, int64_t D, AttentionMask m, float alpha, const float* a, int64_t lda,
                             const float* b, int64_t ldb, float* s, int64_t lds) {
  // Per thread: a fresh buffer per call would be mapped and page-faulted anew.
  thread_local PackedTokens bp;
  pack_keys(m.keys, D, b, ldb, bp);
  int64_t t0 = 0;
  for (; t0 + kScoreRows <= T; t0 += kScoreRows) score_rows<kScoreRows>(t0, D, m, alpha, a, lda, bp, s, lds);
  for (; t0 < T; ++t0) score_rows<1>(t0, D, m, alpha, a, lda, bp, s, lds);
}

// acc[i] += coef(i) * x[0 .. NC * W) for the block rows i in [first, last).
template <int R, int NC, typename Coef>
inline void add_scaled_row(V (&acc)[R][NC], const float* x, int first, int last, Coef coef) {
  V xv[NC];
  for (int c = 0; c < NC; ++c) xv[c] = Simd::loadu(x + c * W);
  for (int i = first; i < last; ++i) {
    const V pv = Simd::bcast(coef(i));
    for (int c = 0; c < NC; ++c) acc[i][c] = Simd::fma(pv, xv[c], acc[i][c]);
  }
}

// Output rows [t0, t0 + R), NC vectors of channels (x and y point at the first):
// y[t] = alpha * sum_{s < m.end(t)} p[t][s] x[s].
template <int R, int NC>
inline void rows_block(int64_t t0, AttentionMask m, float alpha, const float* p, int64_t ldp, const float* x,
                       int64_t ldx, float* y, int64_t ldy) {
  V acc[R][NC];
  clear(acc);
  const float* pr = p + t0 * ldp;
  // The keys every row of the block sees: all L, or, causal, those before the block.
  const int64_t shared = m.causal ? std::min(t0, m.keys) : m.keys;
  for (int64_t s = 0; s < shared; ++s) add_scaled_row(acc, x + s * ldx, 0, R, [&](int i) { return pr[i * ldp + s]; });
  // Causal, the diagonal block: row i takes keys t0 .. t0 + i, those below L.
  if (m.causal)
    for (int j = 0; j < R && t0 + j < m.keys; ++j)
      add_scaled_row(acc, x + (t0 + j) * ldx, j, R, [&](int i) { return pr[i * ldp + t0 + j]; });
  store_scaled(acc, alpha, y + t0 * ldy, ldy);
}

// Output rows [s0, s0 + R), all below L, NC vectors of channels:
// y[s] = alpha * sum_{t : s < m.end(t)} p[t][s] x[t].
template <int R, int NC>
inline void cols_block(int64_t T, int64_t s0, AttentionMask m, float alpha, const float* p, int64_t ldp, const float* x,
                       int64_t ldx, float* y, int64_t ldy) {
  V acc[R][NC];
  clear(acc);
  // Causal, the diagonal block: query s0 + j reaches keys s0 .. s0 + j.
  if (m.causal)
    for (int j = 0; j < R; ++j)
      add_scaled_row(acc, x + (s0 + j) * ldx, 0, j + 1, [&](int i) { return p[(s0 + j) * ldp + s0 + i]; });
  // The queries that see every key of the block.
  for (int64_t t = m.causal ? s0 + R : 0; t < T; ++t)
    add_scaled_row(acc, x + t * ldx, 0, R, [&](int i) { return p[t * ldp + s0 + i]; });
  store_scaled(acc, alpha, y + s0 * ldy, ldy);
}

// Runs block(rows, vectors, first row, channel offset) over n rows and the whole vectors of D
// channels, then returns the number of channels it covered. Row blocks are outer: all chunks of
// channels of one block run before the next block, so the P entries the block reads stay in L1
// between chunks. With the chunks outer, P was read from L2 once per chunk (four chunks on AVX2
// at D = 64), and the GPT-shaped forward and backward took 1.08x and 1.15x as long on a Zen 3
// core. Every block is as tall as a whole chunk allows. (A version that picked a taller block
// when D is a single narrower chunk compiled, under GCC 12, to FMAs that each reloaded their X
// operand, and ran 1.3x slower at D = 64.)
template <typename Block>
inline int64_t over_blocks(int64_t n, int64_t D, Block&& block) {
  const int64_t full = D / W;
  constexpr int R = product_rows(kProductVectors);
  auto chunks = [&](auto rows, int64_t t0) {
    for (int64_t v0 = 0; v0 < full; v0 += kProductVectors) {
      const int nv = static_cast<int>(std::min<int64_t>(kProductVectors, full - v0));
      with_vectors<kProductVectors>(nv, [&](auto nc) { block(rows, nc, t0, v0 * W); });
    }
  };
  int64_t t0 = 0;
  for (; t0 + R <= n; t0 += R) chunks(std::integral_constant<int, R>{}, t0);
  for (; t0 < n; ++t0) chunks(std::integral_constant<int, 1>{}, t0);
  return full * W;
}

inline void attention_rows(int64_t T, int64_t D, AttentionMask m, float alpha, const float* p, int64_t ldp,
                           const float* x, int64_t ldx, float* y, int64_t ldy) {
  const int64_t done = over_blocks(T, D, [&](auto r, auto nc, int64_t t0, int64_t d0) {
    rows_block<decltype(r)::value, decltype(nc)::value>(t0, m, alpha, p, ldp, x + d0, ldx, y + d0, ldy);
  });
  if (done < D) ref::attention_rows(T, D - done, m, alpha, p, ldp, x + done, ldx, y + done, ldy);
}

// Blocks over the L live keys; the padded ones' rows of y are zero.
inline void attention_cols(int64_t T, int64_t D, AttentionMask m, float alpha, const float* p, int64_t ldp,
                           const float* x, int64_t ldx, float* y, int64_t ldy) {
  const int64_t done = over_blocks(m.keys, D, [&](auto r, auto nc, int64_t s0, int64_t d0) {
    cols_block<decltype(r)::value, decltype(nc)::value>(T, s0, m, alpha, p, ldp, x + d0, ldx, y + d0, ldy);
  });
  for (int64_t s = m.keys; s < T; ++s) std::fill(y + s * ldy, y + s * ldy + done, 0.0f);
  if (done < D) ref::attention_cols(T, D - done, m, alpha, p, ldp, x + done, ldx, y + done, ldy);
}

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS

// The entry points of attention_kernels.h for this ISA.
namespace sparsetrain::SPARSETRAIN_ISA_NS {
void attention_scores(int64_t T, int64_t D, AttentionMask m, float alpha, const float* a, int64_t lda, const float* b,
                      int64_t ldb, float* s, int64_t lds) {
  SPARSETRAIN_SIMD_NS::attention_scores(T, D, m, alpha, a, lda, b, ldb, s, lds);
}
void attention_rows(int64_t T, int64_t D, AttentionMask m, float alpha, const float* p, int64_t ldp, const float* x,
                    int64_t ldx, float* y, int64_t ldy) {
  SPARSETRAIN_SIMD_NS::attention_rows(T, D, m, alpha, p, ldp, x, ldx, y, ldy);
}
void attention_cols(int64_t T, int64_t D, AttentionMask m, float alpha, const float* p, int64_t ldp, const float* x,
                    int64_t ldx, float* y, int64_t ldy) {
  SPARSETRAIN_SIMD_NS::attention_cols(T, D, m, alpha, p, ldp, x, ldx, y, ldy);
}
}  // namespace sparsetrain::SPARSETRAIN_ISA_NS
