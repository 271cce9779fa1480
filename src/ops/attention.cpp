#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "core/profile.h"
#include "kernels/dense_gemm.h"
#include "ops/fast_math.h"

namespace sparsetrain {

// Layouts, per (batch b, head h) pair, D = C / H, ld = 3C:
//   q[t] = qkv.row(b*T + t) + h*D,  k[t] = q[t] + C,  v[t] = q[t] + 2C    (D floats each)
//   probs[((b*H + h)*T + t)*T + s] = att[b, h][t, s], zero for s > t
//   out.row(b*T + t) + h*D = sum_{s <= t} att[t, s] v[s]
//
// The big products go through oneDNN's gemm in row blocks of queries. The score products
// (q k^T, dout v^T) run in blocks of kScoreBlock and may overshoot the causal part, which the
// softmax masks. The products with the probabilities run in blocks of kBlock over the causal
// part only: a block's strictly-past keys are one rectangular gemm, the triangle inside the
// diagonal block is a loop that keeps each output row in registers (accumulate_row). A
// masked entry is never multiplied with a future key or value, so in the forward pass a
// non-finite value at position s reaches only the outputs of tokens t >= s (0 * NaN would
// otherwise leak it backwards in time), and about half the flops of full T x T products are
// skipped.
//
// Each pair runs on one thread with gemm called inside parallel_run's region, where oneDNN stays
// single-threaded; every output element is therefore computed in one fixed order.

namespace {

constexpr int64_t kBlock = 32;

// The score products may overshoot the causal part (the softmax masks what lies above the
// diagonal), so they run in fewer, larger blocks: at T = 256, D = 64, 128 queries per product
// took 7% less time forward and 5% less backward than 32 (64 and 256 were in between / slower).
constexpr int64_t kScoreBlock = 128;

// The diagonal block's triangles keep an output row in registers across all its keys, up to
// kSpanChunks vectors of kLanes floats at a time (the whole row at D = 64): independent FMA
// chains, where one 16-float slice per pass was a single chain bound by the FMA latency.
constexpr int64_t kLanes = kFloatLanes;
constexpr int kSpanChunks = 4;

// y[0..kChunks * kLanes) += sum over i in [first, last) of a_i * x_i[d0..), (a_i, x_i) = term(i).
template <int kChunks, class Term>
void accumulate_chunks(float* y, int64_t d0, int64_t first, int64_t last, Term term) {
  FloatLanes acc[kChunks];
  std::memcpy(acc, y, sizeof acc);
  for (int64_t i = first; i < last; ++i) {
    const auto [a, x] = term(i);
    for (int c = 0; c < kChunks; ++c) {
      FloatLanes v;
      std::memcpy(&v, x + d0 + c * kLanes, sizeof v);
      acc[c] += a * v;
    }
  }
  std::memcpy(y, acc, sizeof acc);
}

// y[0..n) += sum over i in [first, last) of a_i * x_i[0..n), with (a_i, x_i) = term(i).
template <class Term>
void accumulate_row(float* y, int64_t n, int64_t first, int64_t last, Term term) {
  int64_t d0 = 0;
  for (; d0 + kSpanChunks * kLanes <= n; d0 += kSpanChunks * kLanes)
    accumulate_chunks<kSpanChunks>(y + d0, d0, first, last, term);
  switch ((n - d0) / kLanes) {
    case 3: accumulate_chunks<3>(y + d0, d0, first, last, term); break;
    case 2: accumulate_chunks<2>(y + d0, d0, first, last, term); break;
    case 1: accumulate_chunks<1>(y + d0, d0, first, last, term); break;
    default: break;
  }
  for (d0 += (n - d0) / kLanes * kLanes; d0 < n; ++d0)
    for (int64_t i = first; i < last; ++i) {
      const auto [a, x] = term(i);
      y[d0] += a * x[d0];
    }
}

// Softmax rows of the T x T score matrix: row t has n = t + 1 live entries. The vector loops
// run on to the first kLanes boundary at or past n (capped at the row's length), so no row pays
// for a scalar tail of up to 15 exponentials; the entries from n to that boundary, which hold
// scores of future keys (or NaN from them), are zeroed before anything sums over them, so
// nothing leaks backwards in time.
int64_t live_chunks_end(int64_t n, int64_t len) { return std::min(len, (n + kLanes - 1) / kLanes * kLanes); }

// row[0..n) = softmax(row[0..n)), row[n..len) = 0.
void causal_softmax_row(float* row, int64_t n, int64_t len) {
  const int64_t end = live_chunks_end(n, len);
  const float maxv = row_max(row, n);
  for (int64_t j = 0; j < end; ++j) row[j] = exp_nonpositive(row[j] - maxv);
  std::fill(row + n, row + len, 0.0f);
  const auto inv = static_cast<float>(1.0 / row_sum(row, end));
  for (int64_t j = 0; j < end; ++j) row[j] *= inv;
}

// Softmax backward on row t, ds[j] = p[j] (ds[j] - sum_k p[k] ds[k]) for j < n, with ds = dP
// coming in and p zero from n on. Entries from n up to the chunk end become zero.
void causal_softmax_backward_row(const float* p, float* ds, int64_t n, int64_t len) {
  const int64_t end = live_chunks_end(n, len);
  std::fill(ds + n, ds + end, 0.0f);
  const auto dot = static_cast<float>(row_dot_product(p, ds, end));
  for (int64_t j = 0; j < end; ++j) ds[j] = p[j] * (ds[j] - dot);
}

// Y[t] = alpha * sum_{s <= t} W[t, s] X[s] for t < T: W [T x T] lower triangular (row stride T),
// X and Y rows of D floats with strides ldx and ldy. Y is overwritten.
void causal_rows(int64_t T, int64_t D, float alpha, const float* W, const float* X, int64_t ldx, float* Y,
                 int64_t ldy) {
  for (int64_t t0 = 0; t0 < T; t0 += kBlock) {
    const int64_t t1 = std::min(t0 + kBlock, T);
    if (t0 > 0) {
      gemm(false, false, t1 - t0, D, t0, alpha, W + t0 * T, T, X, ldx, 0.0f, Y + t0 * ldy, ldy);
    } else {
      for (int64_t t = t0; t < t1; ++t) std::fill(Y + t * ldy, Y + t * ldy + D, 0.0f);
    }
    for (int64_t t = t0; t < t1; ++t)
      accumulate_row(Y + t * ldy, D, t0, t + 1, [&](int64_t s) {
        return std::pair{alpha * W[t * T + s], X + s * ldx};
      });
  }
}

// Y[s] = alpha * sum_{t >= s} W[t, s] X[t] for s < T: the transposed product of causal_rows.
void causal_cols(int64_t T, int64_t D, float alpha, const float* W, const float* X, int64_t ldx, float* Y,
                 int64_t ldy) {
  for (int64_t s0 = 0; s0 < T; s0 += kBlock) {
    const int64_t s1 = std::min(s0 + kBlock, T);
    if (s1 < T) {
      // W[s1:T, s0:s1]^T X[s1:T]: op(A) = A^T with A the [T - s1 x s1 - s0] panel of W.
      gemm(true, false, s1 - s0, D, T - s1, alpha, W + s1 * T + s0, T, X + s1 * ldx, ldx, 0.0f, Y + s0 * ldy, ldy);
    } else {
      for (int64_t s = s0; s < s1; ++s) std::fill(Y + s * ldy, Y + s * ldy + D, 0.0f);
    }
    for (int64_t s = s0; s < s1; ++s)
      accumulate_row(Y + s * ldy, D, s, s1, [&](int64_t t) { return std::pair{alpha * W[t * T + s], X + t * ldx}; });
  }
}

// S[t, s] = alpha * A[t] . B[s] for s below the end of t's block of kScoreBlock rows, A and B
// rows of D floats: the causal part of A B^T [T x T] (row stride T) and more. Entries above the
// diagonal are computed inside the diagonal block only and are the caller's to overwrite or
// ignore; they cover at least the kBlock and kLanes chunks the other loops run to.
void causal_scores(int64_t T, int64_t D, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                   float* S) {
  static_assert(kScoreBlock % kBlock == 0 && kBlock % kLanes == 0);
  for (int64_t t0 = 0; t0 < T; t0 += kScoreBlock) {
    const int64_t t1 = std::min(t0 + kScoreBlock, T);
    gemm(false, true, t1 - t0, t1, D, alpha, A + t0 * lda, lda, B, ldb, 0.0f, S + t0 * T, T);
  }
}

void check_shape(const char* op, const AttentionShape& s) {
  if (s.batch < 0 || s.seq < 0 || s.heads <= 0 || s.channels <= 0 || s.channels % s.heads != 0)
    fail(
        "{}: batch {}, seq {}, heads {}, channels {}: expected batch and seq >= 0, heads and channels > 0, "
        "channels a multiple of heads",
        op, s.batch, s.seq, s.heads, s.channels);
}

void check_view(const char* op, const char* name, ConstMatrixView m, int64_t rows, int64_t cols) {
  if (m.rows != rows || m.cols != cols || m.ld < cols)
    fail("{}: {} is [{} x {}] with ld {}; expected [{} x {}] (B*T rows) with ld >= {}", op, name, m.rows, m.cols, m.ld,
         rows, cols, cols);
}

// At least two parts, so that gemm either runs inside parallel_run's region or on a one-thread
// pool: a lone pair would otherwise call oneDNN from outside, where its own threading could
// change the summation order.
int pair_parts(int64_t pairs) { return static_cast<int>(std::clamp<int64_t>(pairs, 2, 1 << 16)); }

}  // namespace

// qkv [B*T x 3C], out [B*T x C], probs [B*H*T*T].
void attention_forward(const AttentionShape& s, ConstMatrixView qkv, MatrixView out, float* probs) {
  const ProfileScope profile("attention forward");
  check_shape("attention_forward", s);
  const int64_t B = s.batch, T = s.seq, H = s.heads, C = s.channels, D = s.head_dim();
  check_view("attention_forward", "qkv", qkv, B * T, 3 * C);
  check_view("attention_forward", "out", out, B * T, C);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const int64_t pairs = B * H;

  parallel_run(pair_parts(pairs), [&](int ith, int nth) {
    int64_t p0 = 0, p1 = 0;
    balance_even(pairs, ith, nth, p0, p1);
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t b = p / H, h = p % H;
      const float* q = qkv.row(b * T) + h * D;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* att = probs + p * T * T;  // [T x T]

      // att = softmax(q k^T / sqrt(D)) over s <= t
      causal_scores(T, D, scale, q, qkv.ld, k, qkv.ld, att);
      for (int64_t t = 0; t < T; ++t) causal_softmax_row(att + t * T, t + 1, T);

      // out = att v
      causal_rows(T, D, 1.0f, att, v, qkv.ld, out.row(b * T) + h * D, out.ld);
    }
  });
}

// Per pair, with P = att and dP = dout v^T:
//   dv = P^T dout
//   dS[t, s] = P[t, s] (dP[t, s] - sum_j P[t, j] dP[t, j])   (softmax backward, s <= t)
//   dq = dS k / sqrt(D),  dk = dS^T q / sqrt(D)
void attention_backward(const AttentionShape& s, ConstMatrixView dout, ConstMatrixView qkv, const float* probs,
                        MatrixView dqkv) {
  const ProfileScope profile("attention backward");
  check_shape("attention_backward", s);
  const int64_t B = s.batch, T = s.seq, H = s.heads, C = s.channels, D = s.head_dim();
  check_view("attention_backward", "dout", dout, B * T, C);
  check_view("attention_backward", "qkv", qkv, B * T, 3 * C);
  check_view("attention_backward", "dqkv", dqkv, B * T, 3 * C);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const int64_t pairs = B * H;

  parallel_run(pair_parts(pairs), [&](int ith, int nth) {
    int64_t p0 = 0, p1 = 0;
    balance_even(pairs, ith, nth, p0, p1);
    // dP, then dS in place [T x T]; kept per thread, since a fresh 256 KB buffer per call is
    // mapped and page-faulted anew by the allocator.
    thread_local std::vector<float> ds;
    if (p1 > p0) ds.resize(static_cast<size_t>(T * T));
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t b = p / H, h = p % H;
      const float* q = qkv.row(b * T) + h * D;
      const float* k = q + C;
      const float* v = q + 2 * C;
      const float* dy = dout.row(b * T) + h * D;
      float* dq = dqkv.row(b * T) + h * D;
      float* dk = dq + C;
      float* dv = dq + 2 * C;
      const float* att = probs + p * T * T;

      // dP = dout v^T, over the causal part (entries above the diagonal are not used)
      causal_scores(T, D, 1.0f, dy, dout.ld, v, qkv.ld, ds.data());
      for (int64_t t = 0; t < T; ++t) causal_softmax_backward_row(att + t * T, ds.data() + t * T, t + 1, T);

      causal_rows(T, D, scale, ds.data(), k, qkv.ld, dq, dqkv.ld);
      causal_cols(T, D, scale, ds.data(), q, qkv.ld, dk, dqkv.ld);
      causal_cols(T, D, 1.0f, att, dy, dout.ld, dv, dqkv.ld);
    }
  });
}

}  // namespace sparsetrain
