// Compression is lossless: dense -> format -> dense is bit-exact at kept positions and zero
// elsewhere, mask() gives back the input mask, and nnz()/sparsity() count kept weights only
// (never the padding of edge blocks), from sparsity 0 to 1.
#include <gtest/gtest.h>

#include "format_test_util.h"
#include "sparsetrain/formats/block_sparse.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/formats/sparse_weight.h"

namespace sparsetrain {
namespace {

using namespace sparsetrain::testing;

std::vector<double> levels(const FormatSpec& f) {
  if (f.kind == FormatKind::NM) return {f.implied_sparsity()};
  return {0.0, 0.3, 0.9, 1.0};
}

int64_t count_kept(const Mask& mask) {
  int64_t kept = 0;
  for (int64_t r = 0; r < mask.rows(); ++r)
    for (int64_t c = 0; c < mask.cols(); ++c) kept += mask.at(r, c);
  return kept;
}

TEST(FormatRoundTrip, DenseIsBitExactAndMaskAndCountsAreTrue) {
  for (const FormatShape& s : kFormatShapes) {
    const FormatSpec f = FormatSpec::parse(s.format, "test");
    for (double level : levels(f)) {
      SCOPED_TRACE(describe(s) + " sparsity " + std::to_string(level));
      const Matrix dense = random_dense(s.rows, s.cols, 1);
      const Mask mask = random_mask(f, s.rows, s.cols, level, Philox(3, s.format));
      auto w = SparseWeight::from_dense(f, dense, mask);
      ASSERT_NO_THROW(w->validate());
      EXPECT_EQ(w->format(), f);
      EXPECT_EQ(w->rows(), s.rows);
      EXPECT_EQ(w->cols(), s.cols);
      const int64_t kept = count_kept(mask);
      EXPECT_EQ(w->nnz(), kept);
      EXPECT_DOUBLE_EQ(w->sparsity(), 1.0 - static_cast<double>(kept) / static_cast<double>(s.rows * s.cols));
      EXPECT_TRUE(w->mask() == mask);
      const Matrix back = w->to_dense();
      for (int64_t r = 0; r < s.rows; ++r)
        for (int64_t c = 0; c < s.cols; ++c)
          ASSERT_TRUE(same_bits(back.at(r, c), mask.at(r, c) ? dense.at(r, c) : 0.0f)) << "at " << r << "," << c;
    }
  }
}

TEST(FormatRoundTrip, SparsityZeroKeepsEverythingAndOneKeepsNothing) {
  for (const char* name : {"csr", "bcsr4", "bcsr8", "bcsr16"}) {
    SCOPED_TRACE(name);
    const FormatSpec f = FormatSpec::parse(name, "test");
    const Matrix dense = random_dense(37, 53, 2);
    auto full = SparseWeight::from_dense(f, dense, Mask(37, 53, true));
    EXPECT_EQ(full->nnz(), 37 * 53);
    EXPECT_EQ(full->sparsity(), 0.0);
    auto empty = SparseWeight::from_dense(f, dense, Mask(37, 53, false));
    EXPECT_EQ(empty->nnz(), 0);
    EXPECT_EQ(empty->sparsity(), 1.0);
    EXPECT_TRUE(empty->values().empty());
    EXPECT_TRUE(empty->mask() == Mask(37, 53, false));
    ASSERT_NO_THROW(empty->validate());
  }
}

TEST(FormatRoundTrip, EdgeBlocksStorePaddingButDoNotCountIt) {
  // 37 x 53 in 16 x 16 blocks: the last block-row has 5 rows, the last block-column 5 columns.
  auto w = SparseWeight::from_dense(FormatSpec::bcsr(16), random_dense(37, 53, 3), Mask(37, 53, true));
  const auto& blocks = static_cast<const BlockSparseMatrix&>(*w);
  EXPECT_EQ(blocks.view().blocks(), 3 * 4);
  EXPECT_EQ(w->values().size(), static_cast<std::size_t>(12 * 256));
  EXPECT_EQ(w->nnz(), 37 * 53);
  // The dense fill has no +0.0, so the +0.0 entries are exactly the padding.
  int64_t positive_zeros = 0;
  for (float v : w->values()) positive_zeros += same_bits(v, 0.0f);
  EXPECT_EQ(positive_zeros, 12 * 256 - 37 * 53);
}

TEST(FormatRoundTrip, CreateGivesAZeroWeightOfTheFormat) {
  auto csr = SparseWeight::create(FormatSpec::csr(), 5, 7);
  EXPECT_EQ(csr->nnz(), 0);
  EXPECT_TRUE(csr->mask() == Mask(5, 7));
  ASSERT_NO_THROW(csr->validate());
  // N:M always holds N per group: the first N, at zero.
  auto nm = SparseWeight::create(FormatSpec::nm(2, 4), 3, 8);
  EXPECT_EQ(nm->nnz(), 3 * 2 * 2);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 8; ++c) EXPECT_EQ(nm->mask().at(r, c), c % 4 < 2) << r << "," << c;
  for (float v : nm->values()) EXPECT_EQ(v, 0.0f);
  ASSERT_NO_THROW(nm->validate());
}

TEST(FormatRoundTrip, AssignReplacesStructureAndValues) {
  for (const FormatShape& s : kFormatShapes) {
    SCOPED_TRACE(describe(s));
    const FormatSpec f = FormatSpec::parse(s.format, "test");
    const double level = f.kind == FormatKind::NM ? 0.0 : 0.5;
    auto w = SparseWeight::from_dense(f, random_dense(s.rows, s.cols, 4), random_mask(f, s.rows, s.cols, level, Philox(1, "a")));
    const Matrix dense = random_dense(s.rows, s.cols, 5);
    const Mask mask = random_mask(f, s.rows, s.cols, level, Philox(1, "b"));
    w->assign(dense, mask);
    EXPECT_TRUE(w->mask() == mask);
    const Matrix back = w->to_dense();
    for (int64_t i = 0; i < dense.size(); ++i)
      ASSERT_TRUE(same_bits(back.data()[i], mask.data()[i] ? dense.data()[i] : 0.0f)) << "element " << i;
  }
}

}  // namespace
}  // namespace sparsetrain
