// Packing token-major activations into feature-major token tiles.
// Part of the ISA-generic kernel bodies: included by kernels/spmm_simd.h inside the ISA's
// namespace, after `struct Simd` is defined. Nothing here is ISA-specific.
#pragma once

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

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
