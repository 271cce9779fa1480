// Reference attention products: plain loops in the order attention_kernels.h defines.
#include "sparsetrain/core/bf16.h"
#include "sparsetrain/kernels/attention_kernels.h"

namespace sparsetrain::ref {

void attention_scores(int64_t T, int64_t D, AttentionMask m, float alpha, const float* a, int64_t lda, const float* b,
                      int64_t ldb, float* s, int64_t lds) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < m.end(t); ++j) {
      float dot = 0.0f;
      for (int64_t d = 0; d < D; ++d) dot += a[t * lda + d] * b[j * ldb + d];
      s[t * lds + j] = alpha * dot;
    }
}

void attention_rows(int64_t T, int64_t D, AttentionMask m, float alpha, const float* p, int64_t ldp, const float* x,
                    int64_t ldx, float* y, int64_t ldy) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < D; ++d) {
      float sum = 0.0f;
      for (int64_t j = 0; j < m.end(t); ++j) sum += p[t * ldp + j] * x[j * ldx + d];
      y[t * ldy + d] = alpha * sum;
    }
}

// Key j < L is seen by every query, or, causal, by the queries t >= j; a padded key by none.
void attention_cols(int64_t T, int64_t D, AttentionMask m, float alpha, const float* p, int64_t ldp, const float* x,
                    int64_t ldx, float* y, int64_t ldy) {
  for (int64_t j = 0; j < T; ++j) {
    const int64_t first = j >= m.keys ? T : m.causal ? j : 0;
    for (int64_t d = 0; d < D; ++d) {
      float sum = 0.0f;
      for (int64_t t = first; t < T; ++t) sum += p[t * ldp + j] * x[t * ldx + d];
      y[j * ldy + d] = alpha * sum;
    }
  }
}

// The same loops on operands rounded to bf16, accumulated in float.
void attention_scores_bf16(int64_t T, int64_t D, AttentionMask m, float alpha, const float* a, int64_t lda,
                           const float* b, int64_t ldb, float* s, int64_t lds) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < m.end(t); ++j) {
      float dot = 0.0f;
      for (int64_t d = 0; d < D; ++d) dot += round_bf16(a[t * lda + d]) * round_bf16(b[j * ldb + d]);
      s[t * lds + j] = alpha * dot;
    }
}

void attention_rows_bf16(int64_t T, int64_t D, AttentionMask m, float alpha, const float* p, int64_t ldp,
                         const float* x, int64_t ldx, float* y, int64_t ldy) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < D; ++d) {
      float sum = 0.0f;
      for (int64_t j = 0; j < m.end(t); ++j) sum += round_bf16(p[t * ldp + j]) * round_bf16(x[j * ldx + d]);
      y[t * ldy + d] = alpha * sum;
    }
}

void attention_cols_bf16(int64_t T, int64_t D, AttentionMask m, float alpha, const float* p, int64_t ldp,
                         const float* x, int64_t ldx, float* y, int64_t ldy) {
  for (int64_t j = 0; j < T; ++j) {
    const int64_t first = j >= m.keys ? T : m.causal ? j : 0;
    for (int64_t d = 0; d < D; ++d) {
      float sum = 0.0f;
      for (int64_t t = first; t < T; ++t) sum += round_bf16(p[t * ldp + j]) * round_bf16(x[t * ldx + d]);
      y[j * ldy + d] = alpha * sum;
    }
  }
}

}  // namespace sparsetrain::ref
