// Score-based mask selection: hand-worked examples per function and granularity, the ranking
// rules (ties to the lower index, NaN lowest), and random scores checked against a full sort.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "../formats/format_test_util.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/sparsity/mask_select.h"

namespace sparsetrain {
namespace {

using namespace sparsetrain::testing;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Matrix matrix(int64_t rows, int64_t cols, const std::vector<float>& values) {
  Matrix m(rows, cols);
  std::copy(values.begin(), values.end(), m.data());
  return m;
}

// Every element scores its block's value; block values row-major over blocks.
Matrix per_block(int64_t rows, int64_t cols, int64_t b, const std::vector<float>& values) {
  Matrix m(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m.at(r, c) = values[r / b * ((cols + b - 1) / b) + c / b];
  return m;
}

Mask mask_of(const std::vector<std::string>& rows) {
  Mask m(static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size()));
  for (int64_t r = 0; r < m.rows(); ++r)
    for (int64_t c = 0; c < m.cols(); ++c) m.set(r, c, rows[r][c] == '1');
  return m;
}

std::vector<std::string> rows_of(const Mask& m) {
  std::vector<std::string> rows(m.rows(), std::string(m.cols(), '0'));
  for (int64_t r = 0; r < m.rows(); ++r)
    for (int64_t c = 0; c < m.cols(); ++c)
      if (m.at(r, c)) rows[r][c] = '1';
  return rows;
}

using Rows = std::vector<std::string>;

// --- the full-sort reference ---

int64_t block_of(const FormatSpec& f) { return f.kind == FormatKind::NM ? 1 : f.block; }

std::vector<float> ref_unit_scores(const Matrix& score, const FormatSpec& f) {
  const int64_t b = block_of(f), block_cols = (score.cols() + b - 1) / b;
  std::vector<double> sums((score.rows() + b - 1) / b * block_cols, 0.0);
  for (int64_t r = 0; r < score.rows(); ++r)
    for (int64_t c = 0; c < score.cols(); ++c) sums[r / b * block_cols + c / b] += score.at(r, c);
  return std::vector<float>(sums.begin(), sums.end());
}

std::vector<uint8_t> ref_present(const Mask& mask, const FormatSpec& f) {
  const int64_t b = block_of(f), block_cols = (mask.cols() + b - 1) / b;
  std::vector<uint8_t> present((mask.rows() + b - 1) / b * block_cols);
  for (int64_t u = 0; u < static_cast<int64_t>(present.size()); ++u)
    present[u] = mask.at(u / block_cols * b, u % block_cols * b);
  return present;
}

Mask ref_mask(const std::vector<uint8_t>& chosen, const FormatSpec& f, int64_t rows, int64_t cols) {
  const int64_t b = block_of(f), block_cols = (cols + b - 1) / b;
  Mask m(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m.set(r, c, chosen[r / b * block_cols + c / b] != 0);
  return m;
}

// Marks the `count` best of `candidates` after sorting them completely: numbers before NaN,
// higher scores first, then lower indices.
void ref_choose(const std::vector<float>& s, std::vector<int64_t> candidates, int64_t count,
                std::vector<uint8_t>& chosen) {
  auto rank = [&](int64_t u) { return std::tuple(!std::isnan(s[u]), std::isnan(s[u]) ? 0.0f : s[u], -u); };
  std::sort(candidates.begin(), candidates.end(), [&](int64_t a, int64_t b) { return rank(a) > rank(b); });
  for (int64_t i = 0; i < std::min<int64_t>(count, candidates.size()); ++i) chosen[candidates[i]] = 1;
}

// Units in [first, last) whose presence is `present_value`.
std::vector<int64_t> units_where(const std::vector<uint8_t>& present, uint8_t present_value, int64_t first,
                                 int64_t last) {
  std::vector<int64_t> units;
  for (int64_t u = first; u < last; ++u)
    if (present[u] == present_value) units.push_back(u);
  return units;
}

std::vector<int64_t> units_in(int64_t first, int64_t last) {
  std::vector<int64_t> units(last - first);
  std::iota(units.begin(), units.end(), first);
  return units;
}

Mask ref_topk(const Matrix& score, const FormatSpec& f, int64_t keep) {
  const std::vector<float> s = ref_unit_scores(score, f);
  std::vector<uint8_t> chosen(s.size(), 0);
  const int64_t units = static_cast<int64_t>(s.size());
  if (f.kind == FormatKind::NM) {
    for (int64_t g = 0; g < units; g += f.m) ref_choose(s, units_in(g, g + f.m), f.n, chosen);
  } else {
    ref_choose(s, units_in(0, units), keep, chosen);
  }
  return ref_mask(chosen, f, score.rows(), score.cols());
}

Mask ref_drop(const Matrix& score, const Mask& mask, const FormatSpec& f, int64_t keep) {
  const std::vector<float> s = ref_unit_scores(score, f);
  std::vector<uint8_t> chosen(s.size(), 0);
  ref_choose(s, units_where(ref_present(mask, f), 1, 0, static_cast<int64_t>(s.size())), keep, chosen);
  return ref_mask(chosen, f, score.rows(), score.cols());
}

Mask ref_grow(const Matrix& score, const Mask& mask, const FormatSpec& f, int64_t target) {
  const std::vector<float> s = ref_unit_scores(score, f);
  const std::vector<uint8_t> present = ref_present(mask, f);
  std::vector<uint8_t> chosen = present;
  const int64_t units = static_cast<int64_t>(s.size());
  if (f.kind == FormatKind::NM) {
    for (int64_t g = 0; g < units; g += f.m) {
      const int64_t held = std::count(present.begin() + g, present.begin() + g + f.m, 1);
      ref_choose(s, units_where(present, 0, g, g + f.m), f.n - held, chosen);
    }
  } else {
    ref_choose(s, units_where(present, 0, 0, units), target - std::count(present.begin(), present.end(), 1), chosen);
  }
  return ref_mask(chosen, f, score.rows(), score.cols());
}

enum class Scores { Ties, Spread, Constant };

// Ties: few distinct integers with NaN, -inf and -0 planted; Spread: normal values over many
// exponents; Constant: one value everywhere.
Matrix random_scores(int64_t rows, int64_t cols, Scores kind, uint64_t seed) {
  Matrix m(rows, cols, 0.5f);
  const Philox rng(seed, "scores");
  for (int64_t i = 0; kind != Scores::Constant && i < m.size(); ++i) {
    float& v = m.data()[i];
    v = kind == Scores::Spread ? 0.02f * rng.normal(i) : std::floor(rng.uniform(i) * 8.0f) - 4.0f;
    if (kind == Scores::Ties && i % 97 == 3) v = kNan;
    if (kind == Scores::Ties && i % 89 == 5) v = -kInf;
    if (kind == Scores::Ties && i % 83 == 7) v = -0.0f;
  }
  return m;
}

// Keeps any subset of elements: N:M groups may hold fewer or more than N.
Mask random_elements(int64_t rows, int64_t cols, uint64_t seed) {
  Mask m(rows, cols);
  const Philox rng(seed, "elements");
  for (int64_t i = 0; i < rows * cols; ++i) m.data()[i] = static_cast<uint8_t>(rng.bits(i) & 1);
  return m;
}

Mask random_present(const FormatSpec& f, int64_t rows, int64_t cols, uint64_t seed) {
  return f.kind == FormatKind::NM ? random_elements(rows, cols, seed)
                                  : random_mask(f, rows, cols, 0.5, Philox(seed, "present"));
}

// Checks all three functions against the reference on one score, over counts from 0 to all units.
void expect_matches_reference(const FormatSpec& f, const Matrix& score, uint64_t seed) {
  const int64_t units = mask_units(f, score.rows(), score.cols());
  const Mask present = random_present(f, score.rows(), score.cols(), seed);
  const std::vector<uint8_t> units_present = ref_present(present, f);
  const int64_t held = std::count(units_present.begin(), units_present.end(), 1);
  for (int64_t count : {int64_t{0}, int64_t{1}, units / 3, held, (held + units) / 2, units - 1, units}) {
    SCOPED_TRACE("count " + std::to_string(count));
    EXPECT_EQ(rows_of(topk_mask(score, f, count)), rows_of(ref_topk(score, f, count)));
    EXPECT_EQ(rows_of(drop_minimum(score, present, f, count)), rows_of(ref_drop(score, present, f, count)));
    EXPECT_EQ(rows_of(grow_maximum(score, present, f, count)), rows_of(ref_grow(score, present, f, count)));
  }
}

// --- units and counts ---

TEST(MaskSelect, MaskUnitsCountElementsOrBlocksWithClippedEdges) {
  EXPECT_EQ(mask_units(FormatSpec::csr(), 6, 7), 42);
  EXPECT_EQ(mask_units(FormatSpec::bcsr(4), 6, 7), 4);
  EXPECT_EQ(mask_units(FormatSpec::bcsr(16), 37, 53), 12);
  EXPECT_EQ(mask_units(FormatSpec::bcsr(8), 16, 16), 4);
  EXPECT_EQ(mask_units(FormatSpec::nm(2, 4), 3, 8), 24);
}

TEST(MaskSelect, KeptUnitsTruncatesLikeCerebrasWithoutLosingExactProducts) {
  EXPECT_EQ(kept_units(0.9, 100), 10);
  EXPECT_EQ(kept_units(0.7, 10), 3);
  EXPECT_EQ(kept_units(0.25, 10), 7);
  EXPECT_EQ(kept_units(0.999, 1000), 1);
  EXPECT_EQ(kept_units(0.0, 42), 42);
  EXPECT_EQ(kept_units(1.0, 42), 0);
}

TEST(MaskSelect, UnitsKeptByCountsKeptElementsOrBlocksAsTheReferenceDoes) {
  for (const FormatSpec& f : {FormatSpec::csr(), FormatSpec::bcsr(4), FormatSpec::bcsr(16), FormatSpec::nm(2, 4)})
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{37, 52}, {1, 4}, {16, 16}}) {
      SCOPED_TRACE(f.name() + " " + std::to_string(rows) + "x" + std::to_string(cols));
      const Mask present = random_present(f, rows, cols, 11);
      const std::vector<uint8_t> units = ref_present(present, f);
      const int64_t expected = std::count(units.begin(), units.end(), 1);
      ASSERT_GT(expected, 0);
      EXPECT_EQ(units_kept_by(present, f), expected);
      EXPECT_EQ(units_kept_by(Mask(rows, cols), f), 0);
    }
}

TEST(MaskSelect, KeptUnitsRejectsSparsityOutsideTheUnitInterval) {
  expect_error([] { kept_units(1.5, 10); }, {"kept_units", "sparsity 1.5", "[0, 1]"});
  expect_error([] { kept_units(-0.1, 10); }, {"-0.1"});
  expect_error([] { kept_units(std::nan(""), 10); }, {"nan"});
}

// --- topk_mask ---

TEST(MaskSelect, TopkCsrKeepsTheHighestScores) {
  const Matrix s = matrix(2, 3, {3, 1, 4, 1, 5, 9});
  EXPECT_EQ(rows_of(topk_mask(s, FormatSpec::csr(), 3)), (Rows{"001", "011"}));
}

TEST(MaskSelect, TopkBreaksTiesByLowerIndex) {
  const Matrix s = matrix(2, 3, {2, 7, 2, 7, 2, 2});
  EXPECT_EQ(rows_of(topk_mask(s, FormatSpec::csr(), 3)), (Rows{"110", "100"}));
  EXPECT_EQ(rows_of(topk_mask(s, FormatSpec::csr(), 4)), (Rows{"111", "100"}));
}

TEST(MaskSelect, NanRanksBelowMinusInfinityAndNanTiesGoToTheLowerIndex) {
  const Matrix s = matrix(2, 3, {kNan, -kInf, 0, -1, kNan, 5});
  EXPECT_EQ(rows_of(topk_mask(s, FormatSpec::csr(), 4)), (Rows{"011", "101"}));
  EXPECT_EQ(rows_of(topk_mask(s, FormatSpec::csr(), 5)), (Rows{"111", "101"}));
}

TEST(MaskSelect, NegativeZeroTiesWithPositiveZero) {
  EXPECT_EQ(rows_of(topk_mask(matrix(1, 3, {-1, -0.0f, 0.0f}), FormatSpec::csr(), 1)), (Rows{"010"}));
}

TEST(MaskSelect, TopkBcsr4KeepsWholeBlocksIncludingClippedEdgeBlocks) {
  // 6x7 in 4x4 blocks: sums 16 (16 weights of 1), 12 (12 of 1), 8 (8 of 1), 18 (6 of 3).
  const Matrix s = per_block(6, 7, 4, {1, 1, 1, 3});
  EXPECT_EQ(rows_of(topk_mask(s, FormatSpec::bcsr(4), 2)),
            (Rows{"1111000", "1111000", "1111000", "1111000", "0000111", "0000111"}));
  EXPECT_EQ(rows_of(topk_mask(s, FormatSpec::bcsr(4), 3)),
            (Rows{"1111111", "1111111", "1111111", "1111111", "0000111", "0000111"}));
}

TEST(MaskSelect, BlocksScoreTheSumOfTheirInRangeScoresNotTheMean) {
  // The 2x3 corner block has the highest mean (2) but the lowest sum (12).
  const Matrix s = per_block(6, 7, 4, {1, 1.1f, 1.6f, 2});
  EXPECT_EQ(rows_of(topk_mask(s, FormatSpec::bcsr(4), 1)),
            (Rows{"1111000", "1111000", "1111000", "1111000", "0000000", "0000000"}));
}

TEST(MaskSelect, ABlockWithANanScoreRanksLowest) {
  Matrix s = per_block(6, 7, 4, {9, -kInf, 1, 1});
  s.at(1, 2) = kNan;
  EXPECT_EQ(rows_of(topk_mask(s, FormatSpec::bcsr(4), 3)),
            (Rows{"0000111", "0000111", "0000111", "0000111", "1111111", "1111111"}));
}

TEST(MaskSelect, TopkTwoOfFourKeepsTheTwoHighestInEveryGroup) {
  const Matrix s = matrix(2, 8, {1, 4, 2, 3, 9, 9, 0, 9, kNan, 1, kNan, 2, -1, -2, -3, -4});
  EXPECT_EQ(rows_of(topk_mask(s, FormatSpec::nm(2, 4), 0)), (Rows{"01011100", "01011100"}));
}

TEST(MaskSelect, TopkOneOfFourAndTwoOfEight) {
  EXPECT_EQ(rows_of(topk_mask(matrix(1, 8, {5, 1, 7, 7, 0, 0, 0, 0}), FormatSpec::nm(1, 4), 0)), (Rows{"00101000"}));
  EXPECT_EQ(
      rows_of(topk_mask(matrix(1, 16, {1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1}), FormatSpec::nm(2, 8), 0)),
      (Rows{"0000001111000000"}));
}

TEST(MaskSelect, TopkNmIgnoresKeepUnits) {
  const Matrix s = random_scores(3, 8, Scores::Spread, 1);
  const Mask expected = topk_mask(s, FormatSpec::nm(2, 4), 0);
  EXPECT_EQ(expected.nnz(), 12);
  EXPECT_TRUE(topk_mask(s, FormatSpec::nm(2, 4), 999) == expected);
  EXPECT_TRUE(topk_mask(s, FormatSpec::nm(2, 4), -5) == expected);
}

TEST(MaskSelect, TopkKeepsNothingOrEverything) {
  for (const char* name : {"csr", "bcsr4"}) {
    SCOPED_TRACE(name);
    const FormatSpec f = FormatSpec::parse(name, "test");
    const Matrix s = random_scores(6, 7, Scores::Ties, 2);
    EXPECT_EQ(topk_mask(s, f, 0).nnz(), 0);
    EXPECT_EQ(topk_mask(s, f, mask_units(f, 6, 7)).nnz(), 42);
  }
}

TEST(MaskSelect, TopkKeepsExactlyTheRequestedUnits) {
  for (const FormatShape& shape : kFormatShapes) {
    const FormatSpec f = FormatSpec::parse(shape.format, "test");
    if (f.kind == FormatKind::NM) continue;
    SCOPED_TRACE(describe(shape));
    const int64_t units = mask_units(f, shape.rows, shape.cols);
    for (double level : {0.0, 0.5, 0.9, 1.0}) {
      const int64_t keep = kept_units(level, units);
      const Mask m = topk_mask(random_scores(shape.rows, shape.cols, Scores::Ties, 3), f, keep);
      const std::vector<uint8_t> present = ref_present(m, f);
      EXPECT_EQ(std::count(present.begin(), present.end(), 1), keep) << "sparsity " << level;
    }
  }
}

// --- drop_minimum ---

TEST(MaskSelect, DropCsrKeepsTheHighestPresentAndNeverAnAbsentOne) {
  const Matrix s = matrix(2, 3, {9, 1, 4, 8, 5, 2});
  const Mask present = mask_of({"011", "011"});
  EXPECT_EQ(rows_of(drop_minimum(s, present, FormatSpec::csr(), 2)), (Rows{"001", "010"}));
}

TEST(MaskSelect, DropBreaksTiesByLowerIndex) {
  const Matrix s = matrix(2, 3, {3, 3, 3, 3, 3, 3});
  EXPECT_EQ(rows_of(drop_minimum(s, mask_of({"101", "011"}), FormatSpec::csr(), 3)), (Rows{"101", "010"}));
}

TEST(MaskSelect, DropBcsr4KeepsTheHighestPresentBlocks) {
  // Sums: 16, 12, 72 (absent), 18.
  const Matrix s = per_block(6, 7, 4, {1, 1, 9, 3});
  const Mask present = mask_of({"1111111", "1111111", "1111111", "1111111", "0000111", "0000111"});
  EXPECT_EQ(rows_of(drop_minimum(s, present, FormatSpec::bcsr(4), 2)),
            (Rows{"1111000", "1111000", "1111000", "1111000", "0000111", "0000111"}));
}

TEST(MaskSelect, DropNmSelectsOverTheWholeMatrixAndMayEmptyAGroup) {
  const Matrix s = matrix(1, 8, {5, 6, 9, 9, 1, 2, 9, 9});
  EXPECT_EQ(rows_of(drop_minimum(s, mask_of({"11001100"}), FormatSpec::nm(2, 4), 2)), (Rows{"11000000"}));
  EXPECT_EQ(rows_of(drop_minimum(s, mask_of({"10000001"}), FormatSpec::nm(1, 4), 1)), (Rows{"00000001"}));
}

TEST(MaskSelect, DropKeepsNothingOrEveryPresentUnit) {
  const Matrix s = random_scores(6, 7, Scores::Ties, 4);
  for (const char* name : {"csr", "bcsr4"}) {
    SCOPED_TRACE(name);
    const FormatSpec f = FormatSpec::parse(name, "test");
    const Mask present = random_mask(f, 6, 7, 0.5, Philox(4, "present"));
    EXPECT_EQ(drop_minimum(s, present, f, 0).nnz(), 0);
    EXPECT_TRUE(drop_minimum(s, present, f, mask_units(f, 6, 7)) == present);
  }
}

// --- grow_maximum ---

TEST(MaskSelect, GrowCsrAddsTheHighestAbsentUpToTheTarget) {
  const Matrix s = matrix(2, 3, {9, 1, 4, 8, 5, 2});
  EXPECT_EQ(rows_of(grow_maximum(s, mask_of({"100", "000"}), FormatSpec::csr(), 3)), (Rows{"100", "110"}));
}

TEST(MaskSelect, GrowBreaksTiesByLowerIndex) {
  const Matrix s = matrix(2, 3, {3, 3, 3, 3, 3, 3});
  EXPECT_EQ(rows_of(grow_maximum(s, mask_of({"100", "010"}), FormatSpec::csr(), 4)), (Rows{"111", "010"}));
}

TEST(MaskSelect, GrowWithATargetAtOrBelowWhatIsPresentAddsNothing) {
  const Matrix s = matrix(2, 3, {9, 1, 4, 8, 5, 2});
  const Mask present = mask_of({"010", "001"});
  EXPECT_TRUE(grow_maximum(s, present, FormatSpec::csr(), 2) == present);
  EXPECT_TRUE(grow_maximum(s, present, FormatSpec::csr(), 1) == present);
  EXPECT_TRUE(grow_maximum(s, present, FormatSpec::csr(), 0) == present);
}

TEST(MaskSelect, GrowToAllUnitsKeepsEverything) {
  const Matrix s = random_scores(6, 7, Scores::Ties, 5);
  for (const char* name : {"csr", "bcsr4"}) {
    SCOPED_TRACE(name);
    const FormatSpec f = FormatSpec::parse(name, "test");
    const Mask present = random_mask(f, 6, 7, 0.5, Philox(5, "present"));
    EXPECT_EQ(grow_maximum(s, present, f, mask_units(f, 6, 7)).nnz(), 42);
  }
}

TEST(MaskSelect, GrowBcsr4AddsTheHighestAbsentBlocks) {
  // Sums: 16 (present), 12, 72, 18.
  const Matrix s = per_block(6, 7, 4, {1, 1, 9, 3});
  const Mask present = mask_of({"1111000", "1111000", "1111000", "1111000", "0000000", "0000000"});
  EXPECT_EQ(rows_of(grow_maximum(s, present, FormatSpec::bcsr(4), 3)),
            (Rows{"1111000", "1111000", "1111000", "1111000", "1111111", "1111111"}));
}

TEST(MaskSelect, GrowNmRefillsEveryGroupToExactlyNAndIgnoresTheTarget) {
  const Matrix s = matrix(1, 12, {0, 3, 4, 1, 9, 9, 9, 9, 5, 5, 5, 5});
  const Mask present = mask_of({"100011000000"});
  for (int64_t target : {0, 3, 12})
    EXPECT_EQ(rows_of(grow_maximum(s, present, FormatSpec::nm(2, 4), target)), (Rows{"101011001100"}));
  const Matrix s8 = matrix(1, 16, {1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_EQ(rows_of(grow_maximum(s8, mask_of({"0000000000000001"}), FormatSpec::nm(2, 8), 0)),
            (Rows{"0000001110000001"}));
}

TEST(MaskSelect, GrowNmLeavesGroupsHoldingNOrMoreAlone) {
  const Matrix s = matrix(1, 8, {0, 0, 0, 9, 0, 0, 0, 9});
  EXPECT_EQ(rows_of(grow_maximum(s, mask_of({"11101100"}), FormatSpec::nm(2, 4), 0)), (Rows{"11101100"}));
}

TEST(MaskSelect, GrowNeverRemovesAndNeverExceedsTheTarget) {
  for (const FormatShape& shape : kFormatShapes) {
    const FormatSpec f = FormatSpec::parse(shape.format, "test");
    if (f.kind == FormatKind::NM) continue;
    SCOPED_TRACE(describe(shape));
    const Matrix s = random_scores(shape.rows, shape.cols, Scores::Spread, 6);
    const Mask present = random_mask(f, shape.rows, shape.cols, 0.6, Philox(6, "present"));
    const std::vector<uint8_t> before = ref_present(present, f);
    const int64_t held = std::count(before.begin(), before.end(), 1);
    const int64_t target = held + (static_cast<int64_t>(before.size()) - held) / 2;
    const std::vector<uint8_t> after = ref_present(grow_maximum(s, present, f, target), f);
    for (std::size_t u = 0; u < before.size(); ++u) EXPECT_TRUE(after[u] || !before[u]) << "unit " << u;
    EXPECT_EQ(std::count(after.begin(), after.end(), 1), target);
  }
}

// --- against the full-sort reference ---

TEST(MaskSelect, MatchesAFullSortOnRandomScores) {
  std::vector<FormatShape> shapes = kFormatShapes;
  shapes.insert(shapes.end(), {{"3:6", 11, 42}, {"5:32", 9, 96}, {"csr", 1, 1}, {"bcsr8", 3, 5}});
  for (const FormatShape& shape : shapes) {
    const FormatSpec f = FormatSpec::parse(shape.format, "test");
    for (Scores kind : {Scores::Ties, Scores::Spread, Scores::Constant}) {
      SCOPED_TRACE(describe(shape) + " scores " + std::to_string(static_cast<int>(kind)));
      expect_matches_reference(f, random_scores(shape.rows, shape.cols, kind, 7), 7);
    }
  }
}

TEST(MaskSelect, MatchesAFullSortOnMoreUnitsThanTheHistogramThreshold) {
  for (const FormatShape& shape : {FormatShape{"csr", 256, 320}, FormatShape{"bcsr4", 1024, 1040}}) {
    const FormatSpec f = FormatSpec::parse(shape.format, "test");
    ASSERT_GE(mask_units(f, shape.rows, shape.cols), 1 << 16);
    for (Scores kind : {Scores::Ties, Scores::Spread, Scores::Constant}) {
      SCOPED_TRACE(describe(shape) + " scores " + std::to_string(static_cast<int>(kind)));
      expect_matches_reference(f, random_scores(shape.rows, shape.cols, kind, 8), 8);
    }
  }
}

// --- errors ---

TEST(MaskSelect, RejectsCountsOutsideTheUnitRange) {
  const Matrix s(6, 7, 1.0f);
  const Mask m(6, 7);
  expect_error([&] { topk_mask(s, FormatSpec::bcsr(4), 5); }, {"topk_mask", "keep_units 5", "[0, 4]", "6x7 bcsr4"});
  expect_error([&] { topk_mask(s, FormatSpec::csr(), -1); }, {"topk_mask", "keep_units -1", "[0, 42]"});
  expect_error([&] { drop_minimum(s, m, FormatSpec::csr(), 43); }, {"drop_minimum", "keep_units 43", "[0, 42]"});
  expect_error([&] { grow_maximum(s, m, FormatSpec::bcsr(4), -1); }, {"grow_maximum", "target_units -1", "[0, 4]"});
}

TEST(MaskSelect, RejectsAMaskOfAnotherShape) {
  const Matrix s(4, 6, 1.0f);
  expect_error([&] { drop_minimum(s, Mask(4, 5), FormatSpec::csr(), 0); },
               {"drop_minimum", "score is 4x6", "mask is 4x5", "same shape"});
  expect_error([&] { grow_maximum(s, Mask(6, 4), FormatSpec::csr(), 0); },
               {"grow_maximum", "score is 4x6", "mask is 6x4"});
}

TEST(MaskSelect, RejectsNmColumnsThatAreNotAMultipleOfM) {
  const Matrix s(3, 10, 1.0f);
  expect_error([&] { topk_mask(s, FormatSpec::nm(2, 4), 0); }, {"topk_mask", "3x10", "2:4", "multiple of 4"});
  expect_error([&] { drop_minimum(s, Mask(3, 10), FormatSpec::nm(1, 4), 0); },
               {"drop_minimum", "1:4", "multiple of 4"});
  expect_error([&] { grow_maximum(s, Mask(3, 10), FormatSpec::nm(2, 8), 0); },
               {"grow_maximum", "2:8", "multiple of 8"});
}

TEST(MaskSelect, RejectsABlockMaskThatSplitsABlock) {
  const Matrix s(6, 7, 1.0f);
  Mask m = mask_of({"1111000", "1111000", "1111000", "1111000", "0000000", "0000000"});
  m.set(5, 2, true);
  expect_error([&] { drop_minimum(s, m, FormatSpec::bcsr(4), 1); },
               {"drop_minimum", "bcsr4", "not block-uniform", "block (1, 0)"});
  expect_error([&] { grow_maximum(s, m, FormatSpec::bcsr(4), 4); }, {"grow_maximum", "block (1, 0)"});
  expect_error([&] { units_kept_by(m, FormatSpec::bcsr(4)); }, {"units_kept_by", "block (1, 0)"});
}

}  // namespace
}  // namespace sparsetrain
