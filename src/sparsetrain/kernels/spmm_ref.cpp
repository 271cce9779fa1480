// Reference kernels: plain loops in the order of the definitions in spmm.h. They read the same
// packed layout as the fast kernels, so a test of ref against a float64 dense product also
// checks packing, and every other implementation is checked against ref.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "sparsetrain/kernels/spmm.h"

namespace sparsetrain::ref {

namespace {
int tile_tokens(int64_t tokens, int64_t tile) {
  return static_cast<int>(std::min<int64_t>(kTokenTile, tokens - tile * kTokenTile));
}

template <typename E>
void pack_rows_t(ConstMatrixView rows, PackedTokensT<E>& dst, int64_t tile, int t0, float* sums) {
  E* out = dst.tile(tile);
  for (int64_t i = 0; i < rows.rows; ++i)
    for (int64_t f = 0; f < rows.cols; ++f) {
      const float v = rows.at(i, f);
      if constexpr (std::is_same_v<E, Bf16>)
        out[f * kTokenTile + bf16_slot(t0 + static_cast<int>(i))] = to_bf16(v);
      else
        out[f * kTokenTile + t0 + i] = v;
      if (sums != nullptr) sums[f] += v;
    }
}

template <typename E>
void spmm_fwd_t(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y, Range tiles,
                Range block_rows) {
  const int b = w.block;
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    int valid = tile_tokens(x.tokens, tile);
    for (int64_t br = block_rows.begin; br < block_rows.end; ++br) {
      for (int i = 0; i < b && br * b + i < w.rows; ++i) {
        int64_t r = br * b + i;
        for (int t = 0; t < valid; ++t) {
          float sum = 0.0f;
          for (int32_t k = w.row_ptr[br]; k < w.row_ptr[br + 1]; ++k)
            for (int j = 0; j < b; ++j)
              sum += to_float(w.values[static_cast<int64_t>(k) * b * b + i * b + j]) * x.at(tile, w.col[k] + j, t);
          y.at(tile * kTokenTile + t, r) = sum + (bias != nullptr ? bias[r] : 0.0f);
        }
      }
    }
  }
}

template <typename E>
void csr_backward_t(const BlockSparseViewT<E>& wt, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, MatrixView dx,
                    float* dwt, Range rows) {
  spmm_fwd_t(wt, dy, nullptr, dx, Range{0, dy.tiles}, rows);
  for (int64_t k = rows.begin; k < rows.end; ++k)
    for (int32_t i = wt.row_ptr[k]; i < wt.row_ptr[k + 1]; ++i) {
      float sum = 0.0f;
      for (int64_t tile = 0; tile < x.tiles; ++tile)
        for (int t = 0; t < kTokenTile; ++t) sum += dy.at(tile, wt.col[i], t) * x.at(tile, k, t);
      dwt[i] = sum;
    }
}

template <typename E>
void sddmm_t(const BlockSparseViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues,
             bool accumulate, Range block_rows) {
  const int b = w.block;
  for (int64_t br = block_rows.begin; br < block_rows.end; ++br)
    for (int32_t k = w.row_ptr[br]; k < w.row_ptr[br + 1]; ++k)
      for (int i = 0; i < b; ++i)
        for (int j = 0; j < b; ++j) {
          float sum = 0.0f;
          for (int64_t tile = 0; tile < x.tiles; ++tile)
            for (int t = 0; t < kTokenTile; ++t) sum += dy.at(tile, br * b + i, t) * x.at(tile, w.col[k] + j, t);
          float& dst = dvalues[static_cast<int64_t>(k) * b * b + i * b + j];
          dst = accumulate ? dst + sum : sum;
        }
}

template <typename E>
void nm_fwd_t(const NmViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y, Range tiles,
              Range rows) {
  const int64_t groups = w.groups();
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    int valid = tile_tokens(x.tokens, tile);
    for (int64_t r = rows.begin; r < rows.end; ++r)
      for (int t = 0; t < valid; ++t) {
        float sum = 0.0f;
        for (int64_t g = 0; g < groups; ++g)
          for (int s = 0; s < w.n; ++s) {
            int64_t e = (r * groups + g) * w.n + s;
            sum += to_float(w.values[e]) * x.at(tile, g * w.m + w.offset[e], t);
          }
        y.at(tile * kTokenTile + t, r) = sum + (bias != nullptr ? bias[r] : 0.0f);
      }
  }
}

template <typename E>
void nm_sddmm_t(const NmViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues,
                bool accumulate, Range rows) {
  const int64_t groups = w.groups();
  for (int64_t r = rows.begin; r < rows.end; ++r)
    for (int64_t g = 0; g < groups; ++g)
      for (int s = 0; s < w.n; ++s) {
        int64_t e = (r * groups + g) * w.n + s;
        float sum = 0.0f;
        for (int64_t tile = 0; tile < x.tiles; ++tile)
          for (int t = 0; t < kTokenTile; ++t) sum += dy.at(tile, r, t) * x.at(tile, g * w.m + w.offset[e], t);
        dvalues[e] = accumulate ? dvalues[e] + sum : sum;
      }
}

template <typename E>
void nm_bwd_data_t(const NmTransposedViewT<E>& wt, const PackedTokensT<E>& dy, MatrixView dx, Range tiles,
                   Range groups) {
  const int64_t ngroups = wt.groups();
  std::vector<float> sum(static_cast<std::size_t>(wt.m) * kTokenTile);
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    int valid = tile_tokens(dy.tokens, tile);
    for (int64_t g = groups.begin; g < groups.end; ++g) {
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (int64_t s = 0; s < wt.slices; ++s) {
        const int64_t b = (s * ngroups + g) * wt.buckets;
        for (int32_t e = wt.ptr[b]; e < wt.ptr[b + wt.buckets]; ++e)
          for (int j = 0; j < wt.n; ++j)
            for (int t = 0; t < valid; ++t)
              sum[wt.offset[e * wt.n + j] * kTokenTile + t] +=
                  to_float(wt.values[e * wt.n + j]) * dy.at(tile, wt.row[e], t);
      }
      for (int f = 0; f < wt.m; ++f)
        for (int t = 0; t < valid; ++t) dx.at(tile * kTokenTile + t, g * wt.m + f) = sum[f * kTokenTile + t];
    }
  }
}
}  // namespace

// The entry points of spmm.h, for both value types.
#define SPARSETRAIN_REF_KERNELS(E, sfx)                                                                                \
  void pack_rows##sfx(ConstMatrixView rows, PackedTokensT<E>& dst, int64_t tile, int t0, float* sums) {                \
    pack_rows_t(rows, dst, tile, t0, sums);                                                                            \
  }                                                                                                                    \
  void spmm_fwd##sfx(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y,         \
                     Range tiles, Range block_rows) {                                                                  \
    spmm_fwd_t(w, x, bias, y, tiles, block_rows);                                                                      \
  }                                                                                                                    \
  void csr_backward##sfx(const BlockSparseViewT<E>& wt, const PackedTokensT<E>& dy, const PackedTokensT<E>& x,         \
                         MatrixView dx, float* dwt, Range rows) {                                                      \
    csr_backward_t(wt, dy, x, dx, dwt, rows);                                                                          \
  }                                                                                                                    \
  void sddmm##sfx(const BlockSparseViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues, \
                  bool accumulate, Range block_rows) {                                                                 \
    sddmm_t(w, dy, x, dvalues, accumulate, block_rows);                                                                \
  }                                                                                                                    \
  void nm_fwd##sfx(const NmViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y, Range tiles,       \
                   Range rows) {                                                                                       \
    nm_fwd_t(w, x, bias, y, tiles, rows);                                                                              \
  }                                                                                                                    \
  void nm_sddmm##sfx(const NmViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues,       \
                     bool accumulate, Range rows) {                                                                    \
    nm_sddmm_t(w, dy, x, dvalues, accumulate, rows);                                                                   \
  }                                                                                                                    \
  void nm_bwd_data##sfx(const NmTransposedViewT<E>& wt, const PackedTokensT<E>& dy, MatrixView dx, Range tiles,        \
                        Range groups) {                                                                                \
    nm_bwd_data_t(wt, dy, dx, tiles, groups);                                                                          \
  }
SPARSETRAIN_REF_KERNELS(float, )
SPARSETRAIN_REF_KERNELS(Bf16, _bf16)
#undef SPARSETRAIN_REF_KERNELS

}  // namespace sparsetrain::ref
