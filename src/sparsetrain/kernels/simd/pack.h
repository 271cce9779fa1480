// Packing token-major activations into feature-major token tiles.
// Part of the ISA-generic kernel bodies: included by kernels/spmm_simd.h inside the ISA's
// namespace, after `struct Simd` is defined. Nothing here is ISA-specific.
#pragma once

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

// Token rows [n x F] -> tokens [t0, t0 + n) of one packed tile (t0 a multiple of W). Whole W x W
// blocks go through register transposes; the row and feature tails are copied one by one. With
// sums, sums[f] += each row's value in token order (so every ISA adds in the same order).
inline void pack_rows(ConstMatrixView rows, PackedTokens& dst, int64_t tile, int t0, float* sums) {
  const int64_t features = rows.cols;
  const int64_t full_f = features / W * W;
  const int n = static_cast<int>(rows.rows);
  const int full_n = n / W * W;
  float* out = dst.tile(tile) + t0;
  for (int i0 = 0; i0 < full_n; i0 += W)
    for (int64_t f0 = 0; f0 < full_f; f0 += W) {
      V v[W];
      for (int i = 0; i < W; ++i) v[i] = Simd::loadu(rows.row(i0 + i) + f0);
      if (sums != nullptr) {
        V s = Simd::loadu(sums + f0);
        for (int i = 0; i < W; ++i) s = Simd::add(s, v[i]);
        Simd::storeu(sums + f0, s);
      }
      Simd::transpose(v);
      for (int j = 0; j < W; ++j) Simd::store(out + (f0 + j) * kTokenTile + i0, v[j]);
    }
  for (int i = 0; i < n; ++i)
    for (int64_t f = i < full_n ? full_f : 0; f < features; ++f) {
      const float v = rows.at(i, f);
      out[f * kTokenTile + i] = v;
      if (sums != nullptr) sums[f] += v;
    }
}

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
