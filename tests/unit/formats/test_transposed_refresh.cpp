// Backward-data reads the transposed companion W^T, whose values every backward call gathers
// into a buffer shared by all weights of the calling thread. After a mask update, after values
// change in place (an optimizer step) and after another weight's backward has used the buffer,
// dX = dY W must use the weight's current values, checked against a float64 product with the
// dense twin of the weight.
#include <gtest/gtest.h>

#include <cmath>
#include <string_view>
#include <vector>

#include "format_test_util.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/formats/sparse_weight.h"
#include "sparsetrain/ops/linear.h"

namespace sparsetrain {
namespace {

using namespace sparsetrain::testing;

constexpr int64_t kTokens = 70;  // one full token tile and one partial

Matrix random_signed(int64_t rows, int64_t cols, std::string_view name) {
  Matrix m(rows, cols);
  const Philox rng(3, name);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = rng.uniform(i) * 2.0f - 1.0f;
  return m;
}

// dX [T x cols] = dY [T x rows] * W, W taken from to_dense().
void expect_dx_matches(SparseWeight& w, const Matrix& x, const Matrix& dy, const char* when) {
  SCOPED_TRACE(when);
  LinearWorkspace ws;
  Matrix y(kTokens, w.rows()), dx(kTokens, w.cols());
  std::vector<float> dvalues(w.values().size());
  linear_forward(w, nullptr, x, y, ws);
  linear_backward(w, dy, ws, dx, dvalues.data(), nullptr);
  const Matrix wd = w.to_dense();
  for (int64_t t = 0; t < kTokens; ++t)
    for (int64_t k = 0; k < w.cols(); ++k) {
      double want = 0, abs_sum = 0;
      for (int64_t r = 0; r < w.rows(); ++r) {
        want += static_cast<double>(dy.at(t, r)) * wd.at(r, k);
        abs_sum += std::fabs(static_cast<double>(dy.at(t, r)) * wd.at(r, k));
      }
      ASSERT_NEAR(dx.at(t, k), want, 1e-5 * abs_sum + 1e-6) << "dX[" << t << "," << k << "]";
    }
}

TEST(TransposedRefresh, BackwardDataUsesValuesChangedAfterAMaskUpdate) {
  for (const FormatShape& s : kFormatShapes) {
    SCOPED_TRACE(describe(s));
    const FormatSpec f = FormatSpec::parse(s.format, "test");
    const double level = f.kind == FormatKind::NM ? 0.0 : 0.5;
    const Matrix x = random_signed(kTokens, s.cols, "x"), dy = random_signed(kTokens, s.rows, "dy");
    auto w = SparseWeight::from_dense(f, random_signed(s.rows, s.cols, "w"),
                                      random_mask(f, s.rows, s.cols, level, Philox(1, "before")));
    expect_dx_matches(*w, x, dy, "initial values");
    {
      // A wider weight of the same format fills the shared buffer with other values.
      const Matrix wide_x = random_signed(kTokens, s.cols * 2, "wide x");
      auto wide = SparseWeight::from_dense(f, random_signed(s.rows, s.cols * 2, "wide w"),
                                           random_mask(f, s.rows, s.cols * 2, level, Philox(1, "wide")));
      expect_dx_matches(*wide, wide_x, dy, "another weight");
      expect_dx_matches(*w, x, dy, "after another weight's backward");
    }
    w->update_mask(random_mask(f, s.rows, s.cols, level, Philox(1, "after")));
    expect_dx_matches(*w, x, dy, "after update_mask");
    // An optimizer step in place. Edge-block padding must stay zero, so block formats change
    // only their nonzero entries; CSR and N:M change every value, new connections included.
    const bool padded = f.kind == FormatKind::BlockSparse && f.block > 1;
    const Philox step(2, "step");
    std::size_t i = 0;
    for (float& v : w->values())
      if (!padded || !same_bits(v, 0.0f)) v = v * -2.0f + step.uniform(i++) - 0.5f;
    expect_dx_matches(*w, x, dy, "after values changed in place");
  }
}

}  // namespace
}  // namespace sparsetrain
