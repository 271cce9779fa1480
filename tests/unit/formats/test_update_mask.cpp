// Mask updates (dynamic sparsity): surviving connections keep their trained values bit-exactly,
// new ones start at zero, pruned ones disappear, and updates within reserved capacity leave the
// trainable values where they are.
#include <gtest/gtest.h>

#include <algorithm>

#include "format_test_util.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/formats/sparse_weight.h"

namespace sparsetrain {
namespace {

using namespace sparsetrain::testing;

double update_level(const FormatSpec& f) { return f.kind == FormatKind::NM ? 0.0 : 0.5; }

// Stands in for an optimizer step: every stored value changes, padding (+0.0) stays zero.
void train(SparseWeight& w) {
  for (float& v : w.values())
    if (!same_bits(v, 0.0f)) v = v * 3.0f - 1.0f;
}

TEST(UpdateMask, SurvivorsKeepTheirBitsAndNewConnectionsStartAtZero) {
  for (const FormatShape& s : kFormatShapes) {
    SCOPED_TRACE(describe(s));
    const FormatSpec f = FormatSpec::parse(s.format, "test");
    const Mask before = random_mask(f, s.rows, s.cols, update_level(f), Philox(11, "before"));
    const Mask after = random_mask(f, s.rows, s.cols, update_level(f), Philox(12, "after"));
    auto w = SparseWeight::from_dense(f, random_dense(s.rows, s.cols, 4), before);
    train(*w);
    const Matrix trained = w->to_dense();
    w->update_mask(after);
    ASSERT_NO_THROW(w->validate());
    EXPECT_TRUE(w->mask() == after);
    EXPECT_EQ(w->nnz(), after.nnz());
    const Matrix now = w->to_dense();
    int64_t survivors = 0, grown = 0, pruned = 0;
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c = 0; c < s.cols; ++c) {
        if (after.at(r, c) && before.at(r, c)) {
          ASSERT_TRUE(same_bits(now.at(r, c), trained.at(r, c))) << "survivor " << r << "," << c;
          ++survivors;
        } else {
          ASSERT_TRUE(same_bits(now.at(r, c), 0.0f)) << (after.at(r, c) ? "new " : "pruned ") << r << "," << c;
          grown += after.at(r, c);
          pruned += before.at(r, c);
        }
      }
    // The masks overlap partly, so all three cases were exercised.
    EXPECT_GT(survivors, 0);
    EXPECT_GT(grown, 0);
    EXPECT_GT(pruned, 0);
  }
}

TEST(UpdateMask, PruningEverythingThenGrowingBackGivesZeros) {
  for (const char* name : {"csr", "bcsr4", "bcsr16"}) {
    SCOPED_TRACE(name);
    const FormatSpec f = FormatSpec::parse(name, "test");
    auto w = SparseWeight::from_dense(f, random_dense(37, 53, 6), Mask(37, 53, true));
    w->update_mask(Mask(37, 53, false));
    EXPECT_EQ(w->nnz(), 0);
    ASSERT_NO_THROW(w->validate());
    w->update_mask(Mask(37, 53, true));
    EXPECT_EQ(w->nnz(), 37 * 53);
    ASSERT_NO_THROW(w->validate());
    for (float v : w->values()) ASSERT_TRUE(same_bits(v, 0.0f));
  }
}

// Alternates between two masks with the same number of kept units (elements, blocks or N per
// group), as a SET or RigL update does.
void expect_values_stay_in_place(const FormatShape& s) {
  SCOPED_TRACE(describe(s));
  const FormatSpec f = FormatSpec::parse(s.format, "test");
  const double level = f.kind == FormatKind::NM ? 0.0 : 0.7;
  const Mask a = random_mask(f, s.rows, s.cols, level, Philox(1, "a"));
  const Mask b = random_mask(f, s.rows, s.cols, level, Philox(1, "b"));
  auto w = SparseWeight::from_dense(f, random_dense(s.rows, s.cols, 1), a);
  w->reserve(std::max(a.nnz(), b.nnz()));  // edge blocks make the two counts differ slightly
  const float* values = w->values().data();
  for (int i = 0; i < 5; ++i) {
    w->update_mask(i % 2 == 0 ? b : a);
    ASSERT_EQ(w->values().data(), values) << "update " << i << " moved the values";
  }
}

TEST(UpdateMask, WithinReservedCapacityValuesStayInPlace) {
  for (const FormatShape& s : kFormatShapes) expect_values_stay_in_place(s);
  expect_values_stay_in_place({"csr", 300, 200});
}

TEST(UpdateMask, CompanionBuffersAreRemappedLikeTheValues) {
  for (const FormatShape& s : kFormatShapes) {
    SCOPED_TRACE(describe(s));
    const FormatSpec f = FormatSpec::parse(s.format, "test");
    const Mask before = random_mask(f, s.rows, s.cols, update_level(f), Philox(21, "before"));
    const Mask after = random_mask(f, s.rows, s.cols, update_level(f), Philox(22, "after"));
    auto w = SparseWeight::from_dense(f, random_dense(s.rows, s.cols, 7), before);
    train(*w);
    // Two state buffers, a copy of the values and their double; both must follow the values.
    AlignedBuffer<float> copy(w->values().size()), doubled(w->values().size());
    for (std::size_t i = 0; i < copy.size(); ++i) {
      copy[i] = w->values()[i];
      doubled[i] = 2.0f * w->values()[i];
    }
    AlignedBuffer<float>* companions[] = {&copy, &doubled};
    w->update_mask(after, companions);
    ASSERT_EQ(copy.size(), w->values().size());
    ASSERT_EQ(doubled.size(), w->values().size());
    int64_t survivors = 0;
    for (std::size_t i = 0; i < copy.size(); ++i) {
      const float v = w->values()[i];
      ASSERT_TRUE(same_bits(copy[i], v)) << i;
      ASSERT_TRUE(same_bits(doubled[i], 2.0f * v)) << i;
      survivors += !same_bits(v, 0.0f);
    }
    EXPECT_GT(survivors, 0);
  }
}

TEST(UpdateMask, ACompanionOfTheWrongSizeIsRejectedBeforeAnythingChanges) {
  const FormatSpec f = FormatSpec::parse("csr", "test");
  const Mask before = random_mask(f, 9, 11, 0.5, Philox(1, "before"));
  auto w = SparseWeight::from_dense(f, random_dense(9, 11, 2), before);
  AlignedBuffer<float> state(w->values().size() + 1);
  AlignedBuffer<float>* companions[] = {&state};
  try {
    w->update_mask(random_mask(f, 9, 11, 0.5, Philox(2, "after")), companions);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("companion buffer 0 holds"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(w->mask() == before);
}

}  // namespace
}  // namespace sparsetrain
