// Packing token-major activations into feature-major token tiles.
// Part of the ISA-generic kernel bodies: included by kernels/spmm_simd.h inside the ISA's
// namespace, after `struct Simd` is defined. Nothing here is ISA-specific.
#pragma once

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

// Token-major [T x F] -> packed tiles. Whole W x W blocks go through register transposes; the
// feature and token tails are copied one by one, and padding is zeroed.
inline void pack(ConstMatrixView src, PackedTokens& dst, Range tiles) {
  const int64_t features = src.cols;
  const int64_t full_f = features / W * W;
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    float* out = dst.tile(tile);
    const int valid = tile_tokens(dst, tile);
    const int full_t = valid / W * W;
    const int64_t t0 = tile * kTokenTile;
    std::memset(out + features * kTokenTile, 0, sizeof(float) * (dst.features_padded - features) * kTokenTile);
    for (int tb = 0; tb < full_t; tb += W)
      for (int64_t f0 = 0; f0 < full_f; f0 += W) {
        V v[W];
        for (int i = 0; i < W; ++i) v[i] = Simd::loadu(src.row(t0 + tb + i) + f0);
        Simd::transpose(v);
        for (int j = 0; j < W; ++j) Simd::store(out + (f0 + j) * kTokenTile + tb, v[j]);
      }
    for (int t = 0; t < kTokenTile; ++t)
      for (int64_t f = t < full_t ? full_f : 0; f < features; ++f)
        out[f * kTokenTile + t] = t < valid ? src.at(t0 + t, f) : 0.0f;
  }
}

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
