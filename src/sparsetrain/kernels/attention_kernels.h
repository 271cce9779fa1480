#pragma once
// The products inside causal self-attention, for one (batch, head) pair: T tokens, D channels
// per token. Rows of A, B, X and Y are D floats at a row stride (views into qkv, dout, dqkv);
// P is [T x T] with row stride ldp.
//
//   scores  S[t][s] = alpha * A[t] . B[s]               for s <= t   (q k^T; dout v^T)
//   rows    Y[t]    = alpha * sum_{s <= t} P[t][s] X[s]              (att v; dS k)
//   cols    Y[s]    = alpha * sum_{t >= s} P[t][s] X[t]              (att^T dout; dS^T q)
//
// S has row stride attention_score_stride(T). Row t of S is written at s <= t and may be written
// past t, up to that stride, with values the caller masks (the softmax does). rows and cols read
// P on and below its diagonal only: a non-finite entry above it, or a non-finite future X row
// (0 * NaN), cannot reach an earlier token. Y is overwritten. Sums run in ascending order of s
// (rows), t (cols) and the channel (scores).
//
// The vector kernels pack B feature-major (B^T in token tiles, as pack_rows lays out every
// sparse kernel's input), so a score is a broadcast of A's entry against contiguous lines of
// B^T, with no sums across lanes; rows and cols hold a block of output rows in registers over
// all their terms, and handle the diagonal block's triangle inside the same registers.
#include <cstdint>

namespace sparsetrain {

// Row stride of S: T rounded up to a whole vector of the widest ISA.
inline int64_t attention_score_stride(int64_t T) { return (T + 15) / 16 * 16; }

using AttentionScoresFn = void(int64_t T, int64_t D, float alpha, const float* a, int64_t lda, const float* b,
                               int64_t ldb, float* s, int64_t lds);
using AttentionRowsFn = void(int64_t T, int64_t D, float alpha, const float* p, int64_t ldp, const float* x,
                             int64_t ldx, float* y, int64_t ldy);
using AttentionColsFn = AttentionRowsFn;

// The implementations for heads of D channels: the first usable of avx512 -> avx2 -> ref for
// each (see kernel_list.h and attention_list.cpp; SPARSETRAIN_VERBOSE=dispatch names them).
struct AttentionKernels {
  AttentionScoresFn* scores;
  AttentionRowsFn* rows;
  AttentionColsFn* cols;
};
AttentionKernels attention_kernels(int64_t D);

#define SPARSETRAIN_DECLARE_ATTENTION_KERNELS(isa) \
  namespace isa {                                  \
  AttentionScoresFn attention_scores;              \
  AttentionRowsFn attention_rows;                  \
  AttentionColsFn attention_cols;                  \
  }
// ref: plain loops, the oracle for the others.
SPARSETRAIN_DECLARE_ATTENTION_KERNELS(ref)
SPARSETRAIN_DECLARE_ATTENTION_KERNELS(avx2)
SPARSETRAIN_DECLARE_ATTENTION_KERNELS(avx512)
#undef SPARSETRAIN_DECLARE_ATTENTION_KERNELS

}  // namespace sparsetrain
