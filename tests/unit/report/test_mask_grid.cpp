// Mask downsampling: each cell's shade is the kept fraction of exactly its block, checked against
// a count done element by element, for shapes that do and do not divide into the cell limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/report/mask_figure.h"
#include "sparsetrain/report/mask_grid.h"

namespace sparsetrain {
namespace {

std::vector<uint8_t> random_mask(int64_t rows, int64_t cols, double density, unsigned seed) {
  std::mt19937 gen(seed);
  std::bernoulli_distribution keep(density);
  std::vector<uint8_t> m(static_cast<std::size_t>(rows * cols));
  for (uint8_t& k : m) k = keep(gen) ? 1 : 0;
  return m;
}

// Kept fraction of rows [r0, r1) × columns [c0, c1), element by element.
double brute_force(const std::vector<uint8_t>& m, int64_t cols, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  int64_t kept = 0;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c) kept += m[static_cast<std::size_t>(r * cols + c)];
  return static_cast<double>(kept) / static_cast<double>((r1 - r0) * (c1 - c0));
}

void expect_matches_brute_force(int64_t rows, int64_t cols, int64_t max_cells, int64_t block_rows, int64_t block_cols) {
  SCOPED_TRACE(testing::Message() << rows << "x" << cols << " in " << max_cells);
  const std::vector<uint8_t> m = random_mask(rows, cols, 0.1, static_cast<unsigned>(rows * 31 + cols));
  const MaskGrid g = downsample_mask(m, rows, cols, max_cells);
  EXPECT_EQ(g.block_rows, block_rows);
  EXPECT_EQ(g.block_cols, block_cols);
  EXPECT_EQ(g.grid_rows, (rows + block_rows - 1) / block_rows);
  EXPECT_EQ(g.grid_cols, (cols + block_cols - 1) / block_cols);
  EXPECT_LE(g.grid_rows, max_cells);
  EXPECT_LE(g.grid_cols, max_cells);
  ASSERT_EQ(g.kept.size(), static_cast<std::size_t>(g.grid_rows * g.grid_cols));
  for (int64_t gr = 0; gr < g.grid_rows; ++gr)
    for (int64_t gc = 0; gc < g.grid_cols; ++gc) {
      const int64_t r0 = gr * block_rows, c0 = gc * block_cols;
      const double expected =
          brute_force(m, cols, r0, std::min(rows, r0 + block_rows), c0, std::min(cols, c0 + block_cols));
      ASSERT_DOUBLE_EQ(g.at(gr, gc), expected) << "cell " << gr << "," << gc;
    }
}

TEST(DownsampleMask, OddShapesMatchABruteForceCount) {
  expect_matches_brute_force(1000, 784, 256, 4, 4);   // 250 × 196 cells
  expect_matches_brute_force(3072, 768, 256, 12, 3);  // 256 × 256
  expect_matches_brute_force(1001, 257, 256, 4, 2);   // partial last blocks on both axes
  expect_matches_brute_force(37, 53, 8, 5, 7);        // 8 × 8 with partial blocks
}

TEST(DownsampleMask, WithinTheLimitEveryCellIsOneElement) {
  const int64_t rows = 96, cols = 32;
  const std::vector<uint8_t> m = random_mask(rows, cols, 0.5, 7);
  const MaskGrid g = downsample_mask(m, rows, cols);
  EXPECT_EQ(g.block_rows, 1);
  EXPECT_EQ(g.block_cols, 1);
  ASSERT_EQ(g.grid_rows, rows);
  ASSERT_EQ(g.grid_cols, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(g.at(r, c), m[static_cast<std::size_t>(r * cols + c)]);
}

TEST(DownsampleMask, AWrongByteCountIsAnError) {
  const std::vector<uint8_t> m(10, 1);
  EXPECT_THROW(downsample_mask(m, 3, 4), Error);
}

TEST(KeptShade, WhiteForNoneBlackForAll) {
  EXPECT_EQ(kept_shade(0), "#ffffff");
  EXPECT_EQ(kept_shade(1), "#000000");
  EXPECT_EQ(kept_shade(0.5), "#7f7f7f");
}

TEST(MaskFigure, DrawsOnePathPerShadeNotARectPerElement) {
  const int64_t rows = 3072, cols = 768;
  const std::vector<uint8_t> m = random_mask(rows, cols, 0.1, 3);
  const std::string svg = render_mask_figure("t", {{"a", "b", downsample_mask(m, rows, cols)}});
  EXPECT_LT(svg.size(), 2u << 20);
  std::size_t paths = 0;
  for (std::size_t at = svg.find("<path"); at != std::string::npos; at = svg.find("<path", at + 1)) ++paths;
  EXPECT_GT(paths, 1u);
  EXPECT_LE(paths, 255u);
  EXPECT_NE(svg.find("block of 12×3 weights"), std::string::npos);
}

}  // namespace
}  // namespace sparsetrain
