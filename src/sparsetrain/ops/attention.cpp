#include "sparsetrain/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/profile.h"
#include "sparsetrain/kernels/attention_kernels.h"
#include "sparsetrain/ops/fast_math.h"

namespace sparsetrain {

// Layouts, per (batch b, head h) pair, D = C / H, ld = 3C, with the keys query t sees
// s < m.end(t) (kernels/attention_kernels.h: s < L = lengths[b], and s <= t when causal):
//   q[t] = qkv.row(b*T + t) + h*D,  k[t] = q[t] + C,  v[t] = q[t] + 2C    (D floats each)
//   probs[((b*H + h)*T + t)*T + s] = att[b, h][t, s], zero for s >= m.end(t)
//   out.row(b*T + t) + h*D = sum_{s < m.end(t)} att[t, s] v[s]
//
// The products run in kernels/attention_kernels.h over the seen keys only (causal, about half
// the flops of full T x T products); the score rows they return may run past m.end(t), and the
// softmax masks those entries before anything reads them. A masked entry is never multiplied
// with an unseen key or value, so in the forward pass a non-finite value at position s reaches
// only the outputs of the tokens that see s: t >= s when causal, none when s is padding.
//
// Each pair runs on one thread; every output element is therefore computed in one fixed order.

namespace {

constexpr int64_t kLanes = kFloatLanes;

// Softmax rows of the T x T score matrix: row t has n = m.end(t) live entries. The vector loops
// run on to the first kLanes boundary at or past n (capped at the row's length), so no row pays
// for a scalar tail of up to 15 exponentials; the entries from n to that boundary, which hold
// scores of unseen keys (or NaN from them), are zeroed before anything sums over them, so
// nothing leaks backwards in time or out of the padding.
int64_t live_chunks_end(int64_t n, int64_t len) { return std::min(len, (n + kLanes - 1) / kLanes * kLanes); }

// row[0..n) = softmax(scores[0..n)), row[n..len) = 0; scores has room for the chunk end.
void masked_softmax_row(const float* scores, float* row, int64_t n, int64_t len) {
  const int64_t end = live_chunks_end(n, len);
  const float maxv = row_max(scores, n);
  for (int64_t j = 0; j < end; ++j) row[j] = exp_nonpositive(scores[j] - maxv);
  std::fill(row + n, row + len, 0.0f);
  const auto inv = static_cast<float>(1.0 / row_sum(row, end));
  for (int64_t j = 0; j < end; ++j) row[j] *= inv;
}

// Softmax backward on row t, ds[j] = p[j] (ds[j] - sum_k p[k] ds[k]) for j < n, with ds = dP
// coming in and p zero from n on. Entries from n up to the chunk end become zero.
void masked_softmax_backward_row(const float* p, float* ds, int64_t n, int64_t len) {
  const int64_t end = live_chunks_end(n, len);
  std::fill(ds + n, ds + end, 0.0f);
  const auto dot = static_cast<float>(row_dot_product(p, ds, end));
  for (int64_t j = 0; j < end; ++j) ds[j] = p[j] * (ds[j] - dot);
}

void check_shape(const char* op, const AttentionShape& s) {
  if (s.batch < 0 || s.seq < 0 || s.heads <= 0 || s.channels <= 0 || s.channels % s.heads != 0)
    fail(
        "{}: batch {}, seq {}, heads {}, channels {}: expected batch and seq >= 0, heads and channels > 0, "
        "channels a multiple of heads",
        op, s.batch, s.seq, s.heads, s.channels);
  if (s.lengths != nullptr)
    for (int64_t b = 0; b < s.batch; ++b)
      if (s.lengths[b] < 1 || s.lengths[b] > s.seq)
        fail("{}: lengths[{}] is {}; expected 1 to seq {} real tokens in each row", op, b, s.lengths[b], s.seq);
}

// The keys the queries of batch row b see.
AttentionMask mask_of(const AttentionShape& s, int64_t b) {
  return {s.lengths != nullptr ? s.lengths[b] : s.seq, s.causal};
}

void check_view(const char* op, const char* name, ConstMatrixView m, int64_t rows, int64_t cols) {
  if (m.rows != rows || m.cols != cols || m.ld < cols)
    fail("{}: {} is [{} x {}] with ld {}; expected [{} x {}] (B*T rows) with ld >= {}", op, name, m.rows, m.cols, m.ld,
         rows, cols, cols);
}

// Per thread: a fresh 256 KB buffer per call is mapped and page-faulted anew by the allocator.
float* score_scratch(int64_t T) {
  thread_local std::vector<float> scores;
  scores.resize(static_cast<size_t>(T * attention_score_stride(T)));
  return scores.data();
}

// Per thread, the dropped probabilities of one (batch, head) pair [T x T].
float* dropped_scratch(int64_t T) {
  thread_local std::vector<float> dropped;
  dropped.resize(static_cast<size_t>(T * T));
  return dropped.data();
}

// The first stream element of pair (b, h): AttentionShape's indexing.
uint64_t dropout_base(const AttentionShape& s, int64_t b, int64_t h) {
  return static_cast<uint64_t>(((s.first_row + b) * s.heads + h) * s.seq * s.seq);
}

// dropped = att with each seen entry kept (scaled by 1 / (1 - dropout)) or dropped, as
// AttentionShape defines; unseen entries stay zero as in att. With ds (the backward pass), the same
// keeps also carry dP' into dP = dP' * keep / (1 - dropout) on the seen entries of its rows
// (stride lds), each drawn once for both.
void apply_dropout(const AttentionShape& s, int64_t b, int64_t h, const AttentionMask& m, const float* att,
                   float* dropped, float* ds = nullptr, int64_t lds = 0) {
  const int64_t T = s.seq;
  const float scale = 1.0f / (1.0f - s.dropout);
  const uint64_t base = dropout_base(s, b, h);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t end = m.end(t);
    for (int64_t j = 0; j < end; ++j) {
      const auto i = static_cast<uint64_t>(t * T + j);
      const bool keep = s.rng->uniform(base + i) >= s.dropout;  // a dropped entry is 0 even if NaN
      dropped[i] = keep ? att[i] * scale : 0.0f;
      if (ds != nullptr) ds[t * lds + j] = keep ? ds[t * lds + j] * scale : 0.0f;
    }
    std::fill(dropped + t * T + end, dropped + (t + 1) * T, 0.0f);
  }
}

void check_dropout(const char* op, const AttentionShape& s) {
  if (!(s.dropout >= 0.0f && s.dropout < 1.0f)) fail("{}: dropout {} is outside [0, 1)", op, s.dropout);
  if (s.dropout > 0.0f && s.rng == nullptr) fail("{}: dropout {} without a random stream", op, s.dropout);
}

}  // namespace

// qkv [B*T x 3C], out [B*T x C], probs [B*H*T*T].
void attention_forward(const AttentionShape& s, ConstMatrixView qkv, MatrixView out, float* probs) {
  const ProfileScope profile("attention forward");
  check_shape("attention_forward", s);
  check_dropout("attention_forward", s);
  const int64_t B = s.batch, T = s.seq, H = s.heads, C = s.channels, D = s.head_dim();
  check_view("attention_forward", "qkv", qkv, B * T, 3 * C);
  check_view("attention_forward", "out", out, B * T, C);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const int64_t pairs = B * H, lds = attention_score_stride(T);
  const AttentionKernels kernel = attention_kernels(D, s.precision);

  parallel_run(static_cast<int>(std::min<int64_t>(pairs, num_threads())), [&](int ith, int nth) {
    int64_t p0 = 0, p1 = 0;
    balance_even(pairs, ith, nth, p0, p1);
    float* scores = p1 > p0 ? score_scratch(T) : nullptr;  // [T x lds]
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t b = p / H, h = p % H;
      const AttentionMask m = mask_of(s, b);
      const float* q = qkv.row(b * T) + h * D;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* att = probs + p * T * T;  // [T x T]

      // att = softmax(q k^T / sqrt(D)) over s < m.end(t)
      kernel.scores(T, D, m, scale, q, qkv.ld, k, qkv.ld, scores, lds);
      for (int64_t t = 0; t < T; ++t) masked_softmax_row(scores + t * lds, att + t * T, m.end(t), T);

      // out = att v (att with dropout in training)
      const float* used = att;
      if (s.dropout > 0.0f) {
        float* dropped = dropped_scratch(T);
        apply_dropout(s, b, h, m, att, dropped);
        used = dropped;
      }
      kernel.rows(T, D, m, 1.0f, used, T, v, qkv.ld, out.row(b * T) + h * D, out.ld);
    }
  });
}

// Per pair, with P = att and dP = dout v^T:
//   dv = P^T dout
//   dS[t, s] = P[t, s] (dP[t, s] - sum_j P[t, j] dP[t, j])   (softmax backward, s < m.end(t))
//   dq = dS k / sqrt(D),  dk = dS^T q / sqrt(D)
// dk and dv of padded keys are zero.
void attention_backward(const AttentionShape& s, ConstMatrixView dout, ConstMatrixView qkv, const float* probs,
                        MatrixView dqkv) {
  const ProfileScope profile("attention backward");
  check_shape("attention_backward", s);
  check_dropout("attention_backward", s);
  const int64_t B = s.batch, T = s.seq, H = s.heads, C = s.channels, D = s.head_dim();
  check_view("attention_backward", "dout", dout, B * T, C);
  check_view("attention_backward", "qkv", qkv, B * T, 3 * C);
  check_view("attention_backward", "dqkv", dqkv, B * T, 3 * C);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const int64_t pairs = B * H, lds = attention_score_stride(T);
  const AttentionKernels kernel = attention_kernels(D, s.precision);

  parallel_run(static_cast<int>(std::min<int64_t>(pairs, num_threads())), [&](int ith, int nth) {
    int64_t p0 = 0, p1 = 0;
    balance_even(pairs, ith, nth, p0, p1);
    float* ds = p1 > p0 ? score_scratch(T) : nullptr;  // dP, then dS in place [T x lds]
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t b = p / H, h = p % H;
      const AttentionMask m = mask_of(s, b);
      const float* q = qkv.row(b * T) + h * D;
      const float* k = q + C;
      const float* v = q + 2 * C;
      const float* dy = dout.row(b * T) + h * D;
      float* dq = dqkv.row(b * T) + h * D;
      float* dk = dq + C;
      float* dv = dq + 2 * C;
      const float* att = probs + p * T * T;

      // dP = dout v^T, over the seen keys (the other entries are not used), through the dropout
      kernel.scores(T, D, m, 1.0f, dy, dout.ld, v, qkv.ld, ds, lds);
      const float* used = att;  // the probabilities the forward pass multiplied v by
      if (s.dropout > 0.0f) {
        float* dropped = dropped_scratch(T);
        apply_dropout(s, b, h, m, att, dropped, ds, lds);
        used = dropped;
      }
      for (int64_t t = 0; t < T; ++t) masked_softmax_backward_row(att + t * T, ds + t * lds, m.end(t), T);

      kernel.rows(T, D, m, scale, ds, lds, k, qkv.ld, dq, dqkv.ld);
      kernel.cols(T, D, m, scale, ds, lds, q, qkv.ld, dk, dqkv.ld);
      // dv = att'^T dout
      kernel.cols(T, D, m, 1.0f, used, T, dy, dout.ld, dv, dqkv.ld);
    }
  });
}

}  // namespace sparsetrain
