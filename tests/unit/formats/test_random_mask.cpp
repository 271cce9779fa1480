// random_mask: exact kept counts in the format's units, the format's shape constraints, and
// masks that depend only on the generator's key.
#include <gtest/gtest.h>

#include <cmath>

#include "format_test_util.h"
#include "sparsetrain/formats/block_sparse.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/formats/sparse_weight.h"

namespace sparsetrain {
namespace {

using namespace sparsetrain::testing;

TEST(RandomMask, ElementMasksKeepExactlyTheRoundedCount) {
  for (double level : {0.0, 0.25, 0.9, 0.999, 1.0}) {
    const Mask m = random_mask(FormatSpec::csr(), 37, 53, level, Philox(5, "fc1.weight"));
    EXPECT_EQ(m.nnz(), std::llround((1.0 - level) * 37 * 53)) << "sparsity " << level;
  }
}

TEST(RandomMask, BlockMasksKeepExactlyTheRoundedBlockCount) {
  for (int b : {4, 8, 16}) {
    const int64_t block_rows = (37 + b - 1) / b, block_cols = (53 + b - 1) / b;
    for (double level : {0.0, 0.6, 1.0}) {
      SCOPED_TRACE("bcsr" + std::to_string(b) + " sparsity " + std::to_string(level));
      const Mask m = random_mask(FormatSpec::bcsr(b), 37, 53, level, Philox(5, "w"));
      // Block-uniform by construction, or from_dense would refuse it.
      auto w = SparseWeight::from_dense(FormatSpec::bcsr(b), random_dense(37, 53, 1), m);
      EXPECT_EQ(static_cast<const BlockSparseMatrix&>(*w).view().blocks(),
                std::llround((1.0 - level) * static_cast<double>(block_rows * block_cols)));
    }
  }
}

TEST(RandomMask, NmMasksKeepExactlyNPerGroupWhateverTheSparsityArgument) {
  for (const auto& [n, m] : {std::pair{2, 4}, {1, 4}, {2, 8}}) {
    const Mask mask = random_mask(FormatSpec::nm(n, m), 9, 4 * m, 0.3, Philox(5, "nm"));
    for (int64_t r = 0; r < 9; ++r)
      for (int64_t g = 0; g < 4; ++g) {
        int kept = 0;
        for (int j = 0; j < m; ++j) kept += mask.at(r, g * m + j);
        ASSERT_EQ(kept, n) << n << ":" << m << " row " << r << " group " << g;
      }
  }
}

TEST(RandomMask, DependsOnlyOnTheKey) {
  for (const FormatShape& s : kFormatShapes) {
    SCOPED_TRACE(describe(s));
    const FormatSpec f = FormatSpec::parse(s.format, "test");
    const double level = 0.5;
    const Mask a = random_mask(f, s.rows, s.cols, level, Philox(5, "h.1.mlp.c_fc.weight"));
    EXPECT_TRUE(a == random_mask(f, s.rows, s.cols, level, Philox(5, "h.1.mlp.c_fc.weight")));
    EXPECT_FALSE(a == random_mask(f, s.rows, s.cols, level, Philox(5, "h.2.mlp.c_fc.weight")));
    EXPECT_FALSE(a == random_mask(f, s.rows, s.cols, level, Philox(6, "h.1.mlp.c_fc.weight")));
    EXPECT_FALSE(a == random_mask(f, s.rows, s.cols, level, Philox(5, "h.1.mlp.c_fc.weight", 1)));
  }
}

TEST(RandomMask, RejectsSparsityOutsideTheUnitIntervalAndMisfitShapes) {
  expect_error([] { random_mask(FormatSpec::csr(), 3, 3, 1.5, Philox(1, "x")); }, {"sparsity 1.5", "[0, 1]"});
  expect_error([] { random_mask(FormatSpec::csr(), 3, 3, -0.1, Philox(1, "x")); }, {"-0.1"});
  expect_error([] { random_mask(FormatSpec::csr(), 3, 3, std::nan(""), Philox(1, "x")); }, {"nan"});
  expect_error([] { random_mask(FormatSpec::nm(2, 4), 3, 10, 0.5, Philox(1, "x")); },
               {"2:4", "cols 10", "multiple of 4"});
}

}  // namespace
}  // namespace sparsetrain
