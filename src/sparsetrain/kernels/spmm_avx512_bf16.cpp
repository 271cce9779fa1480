// AVX512-BF16 entries of the bf16 kernels. vdpbf16ps multiplies the bf16 pairs of two vectors and
// adds both products to a float32 lane: 32 multiply-adds per instruction, twice an fp32 FMA's.
// The generic bodies (simd/) run with these products in place of widening and FMAs:
//
// - output-stationary passes (CSR and block forward, the fused CSR backward's dX) pair two
//   gathered lines: unpacklo/hi_epi16 of two bf16 lines give, per lane, (line 0, line 1) at one
//   token, tokens in order (packed_tokens.h), and the broadcast pair of the two weights
//   multiplies both in one instruction;
// - passes that sum over tokens (the weight gradients) multiply two lines as they are: a lane's
//   pair is two tokens of both operands, in the one order both were packed in.
//
// Only the bf16 lists hold these entries; kernels not specialized here (N:M backward-data for
// M > 4, the 4 x 4 and 8 x 8 block weight passes, packing) run their AVX-512 bf16 entries.
#include "sparsetrain/kernels/spmm.h"

// GCC 12 reports the deliberately undefined passthrough operand inside its own AVX-512
// intrinsics as uninitialized (GCC bug 105593; see spmm_avx512.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <bit>
#include <cstring>

// The generic bodies in this unit's own namespaces, in the order they build on one another (as
// kernels/spmm_simd.h includes them): the vector helpers, then the shared pieces, then each format.
#define SPARSETRAIN_SIMD_NS avx512_bf16_detail
#define SPARSETRAIN_ISA_NS avx512_bf16
#include "sparsetrain/kernels/simd/isa_avx512.h"
// clang-format off
#include "sparsetrain/kernels/simd/common.h"
#include "sparsetrain/kernels/simd/csr.h"
#include "sparsetrain/kernels/simd/block.h"
#include "sparsetrain/kernels/simd/nm.h"
// clang-format on

namespace sparsetrain::avx512_bf16_detail {

using Vi = __m512i;

inline __m512bh as_pairs(Vi v) { return reinterpret_cast<__m512bh>(v); }
// Tokens 32h .. 32h + 31 of a bf16 tile line (64 bytes).
inline Vi line_half(const Bf16* line, int h) { return _mm512_load_si512(line + 32 * h); }
// The pair (a, b) in every lane: a multiplies the even words of the other operand, b the odd.
inline __m512bh pair_of(Bf16 a, Bf16 b) {
  return as_pairs(_mm512_set1_epi32(static_cast<int>(a.bits | (static_cast<uint32_t>(b.bits) << 16))));
}
// Two adjacent bf16 values as that pair.
inline __m512bh pair_at(const Bf16* p) {
  uint32_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return as_pairs(_mm512_set1_epi32(static_cast<int>(bits)));
}
inline V dp(V acc, Vi a, __m512bh b) { return _mm512_dpbf16_ps(acc, as_pairs(a), b); }

// acc[0], acc[1] += w.a * l0 + w.b * l1 for one 32-token half of two lines.
inline void pair_halves(V* acc, Vi l0, Vi l1, __m512bh w) {
  acc[0] = dp(acc[0], _mm512_unpacklo_epi16(l0, l1), w);
  acc[1] = dp(acc[1], _mm512_unpackhi_epi16(l0, l1), w);
}
// acc[2h], acc[2h + 1] (tokens 32h .. 32h + 15, 32h + 16 .. 32h + 31) += w.a * line0 + w.b * line1
// for both halves; a null line1 counts as zeros.
inline void pair_lines(V* acc, const Bf16* line0, const Bf16* line1, __m512bh w) {
  for (int h = 0; h < 2; ++h)
    pair_halves(acc + 2 * h, line_half(line0, h), line1 != nullptr ? line_half(line1, h) : _mm512_setzero_si512(), w);
}
// The same for two lines known to exist: no test of line1 per call.
inline void pair_two_lines(V* acc, const Bf16* line0, const Bf16* line1, __m512bh w) {
  for (int h = 0; h < 2; ++h) pair_halves(acc + 2 * h, line_half(line0, h), line_half(line1, h), w);
}

struct DpProducts {
  // out[0..64) (+)= sum_k val[k] * x[col_of(k)]: two pairs of entries per pass in two
  // accumulator sets, so 8 independent chains cover vdpbf16ps's latency.
  template <typename ColOf>
  static void row_dot(const Bf16* xp, const Bf16* val, int64_t count, ColOf col_of, float* out, bool accumulate) {
    static_assert(NV == 4);
    V a[NV], c[NV];
    for (int v = 0; v < NV; ++v) {
      a[v] = accumulate ? Simd::load(out + v * W) : Simd::zero();
      c[v] = Simd::zero();
    }
    auto line = [&](int64_t k) { return xp + static_cast<int64_t>(col_of(k)) * kTokenTile; };
    int64_t k = 0;
    for (; k + 3 < count; k += 4) {
      pair_two_lines(a, line(k), line(k + 1), pair_at(val + k));
      pair_two_lines(c, line(k + 2), line(k + 3), pair_at(val + k + 2));
    }
    for (; k + 1 < count; k += 2) pair_two_lines(a, line(k), line(k + 1), pair_at(val + k));
    if (k < count) pair_lines(a, line(k), nullptr, pair_of(val[k], Bf16{}));
    for (int v = 0; v < NV; ++v) Simd::store(out + v * W, Simd::add(a[v], c[v]));
  }

  // Lane j = sum over tiles [t0, t1) of dy[r] . x[cols[j]]: 32 tokens per instruction.
  static V row_group_dots(const PackedTokensBf16& dy, const PackedTokensBf16& x, int64_t r, const int32_t* cols,
                          int64_t t0, int64_t t1) {
    V acc[W];
    for (int j = 0; j < W; ++j) acc[j] = Simd::zero();
    for (int64_t tile = t0; tile < t1; ++tile) {
      const Bf16* d = dy.tile(tile) + r * kTokenTile;
      const Bf16* xp = x.tile(tile);
      const Vi d0 = line_half(d, 0), d1 = line_half(d, 1);
#pragma GCC unroll 16
      for (int j = 0; j < W; ++j) {
        const Bf16* xc = xp + static_cast<int64_t>(cols[j]) * kTokenTile;
        acc[j] = dp(acc[j], d0, as_pairs(line_half(xc, 0)));
        acc[j] = dp(acc[j], d1, as_pairs(line_half(xc, 1)));
      }
    }
    return Simd::reduce_lanes(acc);
  }
};

// The fused CSR backward's W entries of one W^T row (see backward_group in simd/csr.h): dX
// takes the entries in pairs of gathered dY lines, each entry's weight gradient multiplies its dY
// line by X[k] as they are.
struct DpGroups {
  static_assert(Simd::kGroup == W);  // the driver's group size (csr_backward_tiles)
  template <bool kFull, int NT>
  static void group(const Bf16* const* dyp, const Bf16* const* xk, const int32_t* col, const Bf16* val, int count,
                    V (*dxa)[NV], float* dwt, bool overwrite) {
    V acc[W];
    for (int j = 0; j < W; ++j) acc[j] = Simd::zero();
#pragma GCC unroll 8
    for (int j = 0; j < W; j += 2) {
      if (!kFull && j >= count) break;
      const bool two = kFull || j + 1 < count;
      const __m512bh w = two ? pair_at(val + j) : pair_of(val[j], Bf16{});
      for (int c = 0; c < NT; ++c) {
        const Bf16* y0 = dyp[c] + static_cast<int64_t>(col[j]) * kTokenTile;
        const Bf16* y1 = two ? dyp[c] + static_cast<int64_t>(col[j + 1]) * kTokenTile : nullptr;
        for (int h = 0; h < 2; ++h) {
          const Vi l0 = line_half(y0, h);
          const Vi l1 = two ? line_half(y1, h) : _mm512_setzero_si512();
          const __m512bh xh = as_pairs(line_half(xk[c], h));
          dxa[c][2 * h] = dp(dxa[c][2 * h], _mm512_unpacklo_epi16(l0, l1), w);
          dxa[c][2 * h + 1] = dp(dxa[c][2 * h + 1], _mm512_unpackhi_epi16(l0, l1), w);
          acc[j] = dp(acc[j], l0, xh);
          if (two) acc[j + 1] = dp(acc[j + 1], l1, xh);
        }
      }
    }
    add_lanes(dwt, Simd::reduce_lanes(acc), count, overwrite);
  }
};

// Block b x b forward for one block-row (see block_row_fwd in simd/block.h): block columns in
// pairs, R rows x 2H vectors of accumulators per pass, each interleaved pair of lines feeding R
// instructions with the rows' weight pairs.
struct DpBlockRows {
  template <int B, typename Between>
  static void row(const BlockSparseViewT<Bf16>& w, const Bf16* xp, int64_t br, float* stage, Between&& between) {
    constexpr int R = std::min(B, 8);
    constexpr int H = B == 4 ? 2 : 1;  // 32-token halves per pass: R x 2H = 16 accumulators
    const int32_t begin = w.row_ptr[br], end = w.row_ptr[br + 1];
    for (int i0 = 0; i0 < B; i0 += R)
      for (int h0 = 0; h0 < 2; h0 += H) {
        V acc[R][2 * H];
        for (int i = 0; i < R; ++i)
          for (int s = 0; s < 2 * H; ++s) acc[i][s] = Simd::zero();
        for (int32_t k = begin; k < end; ++k) {
          const Bf16* xb = xp + static_cast<int64_t>(w.col[k]) * kTokenTile;
          const Bf16* wb = w.values + static_cast<int64_t>(k) * B * B + i0 * B;
          for (int j = 0; j < B; j += 2) {
            Vi lo[H], hi[H];
            for (int s = 0; s < H; ++s) {
              const Vi l0 = line_half(xb + j * kTokenTile, h0 + s);
              const Vi l1 = line_half(xb + (j + 1) * kTokenTile, h0 + s);
              lo[s] = _mm512_unpacklo_epi16(l0, l1);
              hi[s] = _mm512_unpackhi_epi16(l0, l1);
            }
            for (int i = 0; i < R; ++i) {
              const __m512bh wp = pair_at(wb + i * B + j);
              for (int s = 0; s < H; ++s) {
                acc[i][2 * s] = dp(acc[i][2 * s], lo[s], wp);
                acc[i][2 * s + 1] = dp(acc[i][2 * s + 1], hi[s], wp);
              }
            }
          }
        }
        for (int i = 0; i < R; ++i)
          for (int s = 0; s < 2 * H; ++s) Simd::store(stage + (i0 + i) * kTokenTile + (2 * h0 + s) * W, acc[i][s]);
        between();
      }
  }
};

// The N:M forward's R rows of one tile (see nm_fwd_rows in simd/nm.h): a row's kept entries in
// pairs, the two lines (from L1, shared by the rows) interleaved and multiplied by the pair of
// weights. An even N pairs the entries of a group; an odd N pairs them in row order across
// groups (pairing each group's last entry with zeros made 1:4 take longer than 2:4), and only an
// odd number of entries in the row leaves one to pair with zeros.
struct DpNmRows {
  template <int R, int kN>
  static void rows(const NmViewT<Bf16>& w, const Bf16* xp, int64_t r0, float* out) {
    static_assert(NV == 4);
    const int n = kN > 0 ? kN : w.n;
    const int64_t per_row = w.groups() * n;
    const int64_t group_stride = static_cast<int64_t>(w.m) * kTokenTile;
    // One pointer per stream, the rows a fixed stride apart: with a pointer per row, GCC 12 ran
    // out of general registers and spilled the vector ones too (the 2:4 forward took 1.6x as long).
    const uint8_t* ob = w.offset + r0 * per_row;
    const Bf16* vb = w.values + r0 * per_row;
    V acc[R][NV];
    for (int i = 0; i < R; ++i)
      for (int v = 0; v < NV; ++v) acc[i][v] = Simd::zero();
    if (n % 2 == 0) {
      const Bf16* xg = xp;
      for (int64_t k = 0; k < per_row; k += n, xg += group_stride) {
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          const uint8_t* off = ob + i * per_row + k;
          const Bf16* val = vb + i * per_row + k;
          for (int s = 0; s < n; s += 2)
            pair_two_lines(acc[i], xg + off[s] * kTokenTile, xg + off[s + 1] * kTokenTile, pair_at(val + s));
        }
      }
    } else {
      // Entry k lies in the group whose lines start at xg, slot s of n; every row has the same.
      const Bf16* xg = xp;
      int s = 0;
      auto next = [&] {
        if (++s == n) {
          s = 0;
          xg += group_stride;
        }
      };
      int64_t k = 0;
      for (; k + 1 < per_row; k += 2) {
        const Bf16* xa = xg;
        next();
        const Bf16* xb = xg;
        next();
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          const uint8_t* off = ob + i * per_row + k;
          pair_two_lines(acc[i], xa + off[0] * kTokenTile, xb + off[1] * kTokenTile, pair_at(vb + i * per_row + k));
        }
      }
      if (k < per_row)
        for (int i = 0; i < R; ++i)
          pair_lines(acc[i], xg + ob[i * per_row + k] * kTokenTile, nullptr, pair_of(vb[i * per_row + k], Bf16{}));
    }
    for (int i = 0; i < R; ++i)
      for (int v = 0; v < NV; ++v) Simd::store(out + i * kTokenTile + v * W, acc[i][v]);
  }
};

// N:M backward-data's bucket (see nm_bwd_bucket in simd/nm.h): every entry of a bucket feeds
// the same features, so entries go in pairs, their two dY lines interleaved and multiplied, per
// feature, by the pair of the two entries' weights; an odd count pairs the last with zeros.
struct DpNmBuckets {
  template <int kMask>
  [[gnu::noinline]] static void bucket(const Bf16* dyp, const int32_t* row, const Bf16* val, int64_t count,
                                       float* out) {
    constexpr int n = std::popcount(static_cast<unsigned>(kMask));
    V acc[n][NV];
    for (int s = 0; s < n; ++s)
      for (int v = 0; v < NV; ++v) acc[s][v] = Simd::zero();
    auto entries = [&](int64_t e, bool two) {
      const Bf16* d0 = dyp + static_cast<int64_t>(row[e]) * kTokenTile;
      const Bf16* d1 = two ? dyp + static_cast<int64_t>(row[e + 1]) * kTokenTile : nullptr;
      for (int s = 0; s < n; ++s)
        pair_lines(acc[s], d0, d1, pair_of(val[e * n + s], two ? val[(e + 1) * n + s] : Bf16{}));
    };
    int64_t e = 0;
    for (; e + 1 < count; e += 2) entries(e, true);
    if (e < count) entries(e, false);
    int s = 0;
    for (int f = 0; f < 4; ++f) {
      if (!((kMask >> f) & 1)) continue;
      for (int v = 0; v < NV; ++v) {
        float* o = out + f * kTokenTile + v * W;
        Simd::store(o, Simd::add(Simd::load(o), acc[s][v]));
      }
      ++s;
    }
  }
};

// The 16 x 16 block weight pass (see block_sddmm in simd/block.h): lanes are the block's rows.
// dyt holds, per tile, dY's 16 rows transposed by dword, so vector q holds every row's token pair
// q; each column's pair q is broadcast from its X line, and one instruction adds two tokens'
// products to all 16 rows of that column.
struct DpBlockGrads {
  static constexpr int kPairs = kTokenTile / 2;  // token pairs (dwords) per tile line

  template <int B>
  static void transpose_dy(const PackedTokensBf16& dy, int64_t row0, int64_t t0, int64_t t1, float* dyt) {
    static_assert(B == W);
    for (int64_t tile = t0; tile < t1; ++tile) {
      const Bf16* src = dy.tile(tile) + row0 * kTokenTile;
      float* dst = dyt + (tile - t0) * kPairs * W;
      for (int h = 0; h < 2; ++h) {
        V v[W];
        for (int i = 0; i < W; ++i) v[i] = _mm512_castsi512_ps(line_half(src + i * kTokenTile, h));
        Simd::transpose(v);
        for (int q = 0; q < W; ++q) Simd::store(dst + (h * W + q) * W, v[q]);
      }
    }
  }

  template <int B>
  static void blocks(const BlockSparseViewT<Bf16>& w, const PackedTokensBf16& x, int32_t k, int32_t end,
                     const float* dyt, int64_t t0, int64_t t1, float* dvalues, bool overwrite) {
    static_assert(B == W);
    for (; k < end; ++k) {
      V acc[W];
      for (int j = 0; j < W; ++j) acc[j] = Simd::zero();
      for (int64_t tile = t0; tile < t1; ++tile) {
        const Bf16* xs = x.tile(tile) + static_cast<int64_t>(w.col[k]) * kTokenTile;
        const float* d = dyt + (tile - t0) * kPairs * W;
        for (int q = 0; q < kPairs; ++q) {
          const Vi dv = _mm512_castps_si512(Simd::load(d + q * W));
#pragma GCC unroll 16
          for (int j = 0; j < W; ++j) acc[j] = dp(acc[j], dv, pair_at(xs + j * kTokenTile + 2 * q));
        }
      }
      Simd::transpose(acc);  // acc[i] lane j: dW[i][j]
      for (int i = 0; i < W; ++i)
        add_block_vector(dvalues + static_cast<int64_t>(k) * B * B + i * B, acc[i], overwrite);
    }
  }
};

}  // namespace sparsetrain::avx512_bf16_detail

// The entry points (spmm.h); the lists (spmm_list.cpp) put them before the AVX-512 bf16 entries.
namespace sparsetrain::avx512_bf16 {
namespace simd = avx512_bf16_detail;

void spmm_fwd_csr_bf16(const BlockSparseViewT<Bf16>& w, const PackedTokensBf16& x, const float* bias, MatrixView y,
                       Range tiles, Range block_rows) {
  simd::csr_fwd<simd::DpProducts>(w, x, bias, y, tiles, block_rows);
  simd::Simd::stream_fence();
}
template <int B>
void block_fwd(const BlockSparseViewT<Bf16>& w, const PackedTokensBf16& x, const float* bias, MatrixView y, Range tiles,
               Range block_rows) {
  simd::block_fwd<B, simd::DpBlockRows>(w, x, bias, y, tiles, block_rows);
  simd::Simd::stream_fence();
}
void spmm_fwd_bcsr4_bf16(const BlockSparseViewT<Bf16>& w, const PackedTokensBf16& x, const float* bias, MatrixView y,
                         Range tiles, Range block_rows) {
  block_fwd<4>(w, x, bias, y, tiles, block_rows);
}
void spmm_fwd_bcsr8_bf16(const BlockSparseViewT<Bf16>& w, const PackedTokensBf16& x, const float* bias, MatrixView y,
                         Range tiles, Range block_rows) {
  block_fwd<8>(w, x, bias, y, tiles, block_rows);
}
void spmm_fwd_bcsr16_bf16(const BlockSparseViewT<Bf16>& w, const PackedTokensBf16& x, const float* bias, MatrixView y,
                          Range tiles, Range block_rows) {
  block_fwd<16>(w, x, bias, y, tiles, block_rows);
}
void csr_backward_bf16(const BlockSparseViewT<Bf16>& wt, const PackedTokensBf16& dy, const PackedTokensBf16& x,
                       MatrixView dx, float* dwt, Range rows) {
  simd::csr_backward<simd::DpGroups>(wt, dy, x, dx, dwt, rows);
  simd::Simd::stream_fence();
}
void sddmm_csr_bf16(const BlockSparseViewT<Bf16>& w, const PackedTokensBf16& dy, const PackedTokensBf16& x,
                    float* dvalues, bool accumulate, Range block_rows) {
  simd::csr_sddmm<simd::DpProducts>(w, dy, x, dvalues, accumulate, block_rows);
}
void sddmm_bcsr16_bf16(const BlockSparseViewT<Bf16>& w, const PackedTokensBf16& dy, const PackedTokensBf16& x,
                       float* dvalues, bool accumulate, Range block_rows) {
  simd::block_sddmm<16, simd::DpBlockGrads>(w, dy, x, dvalues, accumulate, block_rows);
}
void nm_fwd_n2_bf16(const NmViewT<Bf16>& w, const PackedTokensBf16& x, const float* bias, MatrixView y, Range tiles,
                    Range rows) {
  simd::nm_fwd<2, simd::DpNmRows>(w, x, bias, y, tiles, rows);
  simd::Simd::stream_fence();
}
void nm_fwd_any_bf16(const NmViewT<Bf16>& w, const PackedTokensBf16& x, const float* bias, MatrixView y, Range tiles,
                     Range rows) {
  simd::nm_fwd<0, simd::DpNmRows>(w, x, bias, y, tiles, rows);
  simd::Simd::stream_fence();
}
void nm_bwd_data_buckets_bf16(const NmTransposedViewT<Bf16>& wt, const PackedTokensBf16& dy, MatrixView dx, Range tiles,
                              Range groups) {
  simd::nm_bwd_data<true, simd::DpNmBuckets>(wt, dy, dx, tiles, groups);
  simd::Simd::stream_fence();
}
void nm_sddmm_bf16(const NmViewT<Bf16>& w, const PackedTokensBf16& dy, const PackedTokensBf16& x, float* dvalues,
                   bool accumulate, Range rows) {
  simd::nm_sddmm<simd::DpProducts>(w, dy, x, dvalues, accumulate, rows);
}

}  // namespace sparsetrain::avx512_bf16
