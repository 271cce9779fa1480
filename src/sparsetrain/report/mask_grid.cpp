#include "sparsetrain/report/mask_grid.h"

#include <algorithm>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

MaskGrid downsample_mask(std::span<const uint8_t> keep, int64_t rows, int64_t cols, int64_t max_cells) {
  if (rows < 0 || cols < 0 || max_cells < 1 || static_cast<int64_t>(keep.size()) != rows * cols)
    fail("downsample_mask: {} mask bytes for a {}x{} mask in at most {} cells a side", keep.size(), rows, cols,
         max_cells);
  MaskGrid g;
  g.rows = rows;
  g.cols = cols;
  g.block_rows = rows > max_cells ? (rows + max_cells - 1) / max_cells : 1;
  g.block_cols = cols > max_cells ? (cols + max_cells - 1) / max_cells : 1;
  g.grid_rows = (rows + g.block_rows - 1) / g.block_rows;
  g.grid_cols = (cols + g.block_cols - 1) / g.block_cols;
  std::vector<int64_t> counts(static_cast<std::size_t>(g.grid_rows * g.grid_cols), 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t* cell_row = counts.data() + (r / g.block_rows) * g.grid_cols;
    const uint8_t* row = keep.data() + r * cols;
    for (int64_t c = 0; c < cols; ++c) cell_row[c / g.block_cols] += row[c] != 0;
  }
  g.kept.resize(counts.size());
  for (int64_t gr = 0; gr < g.grid_rows; ++gr) {
    const int64_t height = std::min(g.block_rows, rows - gr * g.block_rows);
    for (int64_t gc = 0; gc < g.grid_cols; ++gc) {
      const int64_t width = std::min(g.block_cols, cols - gc * g.block_cols);
      const auto i = static_cast<std::size_t>(gr * g.grid_cols + gc);
      g.kept[i] = static_cast<double>(counts[i]) / static_cast<double>(height * width);
    }
  }
  return g;
}

}  // namespace sparsetrain
