#include "sparsetrain/ops/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/profile.h"
#include "sparsetrain/ops/fast_math.h"

namespace sparsetrain {

namespace {

// Rows (or channels) per part below which a second thread costs more than it saves.
constexpr int64_t kMinRowsPerThread = 16;
constexpr int64_t kMinChannelsPerThread = 64;
// Tokens per block of the backward pass's dgamma / dbeta partial sums: a parallel unit as large
// as kMinRowsPerThread, with the partials (two doubles per channel per block) a small fraction of
// the rows they summarize.
constexpr int64_t kStatRows = 32;

int parts_for(int64_t items, int64_t min_per_part) {
  return static_cast<int>(std::clamp<int64_t>(items / min_per_part, 1, 1 << 16));
}

void check_same_shape(const char* op, const char* a_name, ConstMatrixView a, const char* b_name, ConstMatrixView b) {
  if (a.rows != b.rows || a.cols != b.cols)
    fail("{}: {} is [{} x {}] but {} is [{} x {}]; they must have the same shape", op, a_name, a.rows, a.cols, b_name,
         b.rows, b.cols);
}

}  // namespace

// x, y [T x C]; gamma, beta [C]; mean, rstd [T].
void layer_norm_forward(ConstMatrixView x, const float* gamma, const float* beta, float eps, MatrixView y, float* mean,
                        float* rstd) {
  const ProfileScope profile("layer norm");
  check_same_shape("layer_norm_forward", "x", x, "y", y);
  const int64_t T = x.rows, C = x.cols;
  if (C == 0) fail("layer_norm_forward: x has no columns; expected at least one feature per row");
  parallel_run(parts_for(T, kMinRowsPerThread), [&](int ith, int nth) {
    int64_t t0 = 0, t1 = 0;
    balance_even(T, ith, nth, t0, t1);
    for (int64_t t = t0; t < t1; ++t) {
      const float* xt = x.row(t);
      // Two passes in double: the mean, then the biased variance about it (no cancellation).
      const double m = row_sum(xt, C) / static_cast<double>(C);
      const double var = row_sum_squared_deviation(xt, C, m) / static_cast<double>(C);
      const float mf = static_cast<float>(m);
      const float rf = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
      float* yt = y.row(t);
      for (int64_t c = 0; c < C; ++c) yt[c] = (xt[c] - mf) * rf * gamma[c] + beta[c];
      mean[t] = mf;
      rstd[t] = rf;
    }
  });
}

// With xhat = (x - mean) * rstd and g = dy * gamma (the gradient at xhat):
//   dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat))
//   dgamma = sum_t dy * xhat,  dbeta = sum_t dy
void layer_norm_backward(ConstMatrixView dy, ConstMatrixView x, const float* gamma, const float* mean,
                         const float* rstd, MatrixView dx, float* dgamma, float* dbeta, bool accumulate_dx) {
  const ProfileScope profile("layer norm");
  check_same_shape("layer_norm_backward", "dy", dy, "x", x);
  check_same_shape("layer_norm_backward", "dx", dx, "x", x);
  const int64_t T = x.rows, C = x.cols;

  // dx: rows are independent. dgamma and dbeta come from the same pass: each block of
  // kStatRows tokens sums its rows in token order (double), and the blocks are added in block
  // order below. Blocks, not threads, fix the order, so the sums do not depend on the thread
  // count, and x and dy are read once.
  const int64_t blocks = (T + kStatRows - 1) / kStatRows;
  // [blocks][2][C]: dgamma's, then dbeta's. Kept by the calling thread; the workers reach it
  // through `partial` (a thread_local named inside them would be their own).
  thread_local std::vector<double> partial_sums;
  partial_sums.assign(static_cast<size_t>(blocks * 2 * C), 0.0);
  double* const partial = partial_sums.data();
  // `accumulate` as a type, so each form of the dx loop is compiled (and vectorized) on its own.
  auto rows = [&](int64_t t0, int64_t t1, auto accumulate) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* xt = x.row(t);
      const float* dyt = dy.row(t);
      const float m = mean[t], r = rstd[t];
      // Both sums in double, in lane_sum's fixed order (vectorized, same bits on every ISA). One
      // loop holding both sets of partial sums stayed scalar.
      const double g_sum = lane_sum(C, [=](int64_t i) { return static_cast<double>(dyt[i] * gamma[i]); });
      const double gx_sum = lane_sum(C, [=](int64_t i) {
        const float xhat = (xt[i] - m) * r;
        return static_cast<double>(dyt[i] * gamma[i]) * xhat;
      });
      const float g_mean = static_cast<float>(g_sum / static_cast<double>(C));
      const float gx_mean = static_cast<float>(gx_sum / static_cast<double>(C));
      float* dxt = dx.row(t);
      double* dg = partial + t / kStatRows * 2 * C;
      double* db = dg + C;
      for (int64_t c = 0; c < C; ++c) {
        const float xhat = (xt[c] - m) * r;
        const float g = dyt[c] * gamma[c];
        dxt[c] = (accumulate ? dxt[c] : 0.0f) + r * (g - g_mean - xhat * gx_mean);
        dg[c] += static_cast<double>(dyt[c]) * xhat;
        db[c] += dyt[c];
      }
    }
  };
  parallel_run(parts_for(blocks, 1), [&](int ith, int nth) {
    int64_t b0 = 0, b1 = 0;
    balance_even(blocks, ith, nth, b0, b1);
    const int64_t t0 = b0 * kStatRows, t1 = std::min(T, b1 * kStatRows);
    accumulate_dx ? rows(t0, t1, std::true_type{}) : rows(t0, t1, std::false_type{});
  });

  parallel_run(parts_for(C, kMinChannelsPerThread), [&](int ith, int nth) {
    int64_t c0 = 0, c1 = 0;
    balance_even(C, ith, nth, c0, c1);
    for (int64_t c = c0; c < c1; ++c) {
      double dg = 0.0, db = 0.0;
      for (int64_t b = 0; b < blocks; ++b) {
        dg += partial[(b * 2) * C + c];
        db += partial[(b * 2 + 1) * C + c];
      }
      dgamma[c] += static_cast<float>(dg);
      dbeta[c] += static_cast<float>(db);
    }
  });
}

}  // namespace sparsetrain
