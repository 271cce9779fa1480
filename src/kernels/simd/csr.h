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

inline void csr_sddmm(const BlockSparseView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                      bool accumulate, Range rows) {
  rowlist_sddmm(
      dy, x, dvalues, accumulate, rows, [&](int64_t r) { return w.row_ptr[r + 1] - w.row_ptr[r]; },
      [&](int64_t r) { return w.row_ptr[r]; }, [&](int64_t r, int64_t k) { return w.col[w.row_ptr[r] + k]; });
}

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
