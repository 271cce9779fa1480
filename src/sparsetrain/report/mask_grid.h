#pragma once
// A mask shrunk to a grid an image can show: each cell is a block of the mask and holds the
// fraction of the block that is kept. A figure of a 3072×768 mask must not hold millions of
// elements, and a shade per block still shows where the kept weights are.
#include <cstdint>
#include <span>
#include <vector>

namespace sparsetrain {

struct MaskGrid {
  int64_t rows = 0, cols = 0;              // of the mask
  int64_t block_rows = 1, block_cols = 1;  // mask elements per cell, along each axis
  int64_t grid_rows = 0, grid_cols = 0;
  std::vector<double> kept;  // grid_rows × grid_cols kept fractions, row-major

  double at(int64_t r, int64_t c) const { return kept[static_cast<std::size_t>(r * grid_cols + c)]; }
};

// Blocks of ceil(rows / max_cells) × ceil(cols / max_cells) elements, so that neither side of the
// grid exceeds max_cells and a mask within the limit maps 1:1. The last block of a row or column
// of blocks may be smaller; its fraction is of the elements it has. `keep` is row-major
// rows × cols, 0 = pruned.
MaskGrid downsample_mask(std::span<const uint8_t> keep, int64_t rows, int64_t cols, int64_t max_cells = 256);

}  // namespace sparsetrain
