// The dense bf16 path (oneDNN matmul, bf16 operands, fp32 accumulation and outputs) against a
// float64 reference computed on the bf16-rounded inputs.
//
// The tolerance is that of fp32 accumulation alone. The operands are exactly bf16 (8 significant
// bits), so each product of two has at most 16 and is exact in fp32; what remains is the rounding
// of the fp32 sums. Summing n terms in fp32, in any order (oneDNN blocks K), each addition rounds
// its partial sum by at most 2^-24 of its magnitude, which is at most sum |term|; so
//   |got - exact| <= (n - 1) * 2^-24 * sum |a_i b_i|    (to first order in 2^-24)
// with n = K products, plus one term for the bias and one for beta * C. The reference sums in
// float64 (error ~2^-53 of the same). A wrong rounding of the fp32 inputs to bf16 (truncation, a
// missed tie) moves a product by up to 2^-8 of itself, far outside this bound.
//
// The same binary also runs with oneDNN's ISA capped (tests/unit/CMakeLists.txt) at avx512_core
// and avx2, where oneDNN 2.6 has no native bf16 (emulated at avx512_core, missing at avx2): every
// product runs on operands widened to fp32 through sgemm (the same bound: the products are exact
// either way).
#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "sparsetrain/core/bf16.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/kernels/dense_gemm.h"
#include "sparsetrain/kernels/dense_gemm_bf16.h"
#include "sparsetrain/kernels/dense_isa.h"
#include "sparsetrain/kernels/kernel_list.h"

namespace sparsetrain {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kUnit = 1.0 / (1 << 24);  // 2^-24, the unit roundoff of fp32

// Random values of either sign with magnitudes in [0.05, 1): nonzero, and normal after rounding.
float random_value(const Philox& rng, int64_t i) {
  const float u = rng.uniform(i);
  const float magnitude = 0.05f + 0.95f * std::fabs(u * 2.0f - 1.0f);
  return rng.uniform(i + (int64_t{1} << 40)) < 0.5f ? -magnitude : magnitude;
}

// An fp32 matrix [rows x cols] with row stride ld; the padding after each row is NaN, so a read
// of it would show in the results.
struct Operand {
  int64_t rows = 0, cols = 0, ld = 0;
  std::vector<float> data;
  Operand(int64_t r, int64_t c, int64_t pad, std::string_view name) : rows(r), cols(c), ld(c + pad) {
    data.assign(static_cast<std::size_t>(std::max<int64_t>(r * ld, 1)), kNaN);
    const Philox rng(11, name);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) data[i * ld + j] = random_value(rng, i * c + j);
  }
  float at(int64_t i, int64_t j) const { return data[i * ld + j]; }
  double rounded(int64_t i, int64_t j) const { return round_bf16(at(i, j)); }
  ConstMatrixView view() const { return {data.data(), rows, cols, ld}; }
  MatrixView view() { return {data.data(), rows, cols, ld}; }
};

// The bf16 copy of an operand, with its own (NaN-filled) padding.
struct Bf16Operand {
  int64_t rows = 0, cols = 0, ld = 0;
  std::vector<Bf16> data;
  explicit Bf16Operand(const Operand& f, int64_t pad) : rows(f.rows), cols(f.cols), ld(f.cols + pad) {
    data.assign(static_cast<std::size_t>(std::max<int64_t>(rows * ld, 1)), to_bf16(kNaN));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) data[i * ld + j] = to_bf16(f.at(i, j));
  }
  ConstBf16MatrixView view() const { return {data.data(), rows, cols, ld}; }
};

// An output [rows x cols] with row stride ld, filled with `fill` (NaN to check that a result
// overwrites every element); the padding is NaN and must stay so.
Operand output(int64_t rows, int64_t cols, int64_t pad, float fill) {
  Operand o(rows, cols, pad, "out");
  for (int64_t i = 0; i < rows; ++i) std::fill(o.data.begin() + i * o.ld, o.data.begin() + i * o.ld + cols, fill);
  return o;
}

// got [rows x cols] = alpha * sum_k a(i, k) b(k, j) + add(i, j), where the terms counted by `terms`
// (products plus the added values) are summed in fp32: |error| <= (terms - 1) 2^-24 sum |term|.
// add returns the exact addend and its count of terms (0 or 1).
template <typename A, typename B, typename Add>
void expect_product(const Operand& got, int64_t inner, double alpha, A a, B b, Add add, const std::string& what) {
  for (int64_t i = 0; i < got.rows; ++i) {
    for (int64_t j = 0; j < got.cols; ++j) {
      double want = 0, abs_sum = 0;
      for (int64_t k = 0; k < inner; ++k) {
        const double p = a(i, k) * b(k, j);
        want += p;
        abs_sum += std::fabs(p);
      }
      want *= alpha;
      abs_sum *= std::fabs(alpha);
      const auto [addend, added_terms] = add(i, j);
      want += addend;
      abs_sum += std::fabs(addend);
      const int64_t terms = inner + added_terms;
      // 1.01: second-order terms of the bound; 1e-37: nothing here underflows.
      const double tolerance = static_cast<double>(terms) * kUnit * abs_sum * 1.01 + 1e-37;
      ASSERT_NEAR(got.at(i, j), want, tolerance) << what << " [" << i << "," << j << "] of [" << got.rows << " x "
                                                 << got.cols << "], " << inner << " products";
    }
    for (int64_t j = got.cols; j < got.ld; ++j) ASSERT_TRUE(std::isnan(got.data[i * got.ld + j])) << what << " padding";
  }
}

auto no_add() {
  return [](int64_t, int64_t) { return std::pair<double, int>{0.0, 0}; };
}

// Whether oneDNN multiplies bf16 natively under the ISA in force (avx512_core_bf16 and up);
// elsewhere the products run on widened operands.
bool onednn_native_bf16() {
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

// Which path the products take here: oneDNN's bf16 matmul, or sgemm on widened operands.
std::string expected_path() { return onednn_native_bf16() ? "onednn_matmul" : "widened_sgemm"; }

TEST(DenseBf16, RunsOneDnnsBf16MatmulWhereItIsNativeAndWidenedOperandsElsewhere) {
  const Bf16 one = to_bf16(1.0f), two = to_bf16(2.0f);
  float c = 5.0f;
  gemm_bf16(false, false, 1, 1, 1, 3.0f, &one, 1, &two, 1, 0.5f, &c, 1);
  EXPECT_EQ(c, 8.5f);
  EXPECT_EQ(last_dispatch("dense_bf16"), expected_path()) << "oneDNN " << onednn_version() << " at ISA " << dense_isa();
}

struct Shape {
  int64_t tokens, in, out;
};

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << "T=" << s.tokens << " K=" << s.in << " N=" << s.out;
}

// Padding added to every operand's rows (0: contiguous).
class DenseLinearBf16 : public ::testing::TestWithParam<std::tuple<Shape, int64_t>> {};

TEST_P(DenseLinearBf16, ThreePassesMatchFloat64OnRoundedInputs) {
  const auto [shape, pad] = GetParam();
  const auto [t, in, out] = shape;
  const Operand x(t, in, pad, "x"), w(out, in, pad + 1, "w"), dy(t, out, pad, "dy"), bias(1, out, 0, "b");
  const Bf16Operand wb(w, pad), xb(x, pad), dyb(dy, pad + 2);
  auto xa = [&](int64_t i, int64_t k) { return x.rounded(i, k); };
  auto dya = [&](int64_t i, int64_t k) { return dy.rounded(i, k); };

  for (const bool with_bias : {false, true}) {
    Operand y = output(t, out, pad, kNaN);
    dense_linear_fwd_bf16(xb.view(), wb.view(), with_bias ? bias.data.data() : nullptr, y.view());
    expect_product(
        y, in, 1.0, xa, [&](int64_t k, int64_t j) { return w.rounded(j, k); },
        [&](int64_t, int64_t j) {
          return std::pair<double, int>{with_bias ? bias.at(0, j) : 0.0, with_bias ? 1 : 0};
        },
        with_bias ? "Y = X W^T + b" : "Y = X W^T");
  }

  Operand dx = output(t, in, pad, kNaN);
  dense_linear_bwd_data_bf16(dyb.view(), wb.view(), dx.view());
  expect_product(
      dx, out, 1.0, dya, [&](int64_t k, int64_t j) { return w.rounded(k, j); }, no_add(), "dX = dY W");

  // Overwrite over NaN, then accumulate onto random values.
  Operand dw = output(out, in, pad, kNaN);
  dense_linear_bwd_weights_bf16(dyb.view(), xb.view(), dw.view());
  auto dyt = [&](int64_t i, int64_t k) { return dy.rounded(k, i); };
  auto xt = [&](int64_t k, int64_t j) { return x.rounded(k, j); };
  expect_product(dw, t, 1.0, dyt, xt, no_add(), "dW = dY^T X");

  const Operand before(out, in, pad, "dw0");
  Operand acc = before;
  dense_linear_bwd_weights_bf16(dyb.view(), xb.view(), acc.view(), /*accumulate=*/true);
  expect_product(
      acc, t, 1.0, dyt, xt,
      [&](int64_t i, int64_t j) {
        return std::pair<double, int>{before.at(i, j), 1};
      },
      "dW += dY^T X");
}

// Odd sizes throughout; one token; K and T past oneDNN's blocking of the reduction (brgemm blocks
// K by 32-64 and a few hundred); the shapes of GPT layers at a few tokens.
INSTANTIATE_TEST_SUITE_P(Shapes, DenseLinearBf16,
                         ::testing::Combine(::testing::Values(Shape{37, 61, 29}, Shape{1, 37, 53}, Shape{67, 53, 37},
                                                              Shape{130, 96, 80}, Shape{257, 515, 33},
                                                              Shape{611, 47, 129}, Shape{96, 64, 256}),
                                            ::testing::Values(0, 3)));

// round_to_bf16: each element as to_bf16 rounds it, contiguous whatever the source's stride
// (whose NaN padding must not be read), and the column sums with column_sums' bits, fresh and
// accumulated; widths below and above a thread's share of columns.
TEST(RoundToBf16, RoundsEveryElementAndSumsColumnsAsTheFp32Path) {
  for (const auto& [rows, cols, pad] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {37, 61, 3}, {1, 1, 0}, {129, 200, 5}, {0, 7, 1}, {64, 1000, 0}, {3, 0, 2}}) {
    const Operand src(rows, cols, pad, "src"), before(1, cols, 0, "sums0");
    Bf16Matrix dst;
    dst.values.assign(3, to_bf16(kNaN));  // a buffer of the wrong size from an earlier call
    std::vector<float> sums(static_cast<std::size_t>(cols), kNaN), accumulated = before.data;
    round_to_bf16(src.view(), dst, sums.data());
    ASSERT_EQ(dst.rows, rows);
    ASSERT_EQ(dst.cols, cols);
    ASSERT_EQ(dst.view().ld, cols);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        ASSERT_EQ(dst.view().row(i)[j].bits, to_bf16(src.at(i, j)).bits)
            << "[" << i << "," << j << "] of " << rows << " x " << cols;
    std::vector<float> want(static_cast<std::size_t>(cols), kNaN), want_accumulated = before.data;
    column_sums(src.view(), want.data(), false);
    column_sums(src.view(), want_accumulated.data(), true);
    Bf16Matrix again;
    round_to_bf16(src.view(), again, accumulated.data(), /*accumulate=*/true);
    for (int64_t j = 0; j < cols; ++j) {
      ASSERT_EQ(std::bit_cast<uint32_t>(sums[j]), std::bit_cast<uint32_t>(want[j])) << "sum of column " << j;
      ASSERT_EQ(std::bit_cast<uint32_t>(accumulated[j]), std::bit_cast<uint32_t>(want_accumulated[j]))
          << "accumulated sum of column " << j;
    }
    if (rows > 0 && cols > 0) {
      ASSERT_NE(want[0], 0.0f);  // nonzero data: the sums are not vacuous
    }
  }
}

// gemm_bf16 in every transpose, with alpha, overwriting (beta = 0, over NaN) and accumulating.
struct GemmCase {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
  int64_t pad;
};

std::ostream& operator<<(std::ostream& os, const GemmCase& c) {
  return os << (c.trans_a ? "T" : "N") << (c.trans_b ? "T" : "N") << " m=" << c.m << " n=" << c.n << " k=" << c.k
            << " alpha=" << c.alpha << " beta=" << c.beta << " pad=" << c.pad;
}

class GemmBf16 : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmBf16, MatchesFloat64OnRoundedInputs) {
  const GemmCase p = GetParam();
  // Stored shapes: A is [m x k], or [k x m] when transposed; likewise B.
  const Operand af(p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k, 0, "a");
  const Operand bf(p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n, 0, "b");
  const Bf16Operand a(af, p.pad), b(bf, p.pad + 2);
  const Operand c0(p.m, p.n, p.pad, "c");
  Operand c = p.beta == 0.0f ? output(p.m, p.n, p.pad, kNaN) : c0;
  gemm_bf16(p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, a.data.data(), a.ld, b.data.data(), b.ld, p.beta,
            c.data.data(), c.ld);
  expect_product(
      c, p.k, p.alpha, [&](int64_t i, int64_t k) { return p.trans_a ? af.rounded(k, i) : af.rounded(i, k); },
      [&](int64_t k, int64_t j) { return p.trans_b ? bf.rounded(j, k) : bf.rounded(k, j); },
      [&](int64_t i, int64_t j) {
        return std::pair<double, int>{p.beta == 0.0f ? 0.0 : static_cast<double>(p.beta) * c0.at(i, j),
                                      p.beta == 0.0f ? 0 : 1};
      },
      "C");
}

std::vector<GemmCase> gemm_cases() {
  std::vector<GemmCase> cases;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      cases.push_back({ta, tb, 37, 29, 61, 1.0f, 0.0f, 0});
      cases.push_back({ta, tb, 37, 29, 61, 1.0f, 1.0f, 3});
      cases.push_back({ta, tb, 45, 70, 130, 0.5f, 0.75f, 1});
      cases.push_back({ta, tb, 1, 33, 17, 2.0f, 0.0f, 5});
      cases.push_back({ta, tb, 200, 1, 300, 1.0f, 1.0f, 0});
    }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, GemmBf16, ::testing::ValuesIn(gemm_cases()));

TEST(GemmBf16Edges, EmptyInnerDimensionScalesC) {
  // No oneDNN call: runs under any ISA.
  std::vector<float> c = {1.0f, 2.0f, kNaN, 3.0f, 4.0f, kNaN};  // [2 x 2], ldc 3
  gemm_bf16(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c.data(), 3);
  EXPECT_EQ(c[0], 0.5f);
  EXPECT_EQ(c[4], 2.0f);
  EXPECT_TRUE(std::isnan(c[2]));
  gemm_bf16(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, c.data(), 3);
  EXPECT_EQ(c[0], 0.0f);
  EXPECT_EQ(c[4], 0.0f);
  gemm_bf16(false, false, 0, 2, 5, 1.0f, nullptr, 5, nullptr, 2, 0.0f, nullptr, 2);  // nothing to do
}

// Repeated calls reuse the thread's primitive; a second shape and a second thread get their own.
TEST(GemmBf16Edges, RepeatedAndConcurrentCallsGiveTheSameValues) {
  const Operand x(97, 83, 0, "x"), w(41, 83, 0, "w");
  const Bf16Operand wb(w, 0), xb(x, 0);
  Operand first = output(97, 41, 0, kNaN);
  dense_linear_fwd_bf16(xb.view(), wb.view(), nullptr, first.view());
  auto same_as_first = [&](const Operand& y) {
    for (int64_t i = 0; i < y.rows * y.cols; ++i)
      if (!(y.data[i] == first.data[i])) return false;
    return true;
  };
  for (int r = 0; r < 3; ++r) {
    Operand y = output(97, 41, 0, kNaN);
    dense_linear_fwd_bf16(xb.view(), wb.view(), nullptr, y.view());
    ASSERT_TRUE(same_as_first(y)) << "call " << r;
  }
  // Other threads: values within the bound (oneDNN may split the work differently for another
  // thread count, which may change the summation order).
  std::vector<Operand> results(2, output(97, 41, 0, kNaN));
  std::vector<std::thread> threads;
  for (auto& y : results)
    threads.emplace_back([&] {
      for (int r = 0; r < 3; ++r) dense_linear_fwd_bf16(xb.view(), wb.view(), nullptr, y.view());
    });
  for (auto& th : threads) th.join();
  for (const Operand& y : results)
    expect_product(
        y, 83, 1.0, [&](int64_t i, int64_t k) { return x.rounded(i, k); },
        [&](int64_t k, int64_t j) { return w.rounded(j, k); }, no_add(), "Y from another thread");
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DenseBf16Errors, ShapesThatDoNotFitNameTheProductAndShapes) {
  const Operand x32(4, 5, 0, "x"), dy32(4, 3, 0, "dy"), w32(3, 6, 0, "w");
  const Bf16Operand x(x32, 0), dy(dy32, 0), w(w32, 0);
  Operand y = output(4, 3, 0, 0.0f), dx = output(4, 5, 0, 0.0f), dw = output(3, 5, 0, 0.0f);
  std::string e = error_of([&] { dense_linear_fwd_bf16(x.view(), w.view(), nullptr, y.view()); });
  EXPECT_NE(e.find("dense_linear_fwd_bf16"), std::string::npos) << e;
  EXPECT_NE(e.find("X [4 x 5]"), std::string::npos) << e;
  EXPECT_NE(e.find("W [3 x 6]"), std::string::npos) << e;
  e = error_of([&] { dense_linear_bwd_data_bf16(dy.view(), w.view(), dx.view()); });
  EXPECT_NE(e.find("dense_linear_bwd_data_bf16"), std::string::npos) << e;
  EXPECT_NE(e.find("dX [4 x 5]"), std::string::npos) << e;
  e = error_of([&] { dense_linear_bwd_weights_bf16(dy.view(), x.view(), MatrixView{dw.data.data(), 3, 4, 5}); });
  EXPECT_NE(e.find("dense_linear_bwd_weights_bf16"), std::string::npos) << e;
  EXPECT_NE(e.find("dW [3 x 4]"), std::string::npos) << e;
  const Bf16 v{};
  float c = 0;
  e = error_of([&] { gemm_bf16(false, true, 1, 1, 4, 1.0f, &v, 4, &v, 3, 0.0f, &c, 1); });
  EXPECT_NE(e.find("gemm_bf16"), std::string::npos) << e;
  EXPECT_NE(e.find("ldb 3"), std::string::npos) << e;
}

}  // namespace
}  // namespace sparsetrain
