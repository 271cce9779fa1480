// Block b x b (4, 8, 16) forward and backward-weights.
// Part of the ISA-generic kernel bodies: included by kernels/spmm_simd.h inside the ISA's
// namespace, after `struct Simd` is defined. Nothing here is ISA-specific.
#pragma once

#include <bit>
#include <cstring>
#include <type_traits>
#include <utility>

namespace sparsetrain::SPARSETRAIN_SIMD_NS {

// Block b x b forward for one block-row: R rows x NVS vectors of accumulators per pass;
// between() runs after every pass.
// bf16 weights are widened once per R rows into a float32 copy that the NV / NVS passes over the
// tokens then broadcast from memory: widening each scalar before its broadcast took four
// instructions where float32 takes one, and made the bf16 kernel 0.70x the float32 one on AVX2
// (docs/benchmarks.md). Widening is exact, so the products and their order are unchanged.
template <int B, typename E, typename Between>
inline void block_row_fwd(const BlockSparseViewT<E>& w, const E* xp, int64_t br, float* stage, Between&& between) {
  constexpr int kAcc = W == 16 ? 16 : 8;
  constexpr int R = std::min(B, W == 16 ? 8 : 4);
  constexpr int NVS = std::min(NV, kAcc / R);
  const int32_t begin = w.row_ptr[br], end = w.row_ptr[br + 1];
  thread_local AlignedBuffer<float> wide;  // bf16 only: [block][R][B], rows i0 .. i0 + R - 1
  for (int i0 = 0; i0 < B; i0 += R) {
    // Block k's rows i0 .. i0 + R - 1 (stride B) start at wrows + (k - begin) * wstride. An empty
    // block-row leaves wrows null: a matrix without blocks may have null values.
    constexpr int64_t wstride = std::is_same_v<E, float> ? B * B : R * B;
    const float* wrows = nullptr;
    if constexpr (std::is_same_v<E, float>) {
      if (begin < end) wrows = w.values + (int64_t{begin} * B + i0) * B;
    } else {
      wide.resize(static_cast<std::size_t>(end - begin) * R * B);
      for (int32_t k = begin; k < end; ++k)
        for (int e = 0; e < R * B; ++e)
          wide[static_cast<std::size_t>(k - begin) * R * B + e] = to_float(w.values[int64_t{k} * B * B + i0 * B + e]);
      wrows = wide.data();
    }
    for (int v0 = 0; v0 < NV; v0 += NVS) {
      V acc[R][NVS];
      for (int i = 0; i < R; ++i)
        for (int s = 0; s < NVS; ++s) acc[i][s] = Simd::zero();
      for (int32_t k = begin; k < end; ++k) {
        const E* xb = xp + static_cast<int64_t>(w.col[k]) * kTokenTile;
        const float* wb = wrows + (k - begin) * wstride;
        for (int j = 0; j < B; ++j) {
          V xv[NVS];
          for (int s = 0; s < NVS; ++s) xv[s] = load_tokens(xb + j * kTokenTile, v0 + s);
          for (int i = 0; i < R; ++i) {
            V wv = Simd::bcast(wb[i * B + j]);
            for (int s = 0; s < NVS; ++s) acc[i][s] = Simd::fma(wv, xv[s], acc[i][s]);
          }
        }
      }
      for (int i = 0; i < R; ++i)
        for (int s = 0; s < NVS; ++s) Simd::store(stage + (i0 + i) * kTokenTile + (v0 + s) * W, acc[i][s]);
      between();
    }
  }
}

// Finished rows waiting in a stage buffer, written to the token-major output W tokens at a time
// while the next rows are computed. Every token of a group lands on its own output line (and rows
// a multiple of 4 KB apart all share one L1 set), so storing a whole group at once stalls on a
// burst of line fills; spread over the next group's passes the fills overlap the arithmetic.
struct PendingRows {
  const float* stage = nullptr;  // [rows][kTokenTile]
  int rows = 0;
  int64_t r0 = 0;
  int64_t t0 = 0;
  int valid = 0;
  int next = 0;  // first token not yet written
};

// Writes the next W tokens of p: store_transposed on the slice of the stage that holds them.
inline void store_pending_slice(PendingRows& p, const float* bias, MatrixView y) {
  if (p.next >= p.valid) return;
  const int tb = p.next;
  p.next += W;
  store_transposed(p.stage + tb, p.rows, p.r0, std::min(W, p.valid - tb), bias, y, p.t0 + tb);
}

// The block forward's products as a policy (see FmaProducts): FmaBlockRows runs block_row_fwd.
struct FmaBlockRows {
  template <int B, typename E, typename Between>
  static void row(const BlockSparseViewT<E>& w, const E* xp, int64_t br, float* stage, Between&& between) {
    block_row_fwd<B>(w, xp, br, stage, between);
  }
};

template <int B, typename Rows = FmaBlockRows, typename E>
void block_fwd(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y, Range tiles,
               Range block_rows) {
  // Small blocks compute several block-rows per group so the transposed store sees whole groups
  // of W rows; two stage buffers let one group drain while the next is computed.
  constexpr int kGroup = std::max(1, kStageRows / B);
  alignas(64) float stage[2][kGroup * B * kTokenTile];
  PendingRows pending;
  auto drain = [&] { store_pending_slice(pending, bias, y); };
  int cur = 0;
  for (int64_t tile = tiles.begin; tile < tiles.end; ++tile) {
    const E* xp = x.tile(tile);
    const int valid = tile_tokens(x, tile);
    for (int64_t br0 = block_rows.begin; br0 < block_rows.end; br0 += kGroup) {
      const int n = static_cast<int>(std::min<int64_t>(kGroup, block_rows.end - br0));
      for (int g = 0; g < n; ++g) Rows::template row<B>(w, xp, br0 + g, stage[cur] + g * B * kTokenTile, drain);
      while (pending.next < pending.valid) drain();
      const int rows = static_cast<int>(std::min<int64_t>(n * B, w.rows - br0 * B));
      pending = PendingRows{stage[cur], rows, br0 * B, tile * kTokenTile, valid, 0};
      cur ^= 1;
    }
  }
  while (pending.next < pending.valid) drain();
}

// Block SDDMM as outer products over tokens: dW_block = sum_t dY[t, rows]^T X[t, cols], with
// the block's columns x (rows, tokens) held in registers for the whole chunk of tiles, so no
// lane reduction per dot product. dY's block-row is transposed once per chunk into a token-major
// copy shared by every block of the row; each FMA multiplies one such vector by a broadcast X
// value. Blocks narrower than a vector pack P = W / b consecutive tokens per vector (lane
// i * P + p) and broadcast P consecutive X tokens, summed over p when the block is written.
template <int B>
struct SddmmShape {
  static constexpr int RB = std::min(B, W);                        // block rows per vector
  static constexpr int P = W / RB;                                 // tokens per vector
  static constexpr int HB = B / RB;                                // vectors per token group (row groups)
  static constexpr int JB = std::min(B, W);                        // block columns per pass
  static constexpr int NB = std::max(1, (W == 16 ? 16 : 8) / JB);  // blocks sharing one pass
  static constexpr int G = kTokenTile / P;                         // token groups per tile
};

// Lane e of the first (kHi = false) or second result of exchanging the off-diagonal H x H
// sub-blocks of a 2H x 2H block of P-lane units held in vectors a (upper) and b (lower).
constexpr int swap_lane(int p, int h, bool hi, int e) {
  const int unit = e / p;
  if ((unit & h) == 0) return hi ? e + h * p : e;
  return hi ? W + e : W + e - h * p;
}

template <int P, int H, bool kHi, std::size_t... Is>
inline V swap_units(V a, V b, std::index_sequence<Is...>) {
  return __builtin_shufflevector(a, b, swap_lane(P, H, kHi, static_cast<int>(Is))...);
}

// Transposes the (W / P) x (W / P) matrix of P-lane units held in v[0 .. W / P).
template <int P, int H = 1>
inline void transpose_units(V* v) {
  constexpr int n = W / P;
  if constexpr (H < n) {
    for (int r = 0; r < n; ++r)
      if ((r & H) == 0) {
        const V a = v[r], b = v[r + H];
        v[r] = swap_units<P, H, false>(a, b, std::make_index_sequence<W>{});
        v[r + H] = swap_units<P, H, true>(a, b, std::make_index_sequence<W>{});
      }
    transpose_units<P, 2 * H>(v);
  }
}

template <bool kOdd, std::size_t... Is>
inline V pick_lanes(V a, V b, std::index_sequence<Is...>) {
  return __builtin_shufflevector(a, b, static_cast<int>(2 * Is + kOdd)...);
}

// Sums adjacent lanes of a and b: the W / 2 pair sums of a, then those of b.
inline V pair_sums(V a, V b) {
  return Simd::add(pick_lanes<false>(a, b, std::make_index_sequence<W>{}),
                   pick_lanes<true>(a, b, std::make_index_sequence<W>{}));
}

// P (1 or 2) consecutive X values of one feature, tokens t .. t + P - 1 of a tile line (t a
// multiple of P), broadcast to every P-lane unit; a pair travels as one double so it stays a
// single broadcast load. A bf16 pair is adjacent in its line too (bf16_slot keeps runs of 4).
template <int P>
inline V bcast_units(const float* line, int t) {
  static_assert(P == 1 || P == 2);
  if constexpr (P == 1) {
    return Simd::bcast(line[t]);
  } else {
    typedef double Pairs __attribute__((vector_size(sizeof(V))));
    double pair;
    std::memcpy(&pair, line + t, sizeof(pair));
    return reinterpret_cast<V>(pair - Pairs{});
  }
}
template <int P>
inline V bcast_units(const Bf16* line, int t) {
  static_assert(P == 2, "single bf16 tokens go in pairs through bcast_pair");
  typedef double Pairs __attribute__((vector_size(sizeof(V))));
  uint32_t bits;
  std::memcpy(&bits, line + bf16_slot(t), sizeof(bits));
  const uint64_t widened = (static_cast<uint64_t>(bits & 0xffff0000u) << 32) | (bits << 16);
  return reinterpret_cast<V>(std::bit_cast<double>(widened) - Pairs{});
}

inline void add_block_vector(float* dst, V v, bool overwrite) {
  Simd::storeu(dst, overwrite ? v : Simd::add(Simd::loadu(dst), v));
}

// dyt[(g * HB + h) * W + i * P + p] = dY[row0 + h * RB + i][(g * P + p) in tiles t0 ..].
template <int B, typename E>
inline void transpose_dy_rows(const PackedTokensT<E>& dy, int64_t row0, int64_t t0, int64_t t1, float* dyt) {
  using S = SddmmShape<B>;
  for (int64_t tile = t0; tile < t1; ++tile) {
    const E* src = dy.tile(tile) + row0 * kTokenTile;
    float* dst = dyt + (tile - t0) * S::G * S::HB * W;
    for (int tq = 0; tq < kTokenTile; tq += W)
      for (int h = 0; h < S::HB; ++h) {
        V v[S::RB];
        for (int i = 0; i < S::RB; ++i) v[i] = load_tokens(src + (h * S::RB + i) * kTokenTile, tq / W);
        transpose_units<S::P>(v);
        for (int c = 0; c < S::RB; ++c) Simd::store(dst + ((tq / S::P + c) * S::HB + h) * W, v[c]);
      }
  }
}

// Row group h, column group jb of NBk blocks (first columns cols[n], values dst[n]) over the chunk.
template <int B, int NBk, typename E>
inline void block_sddmm_pass(const PackedTokensT<E>& x, const int32_t* cols, int h, int jb, const float* dyt,
                             int64_t t0, int64_t t1, float* const* dst, bool overwrite) {
  using S = SddmmShape<B>;
  V acc[NBk][S::JB];
  for (int n = 0; n < NBk; ++n)
    for (int j = 0; j < S::JB; ++j) acc[n][j] = Simd::zero();
  for (int64_t tile = t0; tile < t1; ++tile) {
    const E* xs[NBk];
    for (int n = 0; n < NBk; ++n) xs[n] = x.tile(tile) + static_cast<int64_t>(cols[n] + jb * S::JB) * kTokenTile;
    const float* d = dyt + (tile - t0) * S::G * S::HB * W + h * W;
    if constexpr (std::is_same_v<E, Bf16> && S::P == 1) {
      for (int g = 0; g < S::G; g += 2) {
        const V dv0 = Simd::load(d + g * S::HB * W), dv1 = Simd::load(d + (g + 1) * S::HB * W);
#pragma GCC unroll 4
        for (int n = 0; n < NBk; ++n)
#pragma GCC unroll 16
          for (int j = 0; j < S::JB; ++j) {
            const BcastPair x2 = bcast_pair(xs[n] + j * kTokenTile + bf16_slot(g));  // g even: adjacent slots
            acc[n][j] = Simd::fma(x2.second, dv1, Simd::fma(x2.first, dv0, acc[n][j]));
          }
      }
    } else {
      for (int g = 0; g < S::G; ++g) {
        const V dv = Simd::load(d + g * S::HB * W);
#pragma GCC unroll 4
        for (int n = 0; n < NBk; ++n)
#pragma GCC unroll 16
          for (int j = 0; j < S::JB; ++j)
            acc[n][j] = Simd::fma(bcast_units<S::P>(xs[n] + j * kTokenTile, g * S::P), dv, acc[n][j]);
      }
    }
  }
  for (int n = 0; n < NBk; ++n) {
    V* a = acc[n];
    transpose_units<S::P>(a);  // a[i]: row i of the group, lanes (column, token)
    if constexpr (S::P == 1) {
      for (int i = 0; i < S::RB; ++i) add_block_vector(dst[n] + (h * S::RB + i) * B + jb * S::JB, a[i], overwrite);
    } else {
      for (int q = S::RB; q > S::RB / S::P; q /= 2)
        for (int r = 0; r < q / 2; ++r) a[r] = pair_sums(a[2 * r], a[2 * r + 1]);
      for (int r = 0; r < S::RB / S::P; ++r) add_block_vector(dst[n] + r * W, a[r], overwrite);
    }
  }
}

// Blocks [k, end) of one block-row, NBk at a time, then the rest in smaller groups.
template <int B, int NBk, typename E>
inline void block_sddmm_blocks(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, int32_t k, int32_t end,
                               const float* dyt, int64_t t0, int64_t t1, float* dvalues, bool overwrite) {
  using S = SddmmShape<B>;
  for (; k + NBk <= end; k += NBk) {
    float* dst[NBk];
    for (int n = 0; n < NBk; ++n) dst[n] = dvalues + static_cast<int64_t>(k + n) * B * B;
    for (int h = 0; h < S::HB; ++h)
      for (int jb = 0; jb < B / S::JB; ++jb) block_sddmm_pass<B, NBk>(x, w.col + k, h, jb, dyt, t0, t1, dst, overwrite);
  }
  if constexpr (NBk > 1) block_sddmm_blocks<B, NBk / 2>(w, x, k, end, dyt, t0, t1, dvalues, overwrite);
}

// Blocks whose b x b entries fill exactly one vector (4 x 4 on AVX-512) would need a 128-bit
// broadcast, a shuffle per FMA, in the outer-product form; they take dot products over tokens
// instead (b dY and b X loads feed b^2 FMAs) and one lane reduction per block and chunk.
template <int B, typename E>
inline void block_sddmm_dots(const PackedTokensT<E>& dy, const PackedTokensT<E>& x, int64_t br, const int32_t* cols,
                             int32_t count, int64_t t0, int64_t t1, float* dst, bool overwrite) {
  static_assert(B * B == W);
  for (int32_t k = 0; k < count; ++k) {
    V acc[W];
    for (int e = 0; e < W; ++e) acc[e] = Simd::zero();
    for (int64_t tile = t0; tile < t1; ++tile) {
      const E* d = dy.tile(tile) + br * B * kTokenTile;
      const E* xc = x.tile(tile) + static_cast<int64_t>(cols[k]) * kTokenTile;
      for (int v = 0; v < NV; ++v) {
        V dv[B], xv[B];
        for (int i = 0; i < B; ++i) dv[i] = load_tokens(d + i * kTokenTile, v);
        for (int j = 0; j < B; ++j) xv[j] = load_tokens(xc + j * kTokenTile, v);
        for (int i = 0; i < B; ++i)
          for (int j = 0; j < B; ++j) acc[i * B + j] = Simd::fma(dv[i], xv[j], acc[i * B + j]);
      }
    }
    add_block_vector(dst + static_cast<int64_t>(k) * B * B, Simd::reduce_lanes(acc), overwrite);
  }
}

// Chunks of the weight pass: as many token tiles as keep the whole X panel within
// kSddmmPanelBytes, or, for wide panels, kSddmmTiles tiles by a column slice of that size. The
// slice of X stays in L2 (beside dY's rows, the transposed copy and the streamed values) while
// every block-row visits it, and each block's registers span at least kSddmmTiles tiles before
// they are reduced and written, which a whole 3072-feature panel (one tile per MB) would not allow.
inline constexpr int64_t kSddmmPanelBytes = 512 * 1024;
inline constexpr int64_t kSddmmTiles = 4;
// Transposed dY kept per thread across the slices of a chunk: every block-row's copy is made once
// per chunk and read by each slice, instead of transposed again per slice (six times over for a
// 3072-feature X). Block-rows beyond this many bytes of copies are taken in groups, each visiting
// every slice. With one slice a block-row's copy is made just before its blocks use it, from L1.
inline constexpr int64_t kSddmmTransposedBytes = int64_t{2} << 20;

// The weight pass's products as a policy (see FmaProducts): FmaBlockGrads transposes dY's
// block-row into dyt (transpose_dy_rows) and runs the outer products (block_sddmm_blocks).
struct FmaBlockGrads {
  template <int B, typename E>
  static void transpose_dy(const PackedTokensT<E>& dy, int64_t row0, int64_t t0, int64_t t1, float* dyt) {
    transpose_dy_rows<B>(dy, row0, t0, t1, dyt);
  }
  template <int B, typename E>
  static void blocks(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, int32_t k, int32_t end, const float* dyt,
                     int64_t t0, int64_t t1, float* dvalues, bool overwrite) {
    block_sddmm_blocks<B, SddmmShape<B>::NB>(w, x, k, end, dyt, t0, t1, dvalues, overwrite);
  }
};

template <int B, typename Grads = FmaBlockGrads, typename E>
void block_sddmm(const BlockSparseViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues,
                 bool accumulate, Range block_rows) {
  constexpr int64_t kFeatureBytes = kTokenTile * sizeof(E);
  const int64_t panel = std::max<int64_t>(x.features_padded, 1) * kFeatureBytes;  // X bytes per tile
  int64_t chunk = std::max<int64_t>(1, kSddmmPanelBytes / panel);
  int64_t slice = x.features_padded;
  if (chunk < kSddmmTiles) {
    chunk = std::min(kSddmmTiles, x.tiles);
    slice = std::max<int64_t>(kFeaturePad, kSddmmPanelBytes / (chunk * kFeatureBytes) / kFeaturePad * kFeaturePad);
  }
  chunk = std::min(chunk, x.tiles);
  // Floats of one block-row's transposed dY over a chunk, and block-rows per group.
  const int64_t copy = chunk * kTokenTile * B;
  const int64_t group =
      slice >= x.features ? 1
                          : std::max<int64_t>(1, kSddmmTransposedBytes / (copy * static_cast<int64_t>(sizeof(float))));
  thread_local AlignedBuffer<float> dyt;
  thread_local AlignedBuffer<int32_t> next;  // per block-row: first block not yet visited in this chunk
  if constexpr (B * B != W)
    dyt.resize(static_cast<std::size_t>(std::min(group, block_rows.end - block_rows.begin) * copy));
  next.resize(static_cast<std::size_t>(block_rows.end - block_rows.begin));
  for (int64_t t0 = 0; t0 < x.tiles; t0 += chunk) {
    const int64_t t1 = std::min(x.tiles, t0 + chunk);
    const bool overwrite = !accumulate && t0 == 0;
    for (int64_t g0 = block_rows.begin; g0 < block_rows.end; g0 += group) {
      const int64_t g1 = std::min(block_rows.end, g0 + group);
      for (int64_t br = g0; br < g1; ++br) {
        next[br - block_rows.begin] = w.row_ptr[br];
        if constexpr (B * B != W)
          if (w.row_ptr[br + 1] > w.row_ptr[br])
            Grads::template transpose_dy<B>(dy, br * B, t0, t1, dyt.data() + (br - g0) * copy);
      }
      for (int64_t c1 = slice; c1 - slice < x.features; c1 += slice)
        for (int64_t br = g0; br < g1; ++br) {
          int32_t& k0 = next[br - block_rows.begin];
          int32_t k1 = k0;
          while (k1 < w.row_ptr[br + 1] && w.col[k1] < c1) ++k1;
          if (k1 == k0) continue;
          if constexpr (B * B == W) {
            block_sddmm_dots<B>(dy, x, br, w.col + k0, k1 - k0, t0, t1, dvalues + static_cast<int64_t>(k0) * B * B,
                                overwrite);
          } else {
            Grads::template blocks<B>(w, x, k0, k1, dyt.data() + (br - g0) * copy, t0, t1, dvalues, overwrite);
          }
          k0 = k1;
        }
    }
  }
}

}  // namespace sparsetrain::SPARSETRAIN_SIMD_NS
