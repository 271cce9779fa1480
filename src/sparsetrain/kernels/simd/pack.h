// Packing token-major activations into feature-major token tiles.
// Part of the ISA-generic kernel bodies: included by kernels/spmm_simd.h inside the ISA's
// namespace, after `struct Simd` is defined. Nothing here is ISA-specific.
#pragma once

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

// W tokens t .. t + W - 1 (t a multiple of W) of a tile line. A bf16 line takes them rounded to
// nearest even, as runs of 4 tokens, which bf16_slot keeps together.
inline void store_tokens(float* line, int t, V v) { Simd::store(line + t, v); }
inline void store_tokens(Bf16* line, int t, V v) {
  alignas(64) Bf16 words[W];
  Simd::store_bf16(words, v);
  for (int c = 0; c < W; c += 4) std::memcpy(line + bf16_slot(t + c), words + c, 4 * sizeof(Bf16));
}
inline void store_token(float* line, int t, float v) { line[t] = v; }
inline void store_token(Bf16* line, int t, float v) { line[bf16_slot(t)] = to_bf16(v); }

// Token rows [n x F] -> tokens [t0, t0 + n) of one packed tile (t0 a multiple of W). Whole W x W
// blocks go through register transposes; the row and feature tails are copied one by one. With
// sums, sums[f] += each row's value in token order (so every ISA adds in the same order).
template <typename E>
inline void pack_rows(ConstMatrixView rows, PackedTokensT<E>& dst, int64_t tile, int t0, float* sums) {
  const int64_t features = rows.cols;
  const int64_t full_f = features / W * W;
  const int n = static_cast<int>(rows.rows);
  const int full_n = n / W * W;
  E* out = dst.tile(tile);
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
      for (int j = 0; j < W; ++j) store_tokens(out + (f0 + j) * kTokenTile, t0 + i0, v[j]);
    }
  for (int i = 0; i < n; ++i)
    for (int64_t f = i < full_n ? full_f : 0; f < features; ++f) {
      const float v = rows.at(i, f);
      store_token(out + f * kTokenTile, t0 + i, v);
      if (sums != nullptr) sums[f] += v;
    }
}

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
