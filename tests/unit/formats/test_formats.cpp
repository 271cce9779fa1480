// Sparse formats: exact conversions, true counts, mask updates that keep surviving values,
// preallocated capacity, validation, and a precise error for every malformed input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/philox.h"
#include "formats/block_sparse.h"
#include "formats/random_mask.h"
#include "formats/sparse_weight.h"

namespace sparsetrain {
namespace {

struct Shape {
  std::string format;
  int64_t rows, cols;
};

// Odd shapes: not multiples of a vector width or a block (N:M needs cols % M == 0).
const std::vector<Shape> kShapes = {{"csr", 37, 53},   {"bcsr4", 37, 53}, {"bcsr8", 37, 53}, {"bcsr16", 37, 53},
                                    {"bcsr16", 16, 32}, {"2:4", 37, 52},   {"1:4", 21, 44},  {"2:8", 19, 56}};

Matrix random_dense(int64_t rows, int64_t cols, uint64_t seed) {
  Matrix m(rows, cols);
  Philox rng(seed, "dense");
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = 0.5f + rng.uniform(i);  // never zero
  return m;
}

std::vector<double> levels(const FormatSpec& f) {
  if (f.kind == FormatKind::NM) return {f.implied_sparsity()};
  return {0.0, 0.3, 0.9, 1.0};
}

// Exceptions must say what was wrong: every fragment must appear in the message.
template <typename F>
void expect_error(F&& f, std::vector<std::string> fragments) {
  try {
    f();
    FAIL() << "no error; expected one mentioning '" << fragments.front() << "'";
  } catch (const Error& e) {
    for (const auto& fragment : fragments)
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << "'" << fragment << "' not in: " << e.what();
  }
}

TEST(Formats, DenseRoundTripIsExactAndCountsAreTrue) {
  for (const Shape& s : kShapes) {
    const FormatSpec f = FormatSpec::parse(s.format, "test");
    for (double level : levels(f)) {
      SCOPED_TRACE(s.format + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols) + " s=" +
                   std::to_string(level));
      const Matrix dense = random_dense(s.rows, s.cols, 1);
      const Mask mask = random_mask(f, s.rows, s.cols, level, Philox(3, s.format));
      auto w = SparseWeight::from_dense(f, dense, mask);
      w->validate();
      EXPECT_EQ(w->format(), f);
      EXPECT_EQ(w->nnz(), mask.nnz());
      EXPECT_DOUBLE_EQ(w->sparsity(), mask.sparsity());
      EXPECT_TRUE(w->mask() == mask);
      const Matrix back = w->to_dense();
      for (int64_t r = 0; r < s.rows; ++r)
        for (int64_t c = 0; c < s.cols; ++c) {
          const float want = mask.at(r, c) ? dense.at(r, c) : 0.0f, got = back.at(r, c);
          ASSERT_EQ(std::memcmp(&got, &want, sizeof(float)), 0) << "at " << r << "," << c;
        }
    }
  }
}

TEST(Formats, RandomMasksHaveExactCountsAndDependOnlyOnTheKey) {
  const Mask a = random_mask(FormatSpec::csr(), 100, 30, 0.9, Philox(5, "fc1.weight"));
  EXPECT_EQ(a.nnz(), 300);
  EXPECT_TRUE(a == random_mask(FormatSpec::csr(), 100, 30, 0.9, Philox(5, "fc1.weight")));
  EXPECT_FALSE(a == random_mask(FormatSpec::csr(), 100, 30, 0.9, Philox(5, "fc2.weight")));
  // bcsr8 on 20 x 20: a 3 x 3 grid of blocks (edge blocks 4 wide), 2 of 9 kept at 75%.
  const Mask b = random_mask(FormatSpec::bcsr(8), 20, 20, 0.75, Philox(5, "b"));
  auto w = SparseWeight::from_dense(FormatSpec::bcsr(8), random_dense(20, 20, 2), b);
  EXPECT_EQ(static_cast<BlockSparseMatrix&>(*w).view().blocks(), 2);
  const Mask nm = random_mask(FormatSpec::nm(2, 4), 9, 16, 0.0, Philox(5, "nm"));
  for (int64_t r = 0; r < 9; ++r)
    for (int64_t g = 0; g < 4; ++g) {
      int kept = 0;
      for (int j = 0; j < 4; ++j) kept += nm.at(r, g * 4 + j);
      ASSERT_EQ(kept, 2);
    }
}

TEST(Formats, UpdateMaskKeepsSurvivorsAndStartsNewConnectionsAtZero) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(s.format);
    const FormatSpec f = FormatSpec::parse(s.format, "test");
    if (s.rows * s.cols < 8 * f.block * f.block) continue;  // too few blocks to both keep and grow some
    const double level = f.kind == FormatKind::NM ? 0.0 : 0.6;
    const Mask before = random_mask(f, s.rows, s.cols, level, Philox(11, "before"));
    const Mask after = random_mask(f, s.rows, s.cols, level, Philox(12, "after"));
    auto w = SparseWeight::from_dense(f, random_dense(s.rows, s.cols, 4), before);
    // Trained values differ from the initial ones; update must carry the trained ones.
    for (float& v : w->values()) v = v == 0.0f ? 0.0f : v * 3.0f - 1.0f;
    const Matrix trained = w->to_dense();
    w->update_mask(after);
    w->validate();
    EXPECT_TRUE(w->mask() == after);
    const Matrix now = w->to_dense();
    int64_t survivors = 0, grown = 0;
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c = 0; c < s.cols; ++c) {
        if (!after.at(r, c)) {
          ASSERT_EQ(now.at(r, c), 0.0f);
        } else if (before.at(r, c)) {
          ASSERT_EQ(now.at(r, c), trained.at(r, c)) << "survivor " << r << "," << c;
          ++survivors;
        } else {
          ASSERT_EQ(now.at(r, c), 0.0f) << "new connection " << r << "," << c;
          ++grown;
        }
      }
    EXPECT_GT(survivors, 0);
    EXPECT_GT(grown, 0);
  }
}

TEST(Formats, UpdatesWithinReservedCapacityDoNotMoveStorage) {
  const Mask a = random_mask(FormatSpec::csr(), 300, 200, 0.9, Philox(1, "a"));
  const Mask b = random_mask(FormatSpec::csr(), 300, 200, 0.9, Philox(1, "b"));
  auto w = SparseWeight::from_dense(FormatSpec::csr(), random_dense(300, 200, 1), a);
  w->reserve(a.nnz());
  w->update_mask(b);  // buffers swap once; both are now sized
  const float* values = w->values().data();
  for (int i = 0; i < 4; ++i) {
    w->update_mask(i % 2 ? b : a);
    w->update_mask(i % 2 ? a : b);
    ASSERT_EQ(w->values().data(), values) << "an update reallocated";
  }
}

TEST(Formats, BackwardSeesValuesChangedInPlaceAfterValuesChanged) {
  // The transposed companion must be refreshed from the current values, not the first ones.
  const Mask mask = random_mask(FormatSpec::csr(), 24, 40, 0.5, Philox(2, "m"));
  auto w = SparseWeight::from_dense(FormatSpec::csr(), random_dense(24, 40, 3), mask);
  auto& bs = static_cast<BlockSparseMatrix&>(*w);
  bs.transposed_view();  // refresh once with the initial values
  for (float& v : w->values()) v *= -2.0f;
  w->values_changed();
  const BlockSparseView t = bs.transposed_view();
  const Matrix dense = w->to_dense();
  for (int64_t k = 0; k < t.block_rows; ++k)
    for (int32_t i = t.row_ptr[k]; i < t.row_ptr[k + 1]; ++i) ASSERT_EQ(t.values[i], dense.at(t.col[i], k));
}

TEST(Formats, ErrorsNameTheProblem) {
  // A block format refuses a mask that splits a block, naming the block.
  Mask split(20, 20);
  split.set(9, 3, true);
  expect_error([&] { SparseWeight::from_dense(FormatSpec::bcsr(8), random_dense(20, 20, 1), split); },
               {"bcsr8", "block (1, 0)", "keeps 1 of 64"});
  // N:M refuses a group with the wrong count, naming row and group.
  Mask nm = random_mask(FormatSpec::nm(2, 4), 3, 8, 0.0, Philox(1, "nm"));
  nm.set(2, 4, true);
  nm.set(2, 5, true);
  nm.set(2, 6, true);
  expect_error([&] { SparseWeight::from_dense(FormatSpec::nm(2, 4), random_dense(3, 8, 1), nm); },
               {"2:4", "row 2, group 1", "expected exactly 2"});
  expect_error([] { SparseWeight::create(FormatSpec::nm(2, 4), 4, 10); }, {"2:4", "not a multiple of M = 4"});
  expect_error([] { BlockSparseMatrix(4, 4, 5); }, {"block size 5", "1, 4, 8 or 16"});
  expect_error([] { SparseWeight::create(FormatSpec::csr(), 4, 6)->update_mask(Mask(6, 4)); },
               {"mask is [6 x 4]", "[4 x 6]"});
  expect_error([] { SparseWeight::from_dense(FormatSpec::csr(), Matrix(4, 5), Mask(4, 6)); },
               {"[4 x 5]", "[4 x 6]"});
  expect_error([] { FormatSpec::parse("bcsr3", "--format"); }, {"--format", "bcsr3", "csr, bcsr4"});
  expect_error([] { FormatSpec::parse("4:4", "sparsity.format"); }, {"sparsity.format", "1 <= N < M"});
  expect_error([] { random_mask(FormatSpec::csr(), 3, 3, 1.5, Philox(1, "x")); }, {"1.5", "[0, 1]"});
}

TEST(Formats, FormatNamesRoundTrip) {
  for (std::string text : {"csr", "bcsr4", "bcsr8", "bcsr16", "2:4", "1:4", "2:8", "3:16"})
    EXPECT_EQ(FormatSpec::parse(text, "t").name(), text);
}

}  // namespace
}  // namespace sparsetrain
