// CSR (1x1 block) forward and backward-weights.
// Part of the ISA-generic kernel bodies: included by kernels/spmm_simd.h inside the ISA's
// namespace, after `struct Simd` is defined. Nothing here is ISA-specific.
#pragma once

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

// Entries [begin, end) of one row within one column slice.
struct EntryRange {
  int32_t begin, end;
};

// Runs row_fn(r, entries, out, accumulate) for every row of `rows` in one tile, where out holds
// the row's kTokenTile outputs, then writes them token-major (plus bias). For a sliced pattern
// the rows visit one column slice after another, so each slice of the gathered operand stays in
// L2; partial sums wait in a per-thread buffer and `accumulate` says to add to them.
template <typename RowFn>
inline void csr_rows(const BlockSparseView& w, Range rows, int64_t tile, int valid, const float* bias, MatrixView y,
                     RowFn row_fn) {
  const int64_t slices = w.slice_ptr != nullptr ? w.slices() : 1;
  if (slices == 1) {
    rows_to_output(rows, tile, valid, bias, y, [&](int64_t r, float* out) {
      row_fn(r, EntryRange{w.row_ptr[r], w.row_ptr[r + 1]}, out, false);
    });
    return;
  }
  thread_local AlignedBuffer<float> partial;
  partial.resize(static_cast<std::size_t>((rows.end - rows.begin) * kTokenTile));
  for (int64_t s = 0; s < slices; ++s) {
    int64_t group = rows.begin;  // first row not yet written to y
    for (int64_t r = rows.begin; r < rows.end; ++r) {
      const int32_t* sp = w.slice_ptr + r * (slices + 1) + s;
      float* out = partial.data() + (r - rows.begin) * kTokenTile;
      if (sp[1] > sp[0] || s == 0) row_fn(r, EntryRange{sp[0], sp[1]}, out, s > 0);
      if (s + 1 == slices && (r + 1 - group == kStageRows || r + 1 == rows.end)) {
        store_transposed(partial.data() + (group - rows.begin) * kTokenTile, static_cast<int>(r + 1 - group), group,
                         valid, bias, y, tile * kTokenTile);
        group = r + 1;
      }
    }
  }
}

inline void csr_fwd(const BlockSparseView& w, const PackedTokens& x, const float* bias, MatrixView y, Range tiles,
                    Range rows) {
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    const float* xp = x.tile(tile);
    csr_rows(w, rows, tile, tile_tokens(x, tile), bias, y, [&](int64_t, EntryRange e, float* out, bool accumulate) {
      row_dot(xp, w.values + e.begin, e.end - e.begin, [col = w.col + e.begin](int64_t k) { return col[k]; }, out,
              accumulate);
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
  for (int64_t tile = 0; tile < dy.tiles; ++tile) {
    const float* dyp = dy.tile(tile);
    const float* xp = x.tile(tile);
    const bool overwrite = tile == 0;  // every entry lies in exactly one slice
    csr_rows(wt, rows, tile, tile_tokens(dy, tile), nullptr, dx, [&](int64_t k, EntryRange e, float* out, bool accumulate) {
      V xk[NV], dxa[NV];
      for (int v = 0; v < NV; ++v) {
        xk[v] = Simd::load(xp + k * kTokenTile + v * W);
        dxa[v] = accumulate ? Simd::load(out + v * W) : Simd::zero();
      }
      int32_t g = e.begin;
      for (; g + W <= e.end; g += W)
        backward_group<true>(dyp, wt.col + g, wt.values + g, W, xk, dxa, dwt + g, overwrite);
      if (g < e.end) backward_group<false>(dyp, wt.col + g, wt.values + g, e.end - g, xk, dxa, dwt + g, overwrite);
      for (int v = 0; v < NV; ++v) Simd::store(out + v * W, dxa[v]);
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
