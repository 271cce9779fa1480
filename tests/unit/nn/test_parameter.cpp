// Parameters in their three storages: the optimizer-facing spans, state that follows mask
// changes, masked gradients that drop NaN, and conversions between storages.
#include <gtest/gtest.h>

#include <cmath>

#include "error_of.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/nn/parameter.h"

namespace sparsetrain {
namespace {

void fill_random(Parameter& p, uint64_t seed) {
  const Philox rng(seed, p.name());
  auto v = p.values();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = rng.uniform(i) + 0.5f;  // nonzero
}

using testing::error_of;

TEST(Parameter, DenseParametersExposeEveryElement) {
  Parameter p("fc.bias", {7});
  EXPECT_EQ(p.rows(), 1);
  EXPECT_EQ(p.cols(), 7);
  EXPECT_EQ(p.values().size(), 7u);
  EXPECT_EQ(p.grad().size(), 7u);
  EXPECT_EQ(p.storage(), Storage::Dense);
  EXPECT_EQ(p.storage_label(), "dense");
  EXPECT_EQ(p.kept(), 7);
  EXPECT_EQ(p.sparsity(), 0.0);
  Parameter conv("conv.weight", {4, 3, 2, 2});
  EXPECT_EQ(conv.rows(), 4);
  EXPECT_EQ(conv.cols(), 12);
}

TEST(Parameter, MaskedDenseZeroesPrunedValuesAndState) {
  Parameter p("fc.weight", {5, 6});
  fill_random(p, 1);
  std::fill(p.state("momentum").begin(), p.state("momentum").end(), 2.0f);
  const Mask mask = random_mask(FormatSpec::csr(), 5, 6, 0.5, Philox(3, "m"));
  const Matrix before = p.to_dense();
  p.sparsify(mask);
  EXPECT_EQ(p.storage(), Storage::MaskedDense);
  EXPECT_EQ(p.storage_label(), "masked-dense");
  EXPECT_EQ(p.kept(), mask.nnz());
  const Matrix after = p.to_dense();
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 6; ++c) {
      EXPECT_EQ(after.at(r, c), mask.at(r, c) ? before.at(r, c) : 0.0f);
      EXPECT_EQ(p.state("momentum")[r * 6 + c], mask.at(r, c) ? 2.0f : 0.0f);
    }
}

TEST(Parameter, MaskedGradientsSelectSoNanInAPrunedSlotDisappears) {
  Parameter p("w", {2, 3});
  Mask mask(2, 3, true);
  mask.set(0, 1, false);
  p.sparsify(mask);
  auto g = p.grad();
  std::fill(g.begin(), g.end(), 1.5f);
  g[1] = NAN;
  g[4] = INFINITY;  // kept slot: stays, it is the algorithm's job to notice
  p.mask_grad();
  EXPECT_EQ(g[1], 0.0f);
  EXPECT_EQ(g[0], 1.5f);
  EXPECT_TRUE(std::isinf(g[4]));
}

TEST(Parameter, CompressedStateFollowsSurvivorsAndStartsNewConnectionsAtZero) {
  for (const char* name : {"csr", "bcsr4", "2:4"}) {
    SCOPED_TRACE(name);
    const FormatSpec f = FormatSpec::parse(name, "test");
    const double level = f.kind == FormatKind::NM ? 0.0 : 0.6;
    Parameter p("h.0.mlp.c_fc.weight", {9, 16});
    fill_random(p, 2);
    const Mask a = random_mask(f, 9, 16, level, Philox(1, "a"));
    const Mask b = random_mask(f, 9, 16, level, Philox(1, "b"));
    // The state mirrors the dense values before compression, so after any mask change the
    // state must equal the values entry for entry.
    AlignedBuffer<float>& state = p.state("exp_avg");
    std::copy(p.values().begin(), p.values().end(), state.begin());
    p.sparsify(a, f, std::max(a.nnz(), b.nnz()));
    ASSERT_EQ(p.storage(), Storage::Compressed);
    EXPECT_EQ(p.storage_label(), name);
    ASSERT_EQ(p.state("exp_avg").size(), p.values().size());
    ASSERT_EQ(p.grad().size(), p.values().size());
    const float* values_at = p.values().data();
    const float* state_at = p.state("exp_avg").data();
    p.set_mask(b);
    EXPECT_TRUE(p.mask() == b);
    if (f.kind != FormatKind::NM) {
      EXPECT_EQ(p.values().data(), values_at) << "values moved within reserved capacity";
      EXPECT_EQ(p.state("exp_avg").data(), state_at) << "state moved within reserved capacity";
    }
    int64_t survivors = 0, grown = 0;
    const Matrix dense = p.to_dense();
    for (std::size_t i = 0; i < p.values().size(); ++i) ASSERT_EQ(p.state("exp_avg")[i], p.values()[i]) << i;
    for (int64_t r = 0; r < 9; ++r)
      for (int64_t c = 0; c < 16; ++c) {
        if (!b.at(r, c)) continue;
        if (a.at(r, c)) {
          ++survivors;
          EXPECT_NE(dense.at(r, c), 0.0f) << "survivor " << r << "," << c;
        } else {
          ++grown;
          EXPECT_EQ(dense.at(r, c), 0.0f) << "grown " << r << "," << c;
        }
      }
    EXPECT_GT(survivors, 0);
    EXPECT_GT(grown, 0);
  }
}

TEST(Parameter, StateDictRoundTripThroughAssignDense) {
  Parameter p("w", {6, 8});
  fill_random(p, 4);
  const Mask mask = random_mask(FormatSpec::bcsr(4), 6, 8, 0.5, Philox(9, "m"));
  p.sparsify(mask, FormatSpec::bcsr(4));
  const Matrix dense = p.to_dense();
  Parameter q("w", {6, 8});
  q.sparsify(mask, FormatSpec::bcsr(4));
  q.assign_dense(dense);
  const Matrix back = q.to_dense();
  for (int64_t i = 0; i < dense.size(); ++i) ASSERT_EQ(back.data()[i], dense.data()[i]);
}

TEST(Parameter, ErrorsNameTheParameter) {
  EXPECT_EQ(error_of([] { Parameter("x", {3, 0}); }), "parameter 'x': every dimension must be positive, got 0");
  EXPECT_EQ(error_of([] { Parameter("x", {}); }), "parameter 'x': needs 1 to 4 dimensions, got 0");
  Parameter p("fc.weight", {4, 4});
  EXPECT_EQ(error_of([&] { p.set_mask(Mask(4, 4, true)); }),
            "parameter 'fc.weight' is dense; sparsify it before changing its mask");
  EXPECT_EQ(error_of([&] { p.sparsify(Mask(4, 5, true)); }),
            "parameter 'fc.weight': the mask is [4 x 5], the parameter is [4 x 4]");
  Parameter v("ln.weight", {4});
  EXPECT_EQ(error_of([&] { v.sparsify(Mask(1, 4, true), FormatSpec::csr()); }),
            "parameter 'ln.weight': the csr format needs a matrix, the parameter has 1 dimensions");
  p.sparsify(Mask(4, 4, true));
  EXPECT_EQ(error_of([&] { p.sparsify(Mask(4, 4, true)); }), "parameter 'fc.weight' is already sparse (masked-dense)");
  EXPECT_EQ(error_of([&] { p.compressed(); }), "parameter 'fc.weight' is masked-dense, not compressed");
}

}  // namespace
}  // namespace sparsetrain
