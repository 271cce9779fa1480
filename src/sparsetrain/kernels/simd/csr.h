// CSR (1x1 block) forward and backward-weights.
// Part of the ISA-generic kernel bodies: included by kernels/spmm_simd.h inside the ISA's
// namespace, after `struct Simd` is defined. Nothing here is ISA-specific.
#pragma once

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

// Entries [begin, end) of one row within one column slice.
struct EntryRange {
  int32_t begin, end;
};

// Runs row_fn(r, entries, out, stride, accumulate) for every row of `rows` over NT consecutive
// tiles from `tile`, where out + c * stride holds the row's kTokenTile outputs for tile tile + c,
// then writes them token-major (plus bias). For a sliced pattern the rows visit one column slice
// after another, so each slice of the gathered operand stays in L2; partial sums wait in a
// per-thread buffer and `accumulate` says to add to them.
template <int NT, typename E, typename RowFn>
inline void csr_rows(const BlockSparseViewT<E>& w, Range rows, int64_t tile, const PackedTokensT<E>& p,
                     const float* bias, MatrixView y, RowFn row_fn) {
  const int64_t slices = w.slice_ptr != nullptr ? w.slices() : 1;
  auto store = [&](const float* staged, int64_t stride, int64_t r0, int n) {
    for (int c = 0; c < NT; ++c)
      store_transposed(staged + c * stride, n, r0, tile_tokens(p, tile + c), bias, y, (tile + c) * kTokenTile);
  };
  if (slices == 1) {
    constexpr int64_t kStride = kStageRows * kTokenTile;
    alignas(64) float stage[NT * kStride];
    for (int64_t r0 = rows.begin; r0 < rows.end; r0 += kStageRows) {
      const int n = static_cast<int>(std::min<int64_t>(kStageRows, rows.end - r0));
      for (int i = 0; i < n; ++i)
        row_fn(r0 + i, EntryRange{w.row_ptr[r0 + i], w.row_ptr[r0 + i + 1]}, stage + i * kTokenTile, kStride, false);
      store(stage, kStride, r0, n);
    }
    return;
  }
  const int64_t stride = (rows.end - rows.begin) * kTokenTile;
  thread_local AlignedBuffer<float> partial;
  partial.resize(static_cast<std::size_t>(NT * stride));
  for (int64_t s = 0; s < slices; ++s) {
    int64_t group = rows.begin;  // first row not yet written to y
    for (int64_t r = rows.begin; r < rows.end; ++r) {
      const int32_t* sp = w.slice_ptr + r * (slices + 1) + s;
      float* out = partial.data() + (r - rows.begin) * kTokenTile;
      if (sp[1] > sp[0] || s == 0) row_fn(r, EntryRange{sp[0], sp[1]}, out, stride, s > 0);
      if (s + 1 == slices && (r + 1 - group == kStageRows || r + 1 == rows.end)) {
        store(partial.data() + (group - rows.begin) * kTokenTile, stride, group, static_cast<int>(r + 1 - group));
        group = r + 1;
      }
    }
  }
}

template <typename Products = FmaProducts, typename E>
inline void csr_fwd(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y,
                    Range tiles, Range rows) {
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    const E* xp = x.tile(tile);
    csr_rows<1>(w, rows, tile, x, bias, y, [&](int64_t, EntryRange e, float* out, int64_t, bool accumulate) {
      Products::row_dot(
          xp, w.values + e.begin, e.end - e.begin, [col = w.col + e.begin](int64_t k) { return col[k]; }, out,
          accumulate);
    });
  }
}

// One W^T row k of the fused backward over NT tiles: for each tile, dX[k] accumulates
// w * dY[col] over the row's entries, while each entry's weight gradient dot(X[k], dY[col]),
// summed over the NT tiles, takes its own accumulator; Simd::kGroup entries at a time are
// reduced together. X[k] is read from L1 by the FMAs. On AVX-512 two tiles per pass
// (Simd::kBackwardTiles) halve the lane reductions and the streaming of W^T's structure and
// gradient, and 2 x 4 dX accumulators and 16 gradient accumulators fit its 32 registers; AVX2's
// 16 hold one tile's 8 and 4 (isa_avx2.h). Full groups are unrolled without tests.
template <bool kFull, int NT, typename E>
inline void backward_group(const E* const* dyp, const E* const* xk, const int32_t* col, const E* val, int count,
                           V (*dxa)[NV], float* dwt, bool overwrite) {
  V acc[Simd::kGroup];
  for (int j = 0; j < Simd::kGroup; ++j) acc[j] = Simd::zero();
#pragma GCC unroll 16
  for (int j = 0; j < Simd::kGroup; ++j) {
    if (!kFull && j >= count) break;
    const int64_t off = static_cast<int64_t>(col[j]) * kTokenTile;
    const V wj = Simd::bcast(to_float(val[j]));
    for (int c = 0; c < NT; ++c)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        const V dv = load_tokens(dyp[c] + off, v);
        dxa[c][v] = Simd::fma(wj, dv, dxa[c][v]);
        acc[j] = Simd::fma(load_tokens(xk[c], v), dv, acc[j]);
      }
  }
  add_lanes(dwt, Simd::reduce_group(acc), count, overwrite);
}

// The fused backward's products as a policy (see FmaProducts): FmaGroups runs backward_group.
struct FmaGroups {
  template <bool kFull, int NT, typename E>
  static void group(const E* const* dyp, const E* const* xk, const int32_t* col, const E* val, int count, V (*dxa)[NV],
                    float* dwt, bool overwrite) {
    backward_group<kFull, NT>(dyp, xk, col, val, count, dxa, dwt, overwrite);
  }
};

template <int NT, typename Groups, typename E>
inline void csr_backward_tiles(const BlockSparseViewT<E>& wt, const PackedTokensT<E>& dy, const PackedTokensT<E>& x,
                               MatrixView dx, float* dwt, Range rows, int64_t tile) {
  const E* dyp[NT];
  const E* xp[NT];
  for (int c = 0; c < NT; ++c) {
    dyp[c] = dy.tile(tile + c);
    xp[c] = x.tile(tile + c);
  }
  const bool overwrite = tile == 0;  // every entry lies in exactly one slice
  csr_rows<NT>(wt, rows, tile, dy, nullptr, dx,
               [&](int64_t k, EntryRange e, float* out, int64_t stride, bool accumulate) {
                 const E* xk[NT];
                 V dxa[NT][NV];
                 for (int c = 0; c < NT; ++c) {
                   xk[c] = xp[c] + k * kTokenTile;
                   for (int v = 0; v < NV; ++v)
                     dxa[c][v] = accumulate ? Simd::load(out + c * stride + v * W) : Simd::zero();
                 }
                 int32_t g = e.begin;
                 for (; g + Simd::kGroup <= e.end; g += Simd::kGroup)
                   Groups::template group<true, NT>(dyp, xk, wt.col + g, wt.values + g, Simd::kGroup, dxa, dwt + g,
                                                    overwrite);
                 if (g < e.end)
                   Groups::template group<false, NT>(dyp, xk, wt.col + g, wt.values + g, e.end - g, dxa, dwt + g,
                                                     overwrite);
                 for (int c = 0; c < NT; ++c)
                   for (int v = 0; v < NV; ++v) Simd::store(out + c * stride + v * W, dxa[c][v]);
               });
}

// Simd::kBackwardTiles tiles per sweep, then the tiles left one at a time.
template <typename Groups = FmaGroups, typename E>
inline void csr_backward(const BlockSparseViewT<E>& wt, const PackedTokensT<E>& dy, const PackedTokensT<E>& x,
                         MatrixView dx, float* dwt, Range rows) {
  constexpr int kTiles = Simd::kBackwardTiles;
  int64_t tile = 0;
  for (; tile + kTiles <= dy.tiles; tile += kTiles) csr_backward_tiles<kTiles, Groups>(wt, dy, x, dx, dwt, rows, tile);
  for (; tile < dy.tiles; ++tile) csr_backward_tiles<1, Groups>(wt, dy, x, dx, dwt, rows, tile);
}

template <typename Products = FmaProducts, typename E>
inline void csr_sddmm(const BlockSparseViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x,
                      float* dvalues, bool accumulate, Range rows) {
  rowlist_sddmm<Products>(
      dy, x, dvalues, accumulate, rows, [&](int64_t r) { return w.row_ptr[r + 1] - w.row_ptr[r]; },
      [&](int64_t r) { return w.row_ptr[r]; }, [&](int64_t r, int64_t k) { return w.col[w.row_ptr[r] + k]; });
}

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
