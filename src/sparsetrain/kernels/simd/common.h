// Shared pieces: tile geometry, transposed output staging, the output-stationary row dot,
// and the grouped dot products with a lane reduction used by every SDDMM.
// Part of the ISA-generic kernel bodies: included by kernels/spmm_simd.h inside the ISA's
// namespace, after `struct Simd` is defined. Nothing here is ISA-specific.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "sparsetrain/kernels/spmm.h"

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

using V = Simd::V;
constexpr int W = Simd::W;
constexpr int NV = kTokenTile / W;  // vectors per token tile
constexpr int kStageRows = 16;      // rows staged before the transposed store
constexpr int64_t kL2Budget = 1024 * 1024;

// Whether y's lines are streamed (kernels/spmm.h); the entry points fence after the kernel.
inline bool streams(MatrixView y) { return y.rows * y.ld * static_cast<int64_t>(sizeof(float)) >= kStreamOutputBytes; }

// One output vector: streamed when asked and dst is vector-aligned.
inline void store_line(float* dst, V v, bool stream) {
  if (stream && reinterpret_cast<uintptr_t>(dst) % sizeof(V) == 0)
    Simd::stream(dst, v);
  else
    Simd::storeu(dst, v);
}

// Vector v (tokens v * W .. v * W + W - 1) of a packed tile line, as float32. A bf16 line is
// widened in register (its token order, packed_tokens.h, is undone by the unpack that widens it).
inline V load_tokens(const float* line, int v) { return Simd::load(line + v * W); }
inline V load_tokens(const Bf16* line, int v) { return Simd::load_bf16(line, v); }

template <typename P>
inline int tile_tokens(const P& p, int64_t tile) {
  return static_cast<int>(std::min<int64_t>(kTokenTile, p.tokens - tile * kTokenTile));
}

// stage[i][t] (+ bias) -> y[t0 + t][r0 + i] for i < nrows, t < valid. Full groups of W rows go
// through W x W register transposes and leave as one vector store per token.
inline void store_transposed(const float* stage, int nrows, int64_t r0, int valid, const float* bias,
                             MatrixView y, int64_t t0) {
  const bool stream = streams(y);
  int i0 = 0;
  for (; i0 + W <= nrows; i0 += W) {
    const V b = bias != nullptr ? Simd::loadu(bias + r0 + i0) : Simd::zero();
    for (int tb = 0; tb < valid; tb += W) {
      V v[W];
      for (int i = 0; i < W; ++i) v[i] = Simd::load(stage + (i0 + i) * kTokenTile + tb);
      Simd::transpose(v);
      const int n = std::min(W, valid - tb);
      for (int j = 0; j < n; ++j) store_line(y.row(t0 + tb + j) + r0 + i0, Simd::add(v[j], b), stream);
    }
  }
  if (i0 == nrows) return;
  for (int t = 0; t < valid; ++t) {
    float* dst = y.row(t0 + t) + r0;
    for (int i = i0; i < nrows; ++i) dst[i] = stage[i * kTokenTile + t] + (bias != nullptr ? bias[r0 + i] : 0.0f);
  }
}

// Two adjacent values p[0] and p[1], each broadcast to every lane. A bf16 pair is one 32-bit
// broadcast load, then a shift (p[0]) and a mask (p[1]): widening one bf16 value before its
// broadcast takes four instructions, one of them a shuffle, where a float broadcasts from memory.
struct BcastPair {
  V first, second;
};
inline BcastPair bcast_pair(const float* p) { return {Simd::bcast(p[0]), Simd::bcast(p[1])}; }
inline BcastPair bcast_pair(const Bf16* p) {
  typedef uint32_t Words __attribute__((vector_size(sizeof(V))));
  float both;
  std::memcpy(&both, p, sizeof(both));
  const Words words = reinterpret_cast<Words>(Simd::bcast(both));
  return {reinterpret_cast<V>(words << 16), reinterpret_cast<V>(words & 0xffff0000u)};
}

// One CSR-like row: out[0..64) = sum_k val(k) * xp[col(k)] over `count` entries. Two independent
// accumulator sets when a tile is only 4 vectors keep 8 FMA chains in flight. Entries go in
// pairs, whose weights come from one broadcast (bcast_pair), when there are two sets or the
// weights are bf16; each accumulator still adds its products in entry order.
// With accumulate, the sum is added to what out holds.
template <typename E, typename ColOf>
inline void row_dot(const E* xp, const E* val, int64_t count, ColOf col_of, float* out, bool accumulate = false) {
  constexpr bool kTwoSets = NV < 8;
  constexpr bool kPairs = kTwoSets || std::is_same_v<E, Bf16>;
  V a[NV], c[NV];
  for (int v = 0; v < NV; ++v) {
    a[v] = accumulate ? Simd::load(out + v * W) : Simd::zero();
    c[v] = Simd::zero();
  }
  int64_t k = 0;
  if constexpr (kPairs) {
    for (; k + 1 < count; k += 2) {
      const BcastPair w = bcast_pair(val + k);
      const E* x0 = xp + static_cast<int64_t>(col_of(k)) * kTokenTile;
      const E* x1 = xp + static_cast<int64_t>(col_of(k + 1)) * kTokenTile;
      for (int v = 0; v < NV; ++v) {
        a[v] = Simd::fma(w.first, load_tokens(x0, v), a[v]);
        if constexpr (kTwoSets)
          c[v] = Simd::fma(w.second, load_tokens(x1, v), c[v]);
        else
          a[v] = Simd::fma(w.second, load_tokens(x1, v), a[v]);
      }
    }
  }
  for (; k < count; ++k) {
    V w0 = Simd::bcast(to_float(val[k]));
    const E* x0 = xp + static_cast<int64_t>(col_of(k)) * kTokenTile;
    for (int v = 0; v < NV; ++v) a[v] = Simd::fma(w0, load_tokens(x0, v), a[v]);
  }
  for (int v = 0; v < NV; ++v) Simd::store(out + v * W, kTwoSets ? Simd::add(a[v], c[v]) : a[v]);
}

// Tiles per chunk so the chunk's packed panel of `features` rows stays in L2.
template <typename E>
inline int64_t tiles_per_chunk(const PackedTokensT<E>& p) {
  int64_t panel = p.features_padded * kTokenTile * static_cast<int64_t>(sizeof(E));
  return std::max<int64_t>(1, kL2Budget / std::max<int64_t>(panel, 1));
}

// dst[0..n) (+)= lanes of v.
inline void add_lanes(float* dst, V v, int n, bool overwrite) {
  if (n == W) {
    Simd::storeu(dst, overwrite ? v : Simd::add(Simd::loadu(dst), v));
    return;
  }
  alignas(64) float lanes[W];
  Simd::store(lanes, v);
  for (int j = 0; j < n; ++j) dst[j] = overwrite ? lanes[j] : dst[j] + lanes[j];
}

// W entries of one row r: lane j = sum over tiles [t0, t1) of dy[r] . x[cols[j]].
template <typename E>
inline V row_group_dots(const PackedTokensT<E>& dy, const PackedTokensT<E>& x, int64_t r, const int32_t* cols,
                        int64_t t0, int64_t t1) {
  // dY's vectors wait in registers beside the W accumulators: a whole tile's fit AVX-512's 32
  // registers and AVX2's 16 in float32, but widening bf16 needs more than AVX2 has left, so there
  // dY comes half a tile at a time (each accumulator adds the same products in the same order).
  constexpr int kDyVecs = W == 8 && std::is_same_v<E, Bf16> ? NV / 2 : NV;
  V acc[W];
  for (int j = 0; j < W; ++j) acc[j] = Simd::zero();
  for (int64_t tile = t0; tile < t1; ++tile) {
    const E* d = dy.tile(tile) + r * kTokenTile;
    const E* xp = x.tile(tile);
#pragma GCC unroll 2
    for (int h = 0; h < NV; h += kDyVecs) {
      V dv[kDyVecs];
      for (int v = 0; v < kDyVecs; ++v) dv[v] = load_tokens(d, h + v);
      // Fully unrolled so the W accumulators stay in registers (GCC keeps them on the stack otherwise).
#pragma GCC unroll 16
      for (int j = 0; j < W; ++j) {
        const E* xc = xp + static_cast<int64_t>(cols[j]) * kTokenTile;
#pragma GCC unroll 8
        for (int v = 0; v < kDyVecs; ++v) acc[j] = Simd::fma(dv[v], load_tokens(xc, h + v), acc[j]);
      }
    }
  }
  return Simd::reduce_lanes(acc);
}

// The products the bodies below take as policies, so an ISA with other instructions for them
// (AVX512-BF16's pair dot products, spmm_avx512_bf16.cpp) reuses the rest: these are the float32
// FMA ones, which widen bf16 operands as they load them.
struct FmaProducts {
  template <typename E, typename ColOf>
  static void row_dot(const E* xp, const E* val, int64_t count, ColOf col_of, float* out, bool accumulate) {
    SPARSETRAIN_SIMD_NS::row_dot(xp, val, count, col_of, out, accumulate);
  }
  template <typename E>
  static V row_group_dots(const PackedTokensT<E>& dy, const PackedTokensT<E>& x, int64_t r, const int32_t* cols,
                          int64_t t0, int64_t t1) {
    return SPARSETRAIN_SIMD_NS::row_group_dots(dy, x, r, cols, t0, t1);
  }
};

// SDDMM over rows whose entries are a flat list: entry k of row r has column col_of(r, k) and
// value slot first(r) + k. Used by CSR and N:M.
template <typename Products = FmaProducts, typename E, typename Count, typename First, typename ColOf>
void rowlist_sddmm(const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues, bool accumulate, Range rows,
                   Count count, First first, ColOf col_of) {
  const int64_t chunk = tiles_per_chunk(x);
  for (int64_t t0 = 0; t0 < x.tiles; t0 += chunk) {
    const int64_t t1 = std::min(x.tiles, t0 + chunk);
    const bool overwrite = !accumulate && t0 == 0;
    for (int64_t r = rows.begin; r < rows.end; ++r) {
      const int64_t nnz = count(r);
      float* dst = dvalues + first(r);
      for (int64_t k0 = 0; k0 < nnz; k0 += W) {
        int n = static_cast<int>(std::min<int64_t>(W, nnz - k0));
        int32_t cols[W];
        for (int j = 0; j < W; ++j) cols[j] = col_of(r, k0 + std::min(j, n - 1));
        add_lanes(dst + k0, Products::row_group_dots(dy, x, r, cols, t0, t1), n, overwrite);
      }
    }
  }
}

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
