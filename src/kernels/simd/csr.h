// CSR (1x1 block) forward and backward-weights.
// Part of the ISA-generic kernel bodies: included by kernels/spmm_simd.h inside the ISA's
// namespace, after `struct Simd` is defined. Nothing here is ISA-specific.
#pragma once

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

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

// One W^T row k of the fused backward for one tile: dX[k] accumulates w * dY[col] over the
// row's entries while each entry's weight gradient dot(X[k], dY[col]) takes its own accumulator;
// W entries at a time are reduced together. Full groups are unrolled without tests.
template <bool kFull>
inline void backward_group(const float* dyp, const int32_t* col, const float* val, int count, const V* xk, V* dxa,
                           float* dwt, bool overwrite) {
  V acc[W];
  for (int j = 0; j < W; ++j) acc[j] = Simd::zero();
#pragma GCC unroll 16
  for (int j = 0; j < W; ++j) {
    if (!kFull && j >= count) break;
    const float* d = dyp + static_cast<int64_t>(col[j]) * kTokenTile;
    const V wj = Simd::bcast(val[j]);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const V dv = Simd::load(d + v * W);
      dxa[v] = Simd::fma(wj, dv, dxa[v]);
      acc[j] = Simd::fma(xk[v], dv, acc[j]);
    }
  }
  add_lanes(dwt, Simd::reduce_lanes(acc), count, overwrite);
}

inline void csr_backward(const BlockSparseView& wt, const PackedTokens& dy, const PackedTokens& x, MatrixView dx,
                         float* dwt, Range rows) {
  alignas(64) float stage[kStageRows * kTokenTile];
  for (int64_t tile = 0; tile < dy.tiles; ++tile) {
    const float* dyp = dy.tile(tile);
    const float* xp = x.tile(tile);
    const bool overwrite = tile == 0;
    for (int64_t r0 = rows.begin; r0 < rows.end; r0 += kStageRows) {
      const int n = static_cast<int>(std::min<int64_t>(kStageRows, rows.end - r0));
      for (int i = 0; i < n; ++i) {
        const int64_t k = r0 + i;
        V xk[NV], dxa[NV];
        for (int v = 0; v < NV; ++v) {
          xk[v] = Simd::load(xp + k * kTokenTile + v * W);
          dxa[v] = Simd::zero();
        }
        int32_t g = wt.row_ptr[k];
        const int32_t end = wt.row_ptr[k + 1];
        for (; g + W <= end; g += W)
          backward_group<true>(dyp, wt.col + g, wt.values + g, W, xk, dxa, dwt + g, overwrite);
        if (g < end)
          backward_group<false>(dyp, wt.col + g, wt.values + g, end - g, xk, dxa, dwt + g, overwrite);
        for (int v = 0; v < NV; ++v) Simd::store(stage + i * kTokenTile + v * W, dxa[v]);
      }
      store_transposed(stage, n, r0, tile_tokens(dy, tile), nullptr, dx, tile * kTokenTile);
    }
  }
}

inline void csr_sddmm(const BlockSparseView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                      bool accumulate, Range rows) {
  rowlist_sddmm(
      dy, x, dvalues, accumulate, rows, [&](int64_t r) { return w.row_ptr[r + 1] - w.row_ptr[r]; },
      [&](int64_t r) { return w.row_ptr[r]; }, [&](int64_t r, int64_t k) { return w.col[w.row_ptr[r] + k]; });
}

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
