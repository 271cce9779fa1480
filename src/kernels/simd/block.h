// Block b x b (4, 8, 16) forward and backward-weights.
// Part of the ISA-generic kernel bodies: included by kernels/spmm_simd.h inside the ISA's
// namespace, after `struct Simd` is defined. Nothing here is ISA-specific.
#pragma once

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

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
  alignas(64) float stage[std::max(B, kStageRows) * kTokenTile];  // store_transposed reads whole row groups
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

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
