// Reference kernels: plain loops in the order of the definitions in spmm.h. They read the same
// packed layout as the fast kernels, so a test of ref against a float64 dense product also
// checks packing, and every other implementation is checked against ref.
#include <algorithm>
#include <vector>

#include "sparsetrain/kernels/spmm.h"

namespace sparsetrain::ref {

namespace {
// Packed value of feature f, token t of tile `tile`.
float packed_at(const PackedTokens& p, int64_t tile, int64_t f, int t) {
  return p.tile(tile)[f * kTokenTile + t];
}
int tile_tokens(const PackedTokens& p, int64_t tile) {
  return static_cast<int>(std::min<int64_t>(kTokenTile, p.tokens - tile * kTokenTile));
}
}  // namespace

void pack_rows(ConstMatrixView rows, PackedTokens& dst, int64_t tile, int t0, float* sums) {
  float* out = dst.tile(tile);
  for (int64_t i = 0; i < rows.rows; ++i)
    for (int64_t f = 0; f < rows.cols; ++f) {
      out[f * kTokenTile + t0 + i] = rows.at(i, f);
      if (sums != nullptr) sums[f] += rows.at(i, f);
    }
}

void spmm_fwd(const BlockSparseView& w, const PackedTokens& x, const float* bias, MatrixView y, Range tiles,
              Range block_rows) {
  const int b = w.block;
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    int valid = tile_tokens(x, tile);
    for (int64_t br = block_rows.begin; br < block_rows.end; ++br) {
      for (int i = 0; i < b && br * b + i < w.rows; ++i) {
        int64_t r = br * b + i;
        for (int t = 0; t < valid; ++t) {
          float sum = 0.0f;
          for (int32_t k = w.row_ptr[br]; k < w.row_ptr[br + 1]; ++k)
            for (int j = 0; j < b; ++j)
              sum += w.values[static_cast<int64_t>(k) * b * b + i * b + j] * packed_at(x, tile, w.col[k] + j, t);
          y.at(tile * kTokenTile + t, r) = sum + (bias != nullptr ? bias[r] : 0.0f);
        }
      }
    }
  }
}

void csr_backward(const BlockSparseView& wt, const PackedTokens& dy, const PackedTokens& x, MatrixView dx,
                  float* dwt, Range rows) {
  spmm_fwd(wt, dy, nullptr, dx, Range{0, dy.tiles}, rows);
  for (int64_t k = rows.begin; k < rows.end; ++k)
    for (int32_t i = wt.row_ptr[k]; i < wt.row_ptr[k + 1]; ++i) {
      float sum = 0.0f;
      for (int64_t tile = 0; tile < x.tiles; ++tile)
        for (int t = 0; t < kTokenTile; ++t) sum += packed_at(dy, tile, wt.col[i], t) * packed_at(x, tile, k, t);
      dwt[i] = sum;
    }
}

void sddmm(const BlockSparseView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues,
           bool accumulate, Range block_rows) {
  const int b = w.block;
  for (int64_t br = block_rows.begin; br < block_rows.end; ++br)
    for (int32_t k = w.row_ptr[br]; k < w.row_ptr[br + 1]; ++k)
      for (int i = 0; i < b; ++i)
        for (int j = 0; j < b; ++j) {
          float sum = 0.0f;
          for (int64_t tile = 0; tile < x.tiles; ++tile)
            for (int t = 0; t < kTokenTile; ++t)
              sum += packed_at(dy, tile, br * b + i, t) * packed_at(x, tile, w.col[k] + j, t);
          float& dst = dvalues[static_cast<int64_t>(k) * b * b + i * b + j];
          dst = accumulate ? dst + sum : sum;
        }
}

void nm_fwd(const NmView& w, const PackedTokens& x, const float* bias, MatrixView y, Range tiles, Range rows) {
  const int64_t groups = w.groups();
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    int valid = tile_tokens(x, tile);
    for (int64_t r = rows.begin; r < rows.end; ++r)
      for (int t = 0; t < valid; ++t) {
        float sum = 0.0f;
        for (int64_t g = 0; g < groups; ++g)
          for (int s = 0; s < w.n; ++s) {
            int64_t e = (r * groups + g) * w.n + s;
            sum += w.values[e] * packed_at(x, tile, g * w.m + w.offset[e], t);
          }
        y.at(tile * kTokenTile + t, r) = sum + (bias != nullptr ? bias[r] : 0.0f);
      }
  }
}

void nm_sddmm(const NmView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues, bool accumulate,
              Range rows) {
  const int64_t groups = w.groups();
  for (int64_t r = rows.begin; r < rows.end; ++r)
    for (int64_t g = 0; g < groups; ++g)
      for (int s = 0; s < w.n; ++s) {
        int64_t e = (r * groups + g) * w.n + s;
        float sum = 0.0f;
        for (int64_t tile = 0; tile < x.tiles; ++tile)
          for (int t = 0; t < kTokenTile; ++t)
            sum += packed_at(dy, tile, r, t) * packed_at(x, tile, g * w.m + w.offset[e], t);
        dvalues[e] = accumulate ? dvalues[e] + sum : sum;
      }
}

void nm_bwd_data(const NmTransposedView& wt, const PackedTokens& dy, MatrixView dx, Range tiles, Range groups) {
  const int64_t ngroups = wt.groups();
  std::vector<float> sum(static_cast<std::size_t>(wt.m) * kTokenTile);
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    int valid = tile_tokens(dy, tile);
    for (int64_t g = groups.begin; g < groups.end; ++g) {
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (int64_t s = 0; s < wt.slices; ++s) {
        const int64_t b = (s * ngroups + g) * wt.buckets;
        for (int32_t e = wt.ptr[b]; e < wt.ptr[b + wt.buckets]; ++e)
          for (int j = 0; j < wt.n; ++j)
            for (int t = 0; t < valid; ++t)
              sum[wt.offset[e * wt.n + j] * kTokenTile + t] += wt.values[e * wt.n + j] * packed_at(dy, tile, wt.row[e], t);
      }
      for (int f = 0; f < wt.m; ++f)
        for (int t = 0; t < valid; ++t) dx.at(tile * kTokenTile + t, g * wt.m + f) = sum[f * kTokenTile + t];
    }
  }
}

}  // namespace sparsetrain::ref
