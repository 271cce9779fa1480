#pragma once
// PackedTokens: token-major activations [T x F] repacked feature-major in tiles of
// kTokenTile tokens, the layout every sparse kernel reads:
//
//   data[(tile * features_padded + f) * kTokenTile + t] = src[tile * kTokenTile + t][f]
//
// zero for t >= T and f >= F. One tile of one feature is 64 contiguous floats, so a kernel
// vectorises across tokens, holds outputs in registers across a row's nonzeros, and gathers
// whole cache lines. Tiles keep the gathered panel (F x 64 floats) in L2 and avoid the 4 KB
// stride set conflicts of the raw layout. Padding F to a multiple of 16 lets block kernels read
// whole edge blocks.
//
// PackedTokensBf16 holds the same tiles in bfloat16 (mixed precision), with the tokens of each
// group of 32 in the order of the AVX-512 pack instruction (vpackusdw) that makes them:
//
//   data[(tile * features_padded + f) * kTokenTile + bf16_slot(t)]
//
// so a vector kernel widens a line to float32, or interleaves two lines into the pairs that
// vdpbf16ps multiplies, with in-lane unpacks that give the tokens back in order (bf16_slot).
// Products that sum over tokens read both operands in this one order and need not undo it.
#include <cstdint>
#include <functional>
#include <type_traits>

#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/core/bf16.h"
#include "sparsetrain/core/tensor.h"

namespace sparsetrain {

inline constexpr int kTokenTile = 64;
inline constexpr int kFeaturePad = 16;

// Position of token t (0 <= t < kTokenTile) in a bf16 tile line: in each group of 32, lane q of
// four 128-bit lanes holds tokens 4q .. 4q + 3, then 16 + 4q .. 16 + 4q + 3.
constexpr int bf16_slot(int t) { return (t & ~31) + ((t & 15) >> 2) * 8 + ((t >> 4) & 1) * 4 + (t & 3); }

// Position of token t in a tile line of E.
template <typename E>
constexpr int slot_of(int t) {
  return std::is_same_v<E, Bf16> ? bf16_slot(t) : t;
}

template <typename E>
struct PackedTokensT {
  int64_t tokens = 0;
  int64_t features = 0;
  int64_t features_padded = 0;
  int64_t tiles = 0;
  AlignedBuffer<E> data;

  const E* tile(int64_t i) const { return data.data() + i * features_padded * kTokenTile; }
  E* tile(int64_t i) { return data.data() + i * features_padded * kTokenTile; }
  // Sizes the buffer for src's shape (within capacity no allocation happens).
  void shape_for(int64_t t, int64_t f) {
    tokens = t;
    features = f;
    features_padded = (f + kFeaturePad - 1) / kFeaturePad * kFeaturePad;
    tiles = (t + kTokenTile - 1) / kTokenTile;
    data.resize(static_cast<std::size_t>(tiles * features_padded * kTokenTile));
  }
  // The value of feature f, token t of tile `tile`, as a float.
  float at(int64_t tile_index, int64_t f, int t) const {
    return to_float(tile(tile_index)[f * kTokenTile + slot_of<E>(t)]);
  }
};
using PackedTokens = PackedTokensT<float>;
using PackedTokensBf16 = PackedTokensT<Bf16>;

// Packs token-major src [T x F] (row stride src.ld). Parallel over tiles. With tile_sums
// (dst.tiles x F floats), tile_sums[tile * F + f] becomes the sum of feature f over the tile's
// tokens, in token order: a bias gradient without a second pass over the data.
// Into bf16, each value rounded to nearest even; the sums are those of the float32 values.
void pack_tokens(ConstMatrixView src, PackedTokens& dst, float* tile_sums = nullptr);
void pack_tokens(ConstMatrixView src, PackedTokensBf16& dst, float* tile_sums = nullptr);

// Where the rows to pack come from: returns token rows [t0, t0 + block.rows) of the [T x F]
// matrix, either as a view of memory that holds them or after writing them into `block`.
using TokenRows = std::function<ConstMatrixView(int64_t t0, MatrixView block)>;
// The rows of a matrix that holds them all.
inline TokenRows rows_of(ConstMatrixView m) {
  return [m](int64_t t0, MatrixView block) { return m.row_range(t0, block.rows); };
}
inline constexpr int kPackBlock = 16;  // tokens per call: the block of a 2048-feature matrix is 128 KB

// pack_tokens from rows made on the fly: an element-wise pass fused into the packing (an
// activation's backward, say) writes each block into a per-thread scratch that stays in L2
// instead of a whole token-major matrix that goes to memory and is read back.
void pack_tokens_from(int64_t tokens, int64_t features, const TokenRows& rows, PackedTokens& dst,
                      float* tile_sums = nullptr);
void pack_tokens_from(int64_t tokens, int64_t features, const TokenRows& rows, PackedTokensBf16& dst,
                      float* tile_sums = nullptr);

}  // namespace sparsetrain
