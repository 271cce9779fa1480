// Layer norm against a float64 reference: forward, saved statistics, backward (analytic and by
// central differences), accumulation into existing gradients, strided views and thread-count
// independence.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "layer_ops_testing.h"
#include "sparsetrain/ops/layer_norm.h"

namespace sparsetrain {
namespace {

using namespace layer_testing;

constexpr float kEps = 1e-5f;

struct LnRef {
  std::vector<double> y, mean, rstd;
};

// x [T x C], gamma, beta [C], all float64.
LnRef ln_forward_ref(const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& beta,
                     int64_t T, int64_t C) {
  LnRef r{std::vector<double>(x.size()), std::vector<double>(T), std::vector<double>(T)};
  for (int64_t t = 0; t < T; ++t) {
    double m = 0.0;
    for (int64_t c = 0; c < C; ++c) m += x[t * C + c];
    m /= static_cast<double>(C);
    double v = 0.0;
    for (int64_t c = 0; c < C; ++c) v += (x[t * C + c] - m) * (x[t * C + c] - m);
    v /= static_cast<double>(C);
    const double rs = 1.0 / std::sqrt(v + kEps);
    for (int64_t c = 0; c < C; ++c) r.y[t * C + c] = (x[t * C + c] - m) * rs * gamma[c] + beta[c];
    r.mean[t] = m;
    r.rstd[t] = rs;
  }
  return r;
}

struct LnGrads {
  std::vector<double> dx, dgamma, dbeta;
};

LnGrads ln_backward_ref(const std::vector<double>& dy, const std::vector<double>& x, const std::vector<double>& gamma,
                        int64_t T, int64_t C) {
  const LnRef f = ln_forward_ref(x, gamma, std::vector<double>(C, 0.0), T, C);
  LnGrads g{std::vector<double>(x.size()), std::vector<double>(C), std::vector<double>(C)};
  for (int64_t t = 0; t < T; ++t) {
    double g_mean = 0.0, gx_mean = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      const double xhat = (x[t * C + c] - f.mean[t]) * f.rstd[t];
      g_mean += dy[t * C + c] * gamma[c];
      gx_mean += dy[t * C + c] * gamma[c] * xhat;
      g.dgamma[c] += dy[t * C + c] * xhat;
      g.dbeta[c] += dy[t * C + c];
    }
    g_mean /= static_cast<double>(C);
    gx_mean /= static_cast<double>(C);
    for (int64_t c = 0; c < C; ++c) {
      const double xhat = (x[t * C + c] - f.mean[t]) * f.rstd[t];
      g.dx[t * C + c] = f.rstd[t] * (dy[t * C + c] * gamma[c] - g_mean - xhat * gx_mean);
    }
  }
  return g;
}

struct Problem {
  int64_t T, C;
  Padded x, dy, y, dx;
  std::vector<float> gamma, beta, dgamma, dbeta, mean, rstd;
  std::vector<double> dx0, dgamma0, dbeta0;  // initial gradient contents

  Problem(int64_t t, int64_t c, uint64_t seed)
      : T(t),
        C(c),
        x(t, c, 3),
        dy(t, c, 2),
        y(t, c, 1, kNaN),
        dx(t, c, 5),
        gamma(c),
        beta(c),
        dgamma(c),
        dbeta(c),
        mean(t, kNaN),
        rstd(t, kNaN) {
    x.fill_nonzero(Philox(seed, "ln.x"));
    // An offset per row, so the mean is not ~0 and the variance is computed about it.
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < C; ++j) x.at(i, j) += 3.0f + static_cast<float>(i % 4);
    dy.fill_nonzero(Philox(seed, "ln.dy"));
    dx.fill_nonzero(Philox(seed, "ln.dx0"));
    fill_nonzero(gamma.data(), C, Philox(seed, "ln.gamma"));
    fill_nonzero(beta.data(), C, Philox(seed, "ln.beta"));
    fill_nonzero(dgamma.data(), C, Philox(seed, "ln.dgamma0"));
    fill_nonzero(dbeta.data(), C, Philox(seed, "ln.dbeta0"));
    dx0 = dx.to_double();
    dgamma0 = to_double(dgamma.data(), C);
    dbeta0 = to_double(dbeta.data(), C);
  }

  void forward() { layer_norm_forward(x.cview(), gamma.data(), beta.data(), kEps, y.view(), mean.data(), rstd.data()); }
  void backward() {
    layer_norm_backward(dy.cview(), x.cview(), gamma.data(), mean.data(), rstd.data(), dx.view(), dgamma.data(),
                        dbeta.data());
  }
};

struct Shape {
  int64_t T, C;
};
constexpr Shape kShapes[] = {{1, 5}, {3, 12}, {17, 33}, {2, 64}, {40, 130}, {70, 24}};

std::string name_of(Shape s) { return "T=" + std::to_string(s.T) + " C=" + std::to_string(s.C); }

TEST(LayerNorm, ForwardMatchesFloat64Reference) {
  for (Shape s : kShapes) {
    SCOPED_TRACE(name_of(s));
    Problem p(s.T, s.C, static_cast<uint64_t>(s.T * 100 + s.C));
    p.forward();
    const LnRef ref =
        ln_forward_ref(p.x.to_double(), to_double(p.gamma.data(), s.C), to_double(p.beta.data(), s.C), s.T, s.C);
    for (int64_t t = 0; t < s.T; ++t) {
      ASSERT_TRUE(close(p.mean[t], ref.mean[t], 1e-6, 0.0)) << "mean " << t;
      ASSERT_TRUE(close(p.rstd[t], ref.rstd[t], 1e-6, 0.0)) << "rstd " << t;
      for (int64_t c = 0; c < s.C; ++c)
        ASSERT_TRUE(close(p.y.at(t, c), ref.y[t * s.C + c], 1e-5, 1e-5)) << "y " << t << "," << c;
    }
    EXPECT_TRUE(p.y.padding_untouched());
  }
}

TEST(LayerNorm, BackwardMatchesFloat64ReferenceAndAccumulates) {
  for (Shape s : kShapes) {
    SCOPED_TRACE(name_of(s));
    Problem p(s.T, s.C, static_cast<uint64_t>(s.T * 100 + s.C));
    p.forward();
    p.backward();
    const LnGrads g = ln_backward_ref(p.dy.to_double(), p.x.to_double(), to_double(p.gamma.data(), s.C), s.T, s.C);
    const double sx = max_abs(g.dx), sg = max_abs(g.dgamma), sb = max_abs(g.dbeta);
    for (int64_t t = 0; t < s.T; ++t)
      for (int64_t c = 0; c < s.C; ++c) {
        const size_t i = static_cast<size_t>(t * s.C + c);
        ASSERT_TRUE(close(p.dx.at(t, c), p.dx0[i] + g.dx[i], 1e-5, 1e-5 * sx + 1e-6)) << "dx " << t << "," << c;
      }
    for (int64_t c = 0; c < s.C; ++c) {
      ASSERT_TRUE(close(p.dgamma[c], p.dgamma0[c] + g.dgamma[c], 1e-5, 1e-5 * sg + 1e-6)) << "dgamma " << c;
      ASSERT_TRUE(close(p.dbeta[c], p.dbeta0[c] + g.dbeta[c], 1e-5, 1e-5 * sb + 1e-6)) << "dbeta " << c;
    }
    EXPECT_TRUE(p.dx.padding_untouched());
  }
}

// accumulate_dx = false ignores whatever dx holds (NaN here) and gives the bits of accumulating
// into a zeroed dx; dgamma and dbeta still accumulate.
TEST(LayerNorm, BackwardOverwritingDxMatchesAccumulatingIntoZeros) {
  for (Shape s : kShapes) {
    SCOPED_TRACE(name_of(s));
    Problem zeroed(s.T, s.C, static_cast<uint64_t>(s.T * 100 + s.C + 2));
    Problem poisoned(s.T, s.C, static_cast<uint64_t>(s.T * 100 + s.C + 2));
    for (int64_t t = 0; t < s.T; ++t)
      for (int64_t c = 0; c < s.C; ++c) {
        zeroed.dx.at(t, c) = 0.0f;
        poisoned.dx.at(t, c) = kNaN;
      }
    zeroed.forward();
    zeroed.backward();
    poisoned.forward();
    layer_norm_backward(poisoned.dy.cview(), poisoned.x.cview(), poisoned.gamma.data(), poisoned.mean.data(),
                        poisoned.rstd.data(), poisoned.dx.view(), poisoned.dgamma.data(), poisoned.dbeta.data(),
                        /*accumulate_dx=*/false);
    for (int64_t t = 0; t < s.T; ++t)
      for (int64_t c = 0; c < s.C; ++c)
        ASSERT_EQ(std::bit_cast<uint32_t>(poisoned.dx.at(t, c)), std::bit_cast<uint32_t>(zeroed.dx.at(t, c)))
            << "dx " << t << "," << c;
    for (int64_t c = 0; c < s.C; ++c) {
      ASSERT_EQ(poisoned.dgamma[c], zeroed.dgamma[c]) << "dgamma " << c;
      ASSERT_EQ(poisoned.dbeta[c], zeroed.dbeta[c]) << "dbeta " << c;
    }
    EXPECT_TRUE(poisoned.dx.padding_untouched());
  }
}

// L = sum(y * R) with R = dy, differentiated by central differences of the float64 forward with
// respect to every element of x, gamma and beta (every 7th of x for the largest shape).
TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  for (Shape s : kShapes) {
    SCOPED_TRACE(name_of(s));
    Problem p(s.T, s.C, static_cast<uint64_t>(s.T * 100 + s.C + 1));
    p.forward();
    p.backward();
    std::vector<double> x = p.x.to_double(), gamma = to_double(p.gamma.data(), s.C),
                        beta = to_double(p.beta.data(), s.C);
    const std::vector<double> r = p.dy.to_double();
    auto loss = [&] {
      const LnRef f = ln_forward_ref(x, gamma, beta, s.T, s.C);
      double l = 0.0;
      for (size_t i = 0; i < r.size(); ++i) l += f.y[i] * r[i];
      return l;
    };
    // The analytic gradient (float result minus the initial contents) against the differences.
    std::vector<double> fd_x(x.size()), fd_g(s.C), fd_b(s.C);
    const int64_t stride = s.T * s.C > 2000 ? 7 : 1;
    for (size_t i = 0; i < x.size(); i += static_cast<size_t>(stride)) fd_x[i] = central_diff(x, i, loss);
    for (size_t c = 0; c < static_cast<size_t>(s.C); ++c) {
      fd_g[c] = central_diff(gamma, c, loss);
      fd_b[c] = central_diff(beta, c, loss);
    }
    const double sx = max_abs(fd_x), sg = max_abs(fd_g), sb = max_abs(fd_b);
    ASSERT_GT(sx, 0.0);
    for (size_t i = 0; i < x.size(); i += static_cast<size_t>(stride)) {
      const int64_t t = static_cast<int64_t>(i) / s.C, c = static_cast<int64_t>(i) % s.C;
      ASSERT_TRUE(close(p.dx.at(t, c) - p.dx0[i], fd_x[i], 1e-4, 1e-4 * sx)) << "dx " << t << "," << c;
    }
    for (size_t c = 0; c < static_cast<size_t>(s.C); ++c) {
      ASSERT_TRUE(close(p.dgamma[c] - p.dgamma0[c], fd_g[c], 1e-4, 1e-4 * sg)) << "dgamma " << c;
      ASSERT_TRUE(close(p.dbeta[c] - p.dbeta0[c], fd_b[c], 1e-4, 1e-4 * sb)) << "dbeta " << c;
    }
  }
}

TEST(LayerNorm, ResultsDoNotDependOnTheThreadCount) {
  auto run = [](int threads) {
    ThreadCount guard(threads);
    Problem p(97, 300, 42);
    p.forward();
    p.backward();
    return p;
  };
  const Problem one = run(1), two = run(2);
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && bitwise_equal(a.data(), b.data(), a.size());
  };
  EXPECT_TRUE(same(one.y.storage, two.y.storage));
  EXPECT_TRUE(same(one.mean, two.mean));
  EXPECT_TRUE(same(one.rstd, two.rstd));
  EXPECT_TRUE(same(one.dx.storage, two.dx.storage));
  EXPECT_TRUE(same(one.dgamma, two.dgamma));
  EXPECT_TRUE(same(one.dbeta, two.dbeta));
}

TEST(LayerNorm, ConstantRowNormalizesToBeta) {
  Problem p(3, 12, 9);
  for (int64_t c = 0; c < 12; ++c) p.x.at(1, c) = 2.5f;
  p.forward();
  EXPECT_FLOAT_EQ(p.mean[1], 2.5f);
  EXPECT_TRUE(close(p.rstd[1], 1.0 / std::sqrt(static_cast<double>(kEps)), 1e-6, 0.0));
  for (int64_t c = 0; c < 12; ++c) EXPECT_EQ(p.y.at(1, c), p.beta[c]) << c;
}

TEST(LayerNorm, NaNInputPoisonsOnlyItsRow) {
  Problem p(3, 12, 10);
  p.x.at(1, 4) = kNaN;
  p.forward();
  for (int64_t c = 0; c < 12; ++c) {
    EXPECT_TRUE(std::isnan(p.y.at(1, c))) << c;
    EXPECT_FALSE(std::isnan(p.y.at(0, c))) << c;
    EXPECT_FALSE(std::isnan(p.y.at(2, c))) << c;
  }
  EXPECT_TRUE(std::isnan(p.mean[1]));
}

}  // namespace
}  // namespace sparsetrain
