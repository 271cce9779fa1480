// The dense path (oneDNN) against a float64 reference: the engine's dense linear layer, the
// baseline of every benchmark, and the dense weight gradient that RigL grows by.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/kernels/dense_gemm.h"
#include "sparsetrain/ops/linear.h"

namespace sparsetrain {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Matrix random_matrix(int64_t rows, int64_t cols, std::string_view name) {
  Matrix m(rows, cols);
  Philox rng(7, name);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = rng.uniform(i) * 2.0f - 1.0f;
  return m;
}

// out[i][j] = sum_k a(i, k) * b(k, j) in float64, with the sum of absolute products for the bound.
template <typename A, typename B>
void expect_product(const Matrix& got, int64_t rows, int64_t cols, int64_t inner, A a, B b, const float* add,
                    const std::string& what) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double want = add != nullptr ? add[j] : 0.0, abs_sum = std::fabs(want);
      for (int64_t k = 0; k < inner; ++k) {
        want += static_cast<double>(a(i, k)) * b(k, j);
        abs_sum += std::fabs(static_cast<double>(a(i, k)) * b(k, j));
      }
      ASSERT_NEAR(got.at(i, j), want, (static_cast<double>(inner) * 1.2e-7 + 1e-6) * abs_sum + 1e-30) << what << " [" << i << "," << j << "]";
    }
}

struct Shape {
  int64_t tokens, in, out;
};

class DenseLinear : public ::testing::TestWithParam<Shape> {};

TEST_P(DenseLinear, ThreePassesMatchFloat64) {
  const auto [t, in, out] = GetParam();
  const Matrix x = random_matrix(t, in, "x"), w = random_matrix(out, in, "w"), dy = random_matrix(t, out, "dy");
  const Matrix bias = random_matrix(1, out, "b");
  Matrix y(t, out, kNaN), dx(t, in, kNaN), dw(out, in, kNaN);
  std::vector<float> db(out, kNaN);
  dense_linear_fwd(x, w, bias.data(), y);
  dense_linear_bwd_data(dy, w, dx);
  dense_linear_bwd_weights(dy, x, dw, db.data());
  auto xa = [&](int64_t i, int64_t k) { return x.at(i, k); };
  expect_product(y, t, out, in, xa, [&](int64_t k, int64_t j) { return w.at(j, k); }, bias.data(), "Y");
  expect_product(dx, t, in, out, [&](int64_t i, int64_t k) { return dy.at(i, k); },
                 [&](int64_t k, int64_t j) { return w.at(k, j); }, nullptr, "dX");
  expect_product(dw, out, in, t, [&](int64_t i, int64_t k) { return dy.at(k, i); },
                 [&](int64_t k, int64_t j) { return x.at(k, j); }, nullptr, "dW");
  for (int64_t j = 0; j < out; ++j) {
    double want = 0, abs_sum = 0;
    for (int64_t i = 0; i < t; ++i) {
      want += dy.at(i, j);
      abs_sum += std::fabs(dy.at(i, j));
    }
    ASSERT_NEAR(db[j], want, (static_cast<double>(t) * 1.2e-7 + 1e-6) * abs_sum) << "db[" << j << "]";
  }

  // RigL's dense gradient is the same product, and accumulation adds to what is there.
  Matrix dense_grad(out, in, kNaN);
  linear_dense_weight_grad(dy, x, dense_grad);
  for (int64_t i = 0; i < dw.size(); ++i) ASSERT_EQ(dense_grad.data()[i], dw.data()[i]);
  Matrix acc = dw.clone();
  std::vector<float> db_acc = db;
  dense_linear_bwd_weights(dy, x, acc, db_acc.data(), true);
  for (int64_t i = 0; i < dw.size(); ++i) ASSERT_NEAR(acc.data()[i], 2.0f * dw.data()[i], 1e-5f * (1 + std::fabs(dw.data()[i])));
  for (int64_t j = 0; j < out; ++j) ASSERT_NEAR(db_acc[j], 2.0f * db[j], 1e-5f * (1 + std::fabs(db[j])));
}

// From the fifth on, enough tokens for the transposed forms (dense_gemm.h): narrowing and square
// layers take the forward on a transposed copy of W; layers widening kTransposedGradWidening times
// take the transposed weight gradient, the last over more outputs than one chunk.
INSTANTIATE_TEST_SUITE_P(Shapes, DenseLinear,
                         ::testing::Values(Shape{1, 37, 53}, Shape{67, 53, 37}, Shape{130, 96, 80}, Shape{64, 16, 16},
                                           Shape{kTransposedForwardTokens + 45, 53, 37},
                                           Shape{kTransposedForwardTokens, 40, 40},
                                           Shape{kTransposedForwardTokens + 1, 37, 53},
                                           Shape{kTransposedGradTokens + 3, 13, 53},
                                           Shape{kTransposedGradTokens, 3, kTransposedGradChunk + 37}));

// Row strides wider than the rows, on every operand, through each form (the direct ones at few
// tokens, the transposed ones at many): the same values as contiguous operands, padding untouched.
TEST(DenseLinear, StridedOperandsGiveTheContiguousResults) {
  constexpr int64_t kPad = 3;
  for (const Shape shape :
       {Shape{67, 53, 37}, Shape{kTransposedForwardTokens + 7, 53, 37}, Shape{kTransposedGradTokens + 5, 13, 61}}) {
    const auto [t, in, out] = shape;
    const Matrix x = random_matrix(t, in, "x"), w = random_matrix(out, in, "w"), dy = random_matrix(t, out, "dy");
    Matrix y(t, out), dw(out, in);
    dense_linear_fwd(x, w, nullptr, y);
    dense_linear_bwd_weights(dy, x, dw, nullptr);
    // Wide copies: the same values in the first cols of each row, NaN after them.
    auto wide = [&](const Matrix& m) {
      Matrix copy(m.rows(), m.cols() + kPad, kNaN);
      for (int64_t r = 0; r < m.rows(); ++r)
        std::copy(m.data() + r * m.cols(), m.data() + (r + 1) * m.cols(), copy.data() + r * copy.cols());
      return copy;
    };
    auto view = [&](Matrix& m, int64_t cols) { return MatrixView{m.data(), m.rows(), cols, m.cols()}; };
    Matrix xw = wide(x), ww = wide(w), dyw = wide(dy), yw(t, out + kPad, kNaN), dww(out, in + kPad, kNaN);
    dense_linear_fwd(view(xw, in), view(ww, in), nullptr, view(yw, out));
    dense_linear_bwd_weights(view(dyw, out), view(xw, in), view(dww, in), nullptr);
    auto expect_same = [&](const Matrix& want, const Matrix& got, const char* what) {
      for (int64_t r = 0; r < want.rows(); ++r) {
        for (int64_t c = 0; c < want.cols(); ++c)
          ASSERT_NEAR(got.at(r, c), want.at(r, c), 1e-5f * (1.0f + std::fabs(want.at(r, c))))
              << what << " T=" << shape.tokens << " [" << r << "," << c << "]";
        for (int64_t c = want.cols(); c < got.cols(); ++c) ASSERT_TRUE(std::isnan(got.at(r, c))) << what << " padding";
      }
    };
    expect_same(y, yw, "Y");
    expect_same(dw, dww, "dW");
  }
}

TEST(DenseLinear, ShapeMismatchIsAnErrorNamingTheShapes) {
  Matrix x(4, 5), w(3, 6), y(4, 3);
  try {
    dense_linear_fwd(x, w, nullptr, y);
    FAIL() << "no error for X [4 x 5] with W [3 x 6]";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[4 x 5]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[3 x 6]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sparsetrain
