// Kernel bodies shared by the AVX-512 and AVX2 builds. Included once per ISA translation unit
// after that unit defines SPARSETRAIN_SIMD_NS and, in that namespace, `struct Simd` (vector type V, lane count W, load/store/fma helpers and
// reduce_lanes) and opens the ISA's namespace; nothing here is ISA-specific.
//
// Method (see docs/kernels.md):
// - forward / backward-data: output-stationary. A row's outputs for one 64-token tile live in
//   registers across all of the row's nonzeros; each nonzero is one broadcast and kTokenTile/W
//   FMAs against a contiguous packed feature row. Rows are staged 16 at a time and written to the
//   token-major output transposed. Blocks b x b hold R rows x NVS vectors in registers so one
//   loaded input vector feeds R rows.
// - backward-weights (SDDMM): one scalar per stored entry, reduced over tokens. W entries are
//   computed together, each in its own accumulator, and reduced with one transpose-and-add tree
//   (reduce_lanes), amortised over a chunk of tiles that fits in L2.
#pragma once

#include <algorithm>
#include <cstring>

#include "kernels/spmm.h"

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

using V = Simd::V;
constexpr int W = Simd::W;
constexpr int NV = kTokenTile / W;  // vectors per token tile
constexpr int kStageRows = 16;      // rows staged before the transposed store
constexpr int64_t kL2Budget = 512 * 1024;

inline int tile_tokens(const PackedTokens& p, int64_t tile) {
  return static_cast<int>(std::min<int64_t>(kTokenTile, p.tokens - tile * kTokenTile));
}

// stage[i][t] (+ bias) -> y[t0 + t][r0 + i] for i < nrows, t < valid.
inline void store_transposed(const float* stage, int nrows, int64_t r0, int valid, const float* bias,
                             MatrixView y, int64_t t0) {
  float b[kStageRows];
  for (int i = 0; i < nrows; ++i) b[i] = bias != nullptr ? bias[r0 + i] : 0.0f;
  for (int t = 0; t < valid; ++t) {
    float* dst = y.row(t0 + t) + r0;
    for (int i = 0; i < nrows; ++i) dst[i] = stage[i * kTokenTile + t] + b[i];
  }
}

// One CSR-like row: out[0..64) = sum_k val(k) * xp[col(k)] over `count` entries. Two independent
// accumulator sets when a tile is only 4 vectors keep 8 FMA chains in flight.
template <typename ColOf>
inline void row_dot(const float* xp, const float* val, int64_t count, ColOf col_of, float* out) {
  constexpr bool kTwoSets = NV < 8;
  V a[NV], c[NV];
  for (int v = 0; v < NV; ++v) a[v] = c[v] = Simd::zero();
  int64_t k = 0;
  if constexpr (kTwoSets) {
    for (; k + 1 < count; k += 2) {
      V w0 = Simd::bcast(val[k]);
      V w1 = Simd::bcast(val[k + 1]);
      const float* x0 = xp + static_cast<int64_t>(col_of(k)) * kTokenTile;
      const float* x1 = xp + static_cast<int64_t>(col_of(k + 1)) * kTokenTile;
      for (int v = 0; v < NV; ++v) {
        a[v] = Simd::fma(w0, Simd::load(x0 + v * W), a[v]);
        c[v] = Simd::fma(w1, Simd::load(x1 + v * W), c[v]);
      }
    }
  }
  for (; k < count; ++k) {
    V w0 = Simd::bcast(val[k]);
    const float* x0 = xp + static_cast<int64_t>(col_of(k)) * kTokenTile;
    for (int v = 0; v < NV; ++v) a[v] = Simd::fma(w0, Simd::load(x0 + v * W), a[v]);
  }
  for (int v = 0; v < NV; ++v) Simd::store(out + v * W, kTwoSets ? Simd::add(a[v], c[v]) : a[v]);
}

// Rows [rows.begin, rows.end) of tile `tile`; row_of(r, out) fills out[0..64) for row r.
template <typename RowOf>
inline void rows_to_output(Range rows, int64_t tile, int valid, const float* bias, MatrixView y, RowOf row_of) {
  alignas(64) float stage[kStageRows * kTokenTile];
  for (int64_t r0 = rows.begin; r0 < rows.end; r0 += kStageRows) {
    int n = static_cast<int>(std::min<int64_t>(kStageRows, rows.end - r0));
    for (int i = 0; i < n; ++i) row_of(r0 + i, stage + i * kTokenTile);
    store_transposed(stage, n, r0, valid, bias, y, tile * kTokenTile);
  }
}

// Block b x b forward for one block-row: R rows x NVS vectors of accumulators per pass.
template <int B>
inline void block_row_fwd(const BlockSparseView& w, const float* xp, int64_t br, float* stage) {
  constexpr int kAcc = W == 16 ? 16 : 8;
  constexpr int R = std::min(B, W == 16 ? 8 : 4);
  constexpr int NVS = std::min(NV, kAcc / R);
  const int32_t begin = w.row_ptr[br], end = w.row_ptr[br + 1];
  for (int i0 = 0; i0 < B; i0 += R)
    for (int v0 = 0; v0 < NV; v0 += NVS) {
      V acc[R][NVS];
      for (int i = 0; i < R; ++i)
        for (int s = 0; s < NVS; ++s) acc[i][s] = Simd::zero();
      for (int32_t k = begin; k < end; ++k) {
        const float* xb = xp + static_cast<int64_t>(w.col[k]) * kTokenTile + v0 * W;
        const float* wb = w.values + static_cast<int64_t>(k) * B * B + i0 * B;
        for (int j = 0; j < B; ++j) {
          V xv[NVS];
          for (int s = 0; s < NVS; ++s) xv[s] = Simd::load(xb + j * kTokenTile + s * W);
          for (int i = 0; i < R; ++i) {
            V wv = Simd::bcast(wb[i * B + j]);
            for (int s = 0; s < NVS; ++s) acc[i][s] = Simd::fma(wv, xv[s], acc[i][s]);
          }
        }
      }
      for (int i = 0; i < R; ++i)
        for (int s = 0; s < NVS; ++s) Simd::store(stage + (i0 + i) * kTokenTile + (v0 + s) * W, acc[i][s]);
    }
}

template <int B>
void block_fwd(const BlockSparseView& w, const PackedTokens& x, const float* bias, MatrixView y, Range tiles,
               Range block_rows) {
  alignas(64) float stage[B * kTokenTile];
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    const float* xp = x.tile(tile);
    int valid = tile_tokens(x, tile);
    for (int64_t br = block_rows.begin; br < block_rows.end; ++br) {
      block_row_fwd<B>(w, xp, br, stage);
      int rows = static_cast<int>(std::min<int64_t>(B, w.rows - br * B));
      for (int i0 = 0; i0 < rows; i0 += kStageRows)
        store_transposed(stage + i0 * kTokenTile, std::min(kStageRows, rows - i0), br * B + i0, valid, bias, y,
                         tile * kTokenTile);
    }
  }
}

inline void csr_fwd(const BlockSparseView& w, const PackedTokens& x, const float* bias, MatrixView y, Range tiles,
                    Range rows) {
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    const float* xp = x.tile(tile);
    rows_to_output(rows, tile, tile_tokens(x, tile), bias, y, [&](int64_t r, float* out) {
      const int32_t begin = w.row_ptr[r];
      const int32_t* col = w.col + begin;
      row_dot(xp, w.values + begin, w.row_ptr[r + 1] - begin, [col](int64_t k) { return col[k]; }, out);
    });
  }
}

inline void spmm_fwd(const BlockSparseView& w, const PackedTokens& x, const float* bias, MatrixView y, Range tiles,
                     Range block_rows) {
  switch (w.block) {
    case 1: return csr_fwd(w, x, bias, y, tiles, block_rows);
    case 4: return block_fwd<4>(w, x, bias, y, tiles, block_rows);
    case 8: return block_fwd<8>(w, x, bias, y, tiles, block_rows);
    case 16: return block_fwd<16>(w, x, bias, y, tiles, block_rows);
    default: return ref::spmm_fwd(w, x, bias, y, tiles, block_rows);
  }
}

inline void nm_fwd(const NmView& w, const PackedTokens& x, const float* bias, MatrixView y, Range tiles,
                   Range rows) {
  const int64_t per_row = w.groups() * w.n;
  const int n = w.n, m = w.m;
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    const float* xp = x.tile(tile);
    rows_to_output(rows, tile, tile_tokens(x, tile), bias, y, [&](int64_t r, float* out) {
      const uint8_t* off = w.offset + r * per_row;
      row_dot(xp, w.values + r * per_row, per_row, [off, n, m](int64_t k) { return (k / n) * m + off[k]; }, out);
    });
  }
}

// Tiles per chunk so the chunk's packed panel of `features` rows stays in L2.
inline int64_t tiles_per_chunk(const PackedTokens& p) {
  int64_t panel = p.features_padded * kTokenTile * static_cast<int64_t>(sizeof(float));
  return std::max<int64_t>(1, kL2Budget / std::max<int64_t>(panel, 1));
}

// dst[0..n) (+)= lanes of v.
inline void add_lanes(float* dst, V v, int n, bool overwrite) {
  alignas(64) float lanes[W];
  Simd::store(lanes, v);
  for (int j = 0; j < n; ++j) dst[j] = overwrite ? lanes[j] : dst[j] + lanes[j];
}

// W entries of one row r: lane j = sum over tiles [t0, t1) of dy[r] . x[cols[j]].
inline V row_group_dots(const PackedTokens& dy, const PackedTokens& x, int64_t r, const int32_t* cols, int64_t t0,
                        int64_t t1) {
  V acc[W];
  for (int j = 0; j < W; ++j) acc[j] = Simd::zero();
  for (int64_t tile = t0; tile < t1; ++tile) {
    const float* d = dy.tile(tile) + r * kTokenTile;
    const float* xp = x.tile(tile);
    V dv[NV];
    for (int v = 0; v < NV; ++v) dv[v] = Simd::load(d + v * W);
    for (int j = 0; j < W; ++j) {
      const float* xc = xp + static_cast<int64_t>(cols[j]) * kTokenTile;
      for (int v = 0; v < NV; ++v) acc[j] = Simd::fma(dv[v], Simd::load(xc + v * W), acc[j]);
    }
  }
  return Simd::reduce_lanes(acc);
}

// SDDMM over rows whose entries are a flat list: entry k of row r has column col_of(r, k) and
// value slot first(r) + k. Used by CSR and N:M.
template <typename Count, typename First, typename ColOf>
void rowlist_sddmm(const PackedTokens& dy, const PackedTokens& x, float* dvalues, bool accumulate, Range rows,
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
        add_lanes(dst + k0, row_group_dots(dy, x, r, cols, t0, t1), n, overwrite);
      }
    }
  }
}

// Block SDDMM: each b x b block is cut into SR x SC sub-blocks of W dots (4x4 on AVX-512, 2x4 on
// AVX2); per vector of tokens, SR dY loads and SC X loads feed W FMAs.
template <int B>
void block_sddmm(const BlockSparseView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                 bool accumulate, Range block_rows) {
  constexpr int SC = std::min(B, 4);
  constexpr int SR = W / SC;
  static_assert(B % SR == 0 && B % SC == 0);
  const int64_t chunk = tiles_per_chunk(x);
  for (int64_t t0 = 0; t0 < x.tiles; t0 += chunk) {
    const int64_t t1 = std::min(x.tiles, t0 + chunk);
    const bool overwrite = !accumulate && t0 == 0;
    for (int64_t br = block_rows.begin; br < block_rows.end; ++br)
      for (int32_t k = w.row_ptr[br]; k < w.row_ptr[br + 1]; ++k)
        for (int i0 = 0; i0 < B; i0 += SR)
          for (int j0 = 0; j0 < B; j0 += SC) {
            V acc[W];
            for (int j = 0; j < W; ++j) acc[j] = Simd::zero();
            for (int64_t tile = t0; tile < t1; ++tile) {
              const float* d = dy.tile(tile) + (br * B + i0) * kTokenTile;
              const float* xc = x.tile(tile) + static_cast<int64_t>(w.col[k] + j0) * kTokenTile;
              for (int v = 0; v < NV; ++v) {
                V dv[SR], xv[SC];
                for (int i = 0; i < SR; ++i) dv[i] = Simd::load(d + i * kTokenTile + v * W);
                for (int j = 0; j < SC; ++j) xv[j] = Simd::load(xc + j * kTokenTile + v * W);
                for (int i = 0; i < SR; ++i)
                  for (int j = 0; j < SC; ++j) acc[i * SC + j] = Simd::fma(dv[i], xv[j], acc[i * SC + j]);
              }
            }
            alignas(64) float lanes[W];
            Simd::store(lanes, Simd::reduce_lanes(acc));
            float* dst = dvalues + static_cast<int64_t>(k) * B * B + i0 * B + j0;
            for (int i = 0; i < SR; ++i)
              for (int j = 0; j < SC; ++j)
                dst[i * B + j] = overwrite ? lanes[i * SC + j] : dst[i * B + j] + lanes[i * SC + j];
          }
  }
}

inline void sddmm(const BlockSparseView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                  bool accumulate, Range block_rows) {
  switch (w.block) {
    case 1:
      return rowlist_sddmm(
          dy, x, dvalues, accumulate, block_rows, [&](int64_t r) { return w.row_ptr[r + 1] - w.row_ptr[r]; },
          [&](int64_t r) { return w.row_ptr[r]; }, [&](int64_t r, int64_t k) { return w.col[w.row_ptr[r] + k]; });
    case 4: return block_sddmm<4>(w, dy, x, dvalues, accumulate, block_rows);
    case 8: return block_sddmm<8>(w, dy, x, dvalues, accumulate, block_rows);
    case 16: return block_sddmm<16>(w, dy, x, dvalues, accumulate, block_rows);
    default: return ref::sddmm(w, dy, x, dvalues, accumulate, block_rows);
  }
}

inline void nm_sddmm(const NmView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                     bool accumulate, Range rows) {
  const int64_t per_row = w.groups() * w.n;
  rowlist_sddmm(
      dy, x, dvalues, accumulate, rows, [&](int64_t) { return per_row; }, [&](int64_t r) { return r * per_row; },
      [&](int64_t r, int64_t k) { return static_cast<int32_t>((k / w.n) * w.m + w.offset[r * per_row + k]); });
}

// Token-major [T x F] -> packed tiles; W x W blocks transposed through registers-sized scratch.
inline void pack(ConstMatrixView src, PackedTokens& dst, Range tiles) {
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    float* out = dst.tile(tile);
    const int valid = tile_tokens(dst, tile);
    const int64_t t0 = tile * kTokenTile;
    std::memset(out, 0, sizeof(float) * dst.features_padded * kTokenTile);
    for (int t = 0; t < valid; ++t) {
      const float* s = src.row(t0 + t);
      for (int64_t f = 0; f < src.cols; ++f) out[f * kTokenTile + t] = s[f];
    }
  }
}

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
