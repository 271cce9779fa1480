// N:M forward, backward-data and backward-weights.
// Part of the ISA-generic kernel bodies: included by kernels/spmm_simd.h inside the ISA's
// namespace, after `struct Simd` is defined. Nothing here is ISA-specific.
//
// Each row reads N of every M packed input features, a different N per row, so an input vector
// cannot be shared between rows from a register. It is shared through L1 instead: the forward
// pass holds several rows' outputs in registers and walks the groups once for all of them, so
// each group's M feature lines come from L2 once and feed every row of the block; the weight
// pass walks W entries of a block of rows while those entries' X lines stay in L1.
// Backward-data turns the selection around: a group's M dX features are the accumulators and
// every row of W feeds N of them, so with the rows bucketed by kept pattern each bucket runs
// fixed register code and each loaded dY vector feeds N FMAs.
#pragma once

#include <bit>
#include <utility>

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

// AVX-512 has 32 vector registers, AVX2 16; three quarters hold accumulators.
constexpr int kVecRegs = W >= 16 ? 32 : 16;
constexpr int kNmVecs = NV < 4 ? NV : 4;                  // token vectors per pass
constexpr int kNmRows = kVecRegs * 3 / 4 / kNmVecs;       // rows held in registers: 6 (AVX-512), 3 (AVX2)
constexpr int kNmStage = 48;                              // rows staged per transposed store
static_assert(kNmStage % kNmRows == 0 && kNmStage % W == 0);

// out[i][0..64) = row r0 + i of one tile, for R rows. kN > 0 fixes N at compile time.
template <int R, int kN, typename E>
inline void nm_fwd_rows(const NmViewT<E>& w, const E* xp, int64_t r0, float* out) {
  const int n = kN > 0 ? kN : w.n;
  const int64_t groups = w.groups();
  const int64_t per_row = groups * n;
  const int64_t group_stride = static_cast<int64_t>(w.m) * kTokenTile;
  for (int h = 0; h < NV; h += kNmVecs) {
    V acc[R][kNmVecs];
    const uint8_t* off[R];
    const E* val[R];
    for (int i = 0; i < R; ++i) {
      for (int v = 0; v < kNmVecs; ++v) acc[i][v] = Simd::zero();
      off[i] = w.offset + (r0 + i) * per_row;
      val[i] = w.values + (r0 + i) * per_row;
    }
    const E* xg = xp;
    for (int64_t g = 0; g < groups; ++g, xg += group_stride) {
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        int s = 0;
        if constexpr (std::is_same_v<E, Bf16>)  // a group's weights are adjacent: pairs (bcast_pair)
          for (; s + 1 < n; s += 2) {
            const BcastPair wp = bcast_pair(val[i] + s);
            const E* x0 = xg + off[i][s] * kTokenTile;
            const E* x1 = xg + off[i][s + 1] * kTokenTile;
#pragma GCC unroll 4
            for (int v = 0; v < kNmVecs; ++v) acc[i][v] = Simd::fma(wp.first, load_tokens(x0, h + v), acc[i][v]);
#pragma GCC unroll 4
            for (int v = 0; v < kNmVecs; ++v) acc[i][v] = Simd::fma(wp.second, load_tokens(x1, h + v), acc[i][v]);
          }
        for (; s < n; ++s) {
          const E* x = xg + off[i][s] * kTokenTile;
          const V wv = Simd::bcast(to_float(val[i][s]));
#pragma GCC unroll 4
          for (int v = 0; v < kNmVecs; ++v) acc[i][v] = Simd::fma(wv, load_tokens(x, h + v), acc[i][v]);
        }
        off[i] += n;
        val[i] += n;
      }
    }
    for (int i = 0; i < R; ++i)
      for (int v = 0; v < kNmVecs; ++v) Simd::store(out + i * kTokenTile + h * W + v * W, acc[i][v]);
  }
}

// The forward's products as a policy (see FmaProducts): FmaNmRows runs nm_fwd_rows.
struct FmaNmRows {
  template <int R, int kN, typename E>
  static void rows(const NmViewT<E>& w, const E* xp, int64_t r0, float* out) {
    nm_fwd_rows<R, kN>(w, xp, r0, out);
  }
};

template <int kN, typename Rows, typename E>
inline void nm_fwd_block(const NmViewT<E>& w, const E* xp, int64_t r0, int rows, float* out) {
  int i = 0;
  for (; i + kNmRows <= rows; i += kNmRows) Rows::template rows<kNmRows, kN>(w, xp, r0 + i, out + i * kTokenTile);
  const int rest = rows - i;
  [&]<int... R>(std::integer_sequence<int, R...>) {
    ((rest == R + 1 ? Rows::template rows<R + 1, kN>(w, xp, r0 + i, out + i * kTokenTile) : void()), ...);
  }(std::make_integer_sequence<int, kNmRows - 1>{});
}

// kN = 2 for N = 2 only, 0 for any N.
template <int kN, typename Rows = FmaNmRows, typename E>
inline void nm_fwd(const NmViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y, Range tiles,
                   Range rows) {
  alignas(64) float stage[kNmStage * kTokenTile];
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    const E* xp = x.tile(tile);
    const int valid = tile_tokens(x, tile);
    for (int64_t r0 = rows.begin; r0 < rows.end; r0 += kNmStage) {
      const int n = static_cast<int>(std::min<int64_t>(kNmStage, rows.end - r0));
      nm_fwd_block<kN, Rows>(w, xp, r0, n, stage);
      store_transposed(stage, n, r0, valid, bias, y, tile * kTokenTile);
    }
  }
}

// Weight pass geometry: a chunk of tiles, 1 KB of each token line (4 tiles in float32, 8 in
// bf16), is reduced over before one lane reduction per W entries. The rows visit the chunk's X
// in slices of groups that stay in L2, and within a slice a block of rows takes W entries at a
// time, so those entries' X lines (32 KB for 2:4 on AVX-512) are loaded into L1 once for the
// whole block. A chunk of 4 bf16 tiles is 128 products per W entries against some 45
// instructions of lane reduction and gradient update; 8 tiles halve that share and made the 2:4
// backward 2-10% faster in alternated runs (docs/benchmarks.md).
constexpr int64_t kNmChunkLineBytes = 1024;
template <typename E>
constexpr int64_t kNmChunkTiles = kNmChunkLineBytes / (kTokenTile * static_cast<int64_t>(sizeof(E)));
constexpr int kNmGradRows = 32;
constexpr int64_t kNmSliceBytes = 512 * 1024;

template <typename Products = FmaProducts, typename E>
inline void nm_sddmm(const NmViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues,
                     bool accumulate, Range rows) {
  const int n = w.n, m = w.m;
  const int64_t per_row = w.groups() * n;
  // Entries per slice: whole batches of W covering about kNmSliceBytes of X per chunk.
  const int64_t slice_groups = std::max<int64_t>(1, kNmSliceBytes / (kNmChunkLineBytes * m));
  const int64_t slice_entries = std::max<int64_t>(W, slice_groups * n / W * W);
  for (int64_t t0 = 0; t0 < x.tiles; t0 += kNmChunkTiles<E>) {
    const int64_t t1 = std::min(x.tiles, t0 + kNmChunkTiles<E>);
    const bool overwrite = !accumulate && t0 == 0;
    for (int64_t e0 = 0; e0 < per_row; e0 += slice_entries) {
      const int64_t e1 = std::min(per_row, e0 + slice_entries);
      for (int64_t rb = rows.begin; rb < rows.end; rb += kNmGradRows) {
        const int64_t re = std::min(rows.end, rb + kNmGradRows);
        for (int64_t k0 = e0; k0 < e1; k0 += W) {
          const int cnt = static_cast<int>(std::min<int64_t>(W, e1 - k0));
          int64_t g = k0 / n;
          int s = static_cast<int>(k0 - g * n);
          for (int64_t r = rb; r < re; ++r) {
            const uint8_t* off = w.offset + r * per_row + k0;
            int32_t cols[W];
            int64_t gj = g;
            int sj = s;
            for (int j = 0; j < W; ++j) {
              cols[j] = static_cast<int32_t>(gj * m + off[std::min(j, cnt - 1)]);
              if (j < cnt - 1 && ++sj == n) {
                sj = 0;
                ++gj;
              }
            }
            add_lanes(dvalues + r * per_row + k0, Products::row_group_dots(dy, x, r, cols, t0, t1), cnt, overwrite);
          }
        }
      }
    }
  }
}

// Backward-data geometry: kNmBwdVecs token vectors per pass. A bucket's rows all feed the same
// N dX features, so they accumulate into two register sets (even and odd entries, for twice the
// independent FMA chains) that are added to the group's staged features when the bucket ends.
constexpr int kNmBwdVecs = W >= 16 ? 4 : 2;
constexpr int kNmBwdFeatures = 64;  // dX features staged per transposed store

// out[f] += value * dY[row] over the entries of one bucket, whose kept offsets are the set bits
// of kMask, for kNmBwdVecs token vectors from vector h. Out of line: inlined into nm_bwd_data<true>, GCC 12
// moved the per-entry step of the two-offset buckets into a call of its own, and 2:4
// backward-data took twice as long.
template <int kMask, typename E>
[[gnu::noinline]] void nm_bwd_bucket(const E* dyp, int h, const int32_t* row, const E* val, int64_t count, float* out) {
  constexpr int n = std::popcount(static_cast<unsigned>(kMask));
  V acc[2][n][kNmBwdVecs];
  for (int k = 0; k < 2; ++k)
    for (int s = 0; s < n; ++s)
      for (int v = 0; v < kNmBwdVecs; ++v) acc[k][s][v] = Simd::zero();
  auto entry = [&](int k, int64_t e) {
    const E* d = dyp + static_cast<int64_t>(row[e]) * kTokenTile;
    V dv[kNmBwdVecs];
    for (int v = 0; v < kNmBwdVecs; ++v) dv[v] = load_tokens(d, h + v);
    int s = 0;
    if constexpr (std::is_same_v<E, Bf16>)  // an entry's weights are adjacent: pairs (bcast_pair)
      for (; s + 1 < n; s += 2) {
        const BcastPair wp = bcast_pair(val + e * n + s);
        for (int v = 0; v < kNmBwdVecs; ++v) acc[k][s][v] = Simd::fma(wp.first, dv[v], acc[k][s][v]);
        for (int v = 0; v < kNmBwdVecs; ++v) acc[k][s + 1][v] = Simd::fma(wp.second, dv[v], acc[k][s + 1][v]);
      }
    for (; s < n; ++s) {
      const V wv = Simd::bcast(to_float(val[e * n + s]));
      for (int v = 0; v < kNmBwdVecs; ++v) acc[k][s][v] = Simd::fma(wv, dv[v], acc[k][s][v]);
    }
  };
  int64_t e = 0;
  for (; e + 1 < count; e += 2) {
    entry(0, e);
    entry(1, e + 1);
  }
  if (e < count) entry(0, e);
  int s = 0;
  for (int f = 0; f < 4; ++f) {
    if (!((kMask >> f) & 1)) continue;
    for (int v = 0; v < kNmBwdVecs; ++v) {
      float* o = out + f * kTokenTile + v * W;
      Simd::store(o, Simd::add(Simd::load(o), Simd::add(acc[0][s][v], acc[1][s][v])));
    }
    ++s;
  }
}

// Backward-data's products as a policy (see FmaProducts): FmaNmBuckets runs nm_bwd_bucket.
struct FmaNmBuckets {
  template <int kMask, typename E>
  static void bucket(const E* dyp, int h, const int32_t* row, const E* val, int64_t count, float* out) {
    nm_bwd_bucket<kMask>(dyp, h, row, val, count, out);
  }
};

// dX features of group g for one tile, M <= 4: out[f][0..64) for f < M, added to when accumulate.
template <typename Buckets, typename E>
inline void nm_bwd_group_small(const NmTransposedViewT<E>& wt, const int32_t* ptr, const E* dyp, float* out,
                               bool accumulate) {
  if (!accumulate) std::fill_n(out, static_cast<int64_t>(wt.m) * kTokenTile, 0.0f);
  for (int p = 0; p < wt.buckets; ++p) {
    const int32_t e0 = ptr[p], e1 = ptr[p + 1];
    if (e0 == e1) continue;
    for (int h = 0; h < NV; h += kNmBwdVecs)
      [&]<int... kLess>(std::integer_sequence<int, kLess...>) {  // masks 1..15: N >= 1
        ((p == kLess + 1 ? Buckets::template bucket<kLess + 1>(
                               dyp, h, wt.row + e0, wt.values + static_cast<int64_t>(e0) * wt.n, e1 - e0, out + h * W)
                         : void()),
         ...);
      }(std::make_integer_sequence<int, 15>{});
  }
}

// The same for any M: the group's features accumulate in out, through L1.
template <typename E>
inline void nm_bwd_group_any(const NmTransposedViewT<E>& wt, const int32_t* ptr, const E* dyp, float* out,
                             bool accumulate) {
  if (!accumulate) std::fill_n(out, static_cast<int64_t>(wt.m) * kTokenTile, 0.0f);
  for (int32_t e = ptr[0]; e < ptr[wt.buckets]; ++e) {
    const E* d = dyp + static_cast<int64_t>(wt.row[e]) * kTokenTile;
    for (int s = 0; s < wt.n; ++s) {
      const V wv = Simd::bcast(to_float(wt.values[static_cast<int64_t>(e) * wt.n + s]));
      float* o = out + wt.offset[static_cast<int64_t>(e) * wt.n + s] * kTokenTile;
      for (int v = 0; v < NV; ++v) Simd::store(o + v * W, Simd::fma(wv, load_tokens(d, v), Simd::load(o + v * W)));
    }
  }
}

// kBuckets: M <= 4 only, each bucket in its fixed register code; otherwise any M, through L1.
template <bool kBuckets, typename Buckets = FmaNmBuckets, typename E>
inline void nm_bwd_data(const NmTransposedViewT<E>& wt, const PackedTokensT<E>& dy, MatrixView dx, Range tiles,
                        Range groups) {
  const int m = wt.m;
  const int64_t ngroups = wt.groups();
  const int64_t chunk = std::max(1, kNmBwdFeatures / m);  // groups per staged store
  alignas(64) float stage[kNmBwdFeatures * kTokenTile];
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    const E* dyp = dy.tile(tile);
    const int valid = tile_tokens(dy, tile);
    for (int64_t g0 = groups.begin; g0 < groups.end; g0 += chunk) {
      const int64_t g1 = std::min(groups.end, g0 + chunk);
      // Slice by slice over the chunk's groups, so one slice of dY serves them all from L2.
      for (int64_t s = 0; s < wt.slices; ++s)
        for (int64_t g = g0; g < g1; ++g) {
          const int32_t* ptr = wt.ptr + (s * ngroups + g) * wt.buckets;
          float* out = stage + (g - g0) * m * kTokenTile;
          if constexpr (kBuckets)
            nm_bwd_group_small<Buckets>(wt, ptr, dyp, out, s > 0);
          else
            nm_bwd_group_any(wt, ptr, dyp, out, s > 0);
        }
      store_transposed(stage, static_cast<int>((g1 - g0) * m), g0 * m, valid, nullptr, dx, tile * kTokenTile);
    }
  }
}

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
