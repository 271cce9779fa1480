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

// out[i][H * W .. (H + kNmVecs) * W) = those tokens of row r0 + i of one tile, for R rows. kN > 0
// fixes N at compile time. H is a template argument so every loaded vector sits at a fixed
// displacement from its line; one offset and one value pointer serve all R rows, a fixed stride
// apart (a pointer per row ran GCC 12 out of general registers on AVX2).
template <int R, int kN, int H, typename E>
inline void nm_fwd_rows_part(const NmViewT<E>& w, const E* xp, int64_t r0, float* out) {
  const int n = kN > 0 ? kN : w.n;
  const int64_t per_row = w.groups() * n;
  const int64_t group_stride = static_cast<int64_t>(w.m) * kTokenTile;
  const uint8_t* ob = w.offset + r0 * per_row;
  const E* vb = w.values + r0 * per_row;
  V acc[R][kNmVecs];
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < kNmVecs; ++v) acc[i][v] = Simd::zero();
  const E* xg = xp;
  for (int64_t k = 0; k < per_row; k += n, xg += group_stride) {
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const uint8_t* off = ob + i * per_row + k;
      const E* val = vb + i * per_row + k;
      int s = 0;
      if constexpr (std::is_same_v<E, Bf16>)  // a group's weights are adjacent: pairs (bcast_pair)
        for (; s + 1 < n; s += 2) {
          const BcastPair wp = bcast_pair(val + s);
          const E* x0 = xg + std::size_t{off[s]} * kTokenTile;
          const E* x1 = xg + std::size_t{off[s + 1]} * kTokenTile;
#pragma GCC unroll 4
          for (int v = 0; v < kNmVecs; ++v) acc[i][v] = Simd::fma(wp.first, load_tokens(x0, H + v), acc[i][v]);
#pragma GCC unroll 4
          for (int v = 0; v < kNmVecs; ++v) acc[i][v] = Simd::fma(wp.second, load_tokens(x1, H + v), acc[i][v]);
        }
      for (; s < n; ++s) {
        const E* x = xg + std::size_t{off[s]} * kTokenTile;
        const V wv = Simd::bcast(to_float(val[s]));
#pragma GCC unroll 4
        for (int v = 0; v < kNmVecs; ++v) acc[i][v] = Simd::fma(wv, load_tokens(x, H + v), acc[i][v]);
      }
    }
  }
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < kNmVecs; ++v) Simd::store(out + i * kTokenTile + (H + v) * W, acc[i][v]);
}

// out[i][0..64) = row r0 + i of one tile, for R rows: the tile's vectors kNmVecs at a time.
template <int R, int kN, typename E>
inline void nm_fwd_rows(const NmViewT<E>& w, const E* xp, int64_t r0, float* out) {
  [&]<int... P>(std::integer_sequence<int, P...>) {
    (nm_fwd_rows_part<R, kN, P * kNmVecs>(w, xp, r0, out), ...);
  }(std::make_integer_sequence<int, NV / kNmVecs>{});
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

// Backward-data geometry: a bucket's rows all feed the same N dX features, so their sums wait in
// registers, `sets` of them (entries alternate between the sets, for more independent FMA chains)
// of N features by `vecs` token vectors, and are added to the group's staged features when the
// bucket ends; the tile takes NV / vecs passes. AVX-512 holds two sets of its whole tile (4
// vectors). AVX2's 16 registers hold at most 15 accumulators and loaded dY vectors together, so
// the shape follows N: the more vectors a pass covers, the fewer times the bucket's rows and
// values are read per tile and the more FMAs each gathered dY line feeds.
constexpr int kNmBwdFeatures = 64;  // dX features staged per transposed store

struct NmBwdShape {
  int sets, vecs;
};
constexpr NmBwdShape nm_bwd_shape(int n) {
  if (W >= 16) return {2, 4};
  if (n == 1) return {2, 4};  // 8 accumulators + 4 dY vectors
  if (n == 2) return {1, 4};  // 8 + 4
  if (n == 3) return {2, 2};  // 12 + 2
  return {1, 2};              // 8 + 2 (mask 15: instantiated, but N < M never makes it)
}

// out[f] += value * dY[row] over the entries of one bucket, whose kept offsets are the set bits
// of kMask, for the token vectors [H, H + vecs) of the tile (H a template argument, so each
// loaded vector sits at a fixed displacement from its line).
template <int kMask, int H, typename E>
inline void nm_bwd_bucket_part(const E* dyp, const int32_t* row, const E* val, int64_t count, float* out) {
  constexpr int n = std::popcount(static_cast<unsigned>(kMask));
  constexpr int kSets = nm_bwd_shape(n).sets, kVecs = nm_bwd_shape(n).vecs;
  V acc[kSets][n][kVecs];
  for (int k = 0; k < kSets; ++k)
    for (int s = 0; s < n; ++s)
      for (int v = 0; v < kVecs; ++v) acc[k][s][v] = Simd::zero();
  auto entry = [&](int k, int64_t e) {
    const E* d = dyp + static_cast<int64_t>(row[e]) * kTokenTile;
    V dv[kVecs];
    for (int v = 0; v < kVecs; ++v) dv[v] = load_tokens(d, H + v);
    int s = 0;
    if constexpr (std::is_same_v<E, Bf16>)  // an entry's weights are adjacent: pairs (bcast_pair)
      for (; s + 1 < n; s += 2) {
        const BcastPair wp = bcast_pair(val + e * n + s);
        for (int v = 0; v < kVecs; ++v) acc[k][s][v] = Simd::fma(wp.first, dv[v], acc[k][s][v]);
        for (int v = 0; v < kVecs; ++v) acc[k][s + 1][v] = Simd::fma(wp.second, dv[v], acc[k][s + 1][v]);
      }
    for (; s < n; ++s) {
      const V wv = Simd::bcast(to_float(val[e * n + s]));
      for (int v = 0; v < kVecs; ++v) acc[k][s][v] = Simd::fma(wv, dv[v], acc[k][s][v]);
    }
  };
  int64_t e = 0;
  if constexpr (kSets == 2) {
    for (; e + 1 < count; e += 2) {
      entry(0, e);
      entry(1, e + 1);
    }
  }
  for (; e < count; ++e) entry(0, e);
  int s = 0;
  for (int f = 0; f < 4; ++f) {
    if (!((kMask >> f) & 1)) continue;
    for (int v = 0; v < kVecs; ++v) {
      V sum = acc[0][s][v];
      if constexpr (kSets == 2) sum = Simd::add(sum, acc[1][s][v]);
      float* o = out + f * kTokenTile + (H + v) * W;
      Simd::store(o, Simd::add(Simd::load(o), sum));
    }
    ++s;
  }
}

// One bucket over the whole tile, in NV / vecs passes. Out of line: inlined into
// nm_bwd_data<true>, GCC 12 moved the per-entry step of the two-offset buckets into a call of its
// own, and 2:4 backward-data took twice as long.
template <int kMask, typename E>
[[gnu::noinline]] void nm_bwd_bucket(const E* dyp, const int32_t* row, const E* val, int64_t count, float* out) {
  constexpr int kVecs = nm_bwd_shape(std::popcount(static_cast<unsigned>(kMask))).vecs;
  [&]<int... P>(std::integer_sequence<int, P...>) {
    (nm_bwd_bucket_part<kMask, P * kVecs>(dyp, row, val, count, out), ...);
  }(std::make_integer_sequence<int, NV / kVecs>{});
}

// Backward-data's products as a policy (see FmaProducts): FmaNmBuckets runs nm_bwd_bucket.
struct FmaNmBuckets {
  template <int kMask, typename E>
  static void bucket(const E* dyp, const int32_t* row, const E* val, int64_t count, float* out) {
    nm_bwd_bucket<kMask>(dyp, row, val, count, out);
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
    [&]<int... kLess>(std::integer_sequence<int, kLess...>) {  // masks 1..15: N >= 1
      ((p == kLess + 1 ? Buckets::template bucket<kLess + 1>(dyp, wt.row + e0,
                                                             wt.values + static_cast<int64_t>(e0) * wt.n, e1 - e0, out)
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
