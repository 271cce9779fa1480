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
#include <cstdint>

#include "core/aligned_buffer.h"
#include "core/tensor.h"

namespace sparsetrain {

inline constexpr int kTokenTile = 64;
inline constexpr int kFeaturePad = 16;

struct PackedTokens {
  int64_t tokens = 0;
  int64_t features = 0;
  int64_t features_padded = 0;
  int64_t tiles = 0;
  AlignedBuffer<float> data;

  const float* tile(int64_t i) const { return data.data() + i * features_padded * kTokenTile; }
  float* tile(int64_t i) { return data.data() + i * features_padded * kTokenTile; }
  // Sizes the buffer for src's shape (within capacity no allocation happens).
  void shape_for(int64_t t, int64_t f);
};

// Packs token-major src [T x F] (row stride src.ld). Parallel over tiles.
void pack_tokens(ConstMatrixView src, PackedTokens& dst);

}  // namespace sparsetrain
