// N:M forward and backward-weights (backward-data runs the CSR kernel on W^T).
// Part of the ISA-generic kernel bodies: included by kernels/spmm_simd.h inside the ISA's
// namespace, after `struct Simd` is defined. Nothing here is ISA-specific.
#pragma once

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

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

inline void nm_sddmm(const NmView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                     bool accumulate, Range rows) {
  const int64_t per_row = w.groups() * w.n;
  rowlist_sddmm(
      dy, x, dvalues, accumulate, rows, [&](int64_t) { return per_row; }, [&](int64_t r) { return r * per_row; },
      [&](int64_t r, int64_t k) { return static_cast<int32_t>((k / w.n) * w.m + w.offset[r * per_row + k]); });
}

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
