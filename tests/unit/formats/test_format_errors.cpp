// Every malformed input is an Error whose message names the problem, and a rejected mask leaves
// the weight as it was.
#include <gtest/gtest.h>

#include "format_test_util.h"
#include "sparsetrain/formats/block_sparse.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/formats/sparse_weight.h"

namespace sparsetrain {
namespace {

using namespace sparsetrain::testing;

TEST(FormatErrors, BlockFormatsRejectASplitBlockNamingIt) {
  Mask split(20, 20);
  split.set(9, 3, true);
  expect_error([&] { SparseWeight::from_dense(FormatSpec::bcsr(8), random_dense(20, 20, 1), split); },
               {"bcsr8", "not block-uniform", "block (1, 0)", "rows 8..15, cols 0..7", "keeps 1 of 64"});
  // An edge block is judged on its in-range weights only: 4 x 4 of them here.
  Mask edge = random_mask(FormatSpec::bcsr(8), 20, 20, 0.0, Philox(1, "m"));
  edge.set(19, 19, false);
  expect_error([&] { SparseWeight::from_dense(FormatSpec::bcsr(8), random_dense(20, 20, 1), edge); },
               {"block (2, 2)", "rows 16..19, cols 16..19", "keeps 15 of 16"});
  Mask wide(37, 53, true);
  wide.set(36, 0, false);
  auto w = SparseWeight::create(FormatSpec::bcsr(16), 37, 53);
  expect_error([&] { w->update_mask(wide); }, {"bcsr16", "block (2, 0)", "keeps 79 of 80"});
}

TEST(FormatErrors, NmRejectsAGroupWithTheWrongCountNamingRowAndGroup) {
  const Mask good = random_mask(FormatSpec::nm(2, 4), 3, 8, 0.0, Philox(1, "nm"));
  Mask too_many = good;
  for (int c = 4; c < 8; ++c) too_many.set(2, c, true);
  expect_error([&] { SparseWeight::from_dense(FormatSpec::nm(2, 4), random_dense(3, 8, 1), too_many); },
               {"2:4", "row 2, group 1", "cols 4..7", "keeps 4 of its 4 weights, expected exactly 2"});
  Mask too_few = good;
  for (int c = 0; c < 4; ++c) too_few.set(1, c, false);
  auto w = SparseWeight::create(FormatSpec::nm(2, 4), 3, 8);
  expect_error([&] { w->update_mask(too_few); }, {"row 1, group 0", "keeps 0 of its 4 weights, expected exactly 2"});
}

TEST(FormatErrors, NmNeedsInputsAMultipleOfM) {
  expect_error([] { SparseWeight::create(FormatSpec::nm(2, 4), 4, 10); },
               {"2:4", "[4 x 10]", "input dimension 10 is not a multiple of M = 4"});
  expect_error([] { SparseWeight::from_dense(FormatSpec::nm(2, 8), Matrix(3, 12), Mask(3, 12)); },
               {"2:8", "not a multiple of M = 8"});
}

TEST(FormatErrors, ShapeMismatchesNameBothShapes) {
  for (const char* name : {"csr", "bcsr4", "2:4"}) {
    SCOPED_TRACE(name);
    const FormatSpec f = FormatSpec::parse(name, "test");
    expect_error([&] { SparseWeight::from_dense(f, Matrix(4, 8), Mask(4, 12)); },
                 {name, "mask is [4 x 12]", "weight is [4 x 8]"});
    auto w = SparseWeight::create(f, 4, 8);
    expect_error([&] { w->update_mask(Mask(8, 4)); }, {"mask is [8 x 4]", "[4 x 8]"});
    expect_error([&] { w->assign(Matrix(5, 8), Mask(5, 8)); }, {"dense values are [5 x 8]", "[4 x 8]"});
    Matrix out(4, 4);
    expect_error([&] { w->to_dense(out.view()); }, {"dense output is [4 x 4]", "[4 x 8]"});
  }
}

TEST(FormatErrors, UnsupportedBlockSizeIsNamed) {
  for (int b : {2, 5, 32}) {
    expect_error([&] { SparseWeight::create(FormatSpec::bcsr(b), 8, 8); },
                 {"block size " + std::to_string(b) + " is not supported", "1, 4, 8 or 16"});
  }
}

TEST(FormatErrors, ARejectedMaskLeavesTheWeightAsItWas) {
  for (const FormatShape& s : kFormatShapes) {
    SCOPED_TRACE(describe(s));
    const FormatSpec f = FormatSpec::parse(s.format, "test");
    if (f == FormatSpec::csr()) continue;  // every mask fits CSR
    const double level = f.kind == FormatKind::NM ? 0.0 : 0.5;
    const Mask mask = random_mask(f, s.rows, s.cols, level, Philox(2, "m"));
    auto w = SparseWeight::from_dense(f, random_dense(s.rows, s.cols, 2), mask);
    const Matrix before = w->to_dense();
    Mask bad = mask;
    bad.set(s.rows - 1, 1, !bad.at(s.rows - 1, 1));  // splits a block or an N:M group
    EXPECT_THROW(w->update_mask(bad), Error);
    ASSERT_NO_THROW(w->validate());
    EXPECT_TRUE(w->mask() == mask);
    const Matrix after = w->to_dense();
    for (int64_t i = 0; i < after.size(); ++i) ASSERT_TRUE(same_bits(after.data()[i], before.data()[i]));
  }
}

}  // namespace
}  // namespace sparsetrain
