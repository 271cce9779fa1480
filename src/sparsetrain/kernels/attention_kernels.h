#pragma once
// The products inside self-attention, for one (batch, head) pair: T tokens, D channels per
// token. Rows of A, B, X and Y are D floats at a row stride (views into qkv, dout, dqkv); P is
// [T x T] with row stride ldp. Query t sees the keys s < end(t) of an AttentionMask: the row's
// first L (its real tokens; L = T without padding), and only s <= t of those when causal.
//
//   scores  S[t][s] = alpha * A[t] . B[s]                for s < end(t)  (q k^T; dout v^T)
//   rows    Y[t]    = alpha * sum_{s < end(t)} P[t][s] X[s]               (att v; dS k)
//   cols    Y[s]    = alpha * sum_{t : s < end(t)} P[t][s] X[t] for s < L (att^T dout; dS^T q)
//           Y[s]    = 0                                         for s >= L (padded keys)
//
// S has row stride attention_score_stride(T). Row t of S is written at s < end(t) and may be
// written past it, up to that stride, with values the caller masks (the softmax does). rows and
// cols read P at s < end(t) only; scores reads rows of B, and rows rows of X, at s < L only. So
// a non-finite entry of P past end(t), a future key or value (causal; not even multiplied by 0)
// or a padded one cannot reach another token. Y is overwritten. Sums run in ascending order of
// s (rows), t (cols) and the channel (scores).
//
// The vector kernels pack B feature-major (B^T in token tiles, as pack_rows lays out every
// sparse kernel's input), so a score is a broadcast of A's entry against contiguous lines of
// B^T, with no sums across lanes; rows and cols hold a block of output rows in registers over
// all their terms, and, causal, handle the diagonal block's triangle inside the same registers.
#include <algorithm>
#include <cstdint>

#include "sparsetrain/core/precision.h"

namespace sparsetrain {

// Row stride of S: T rounded up to a whole vector of the widest ISA.
inline int64_t attention_score_stride(int64_t T) { return (T + 15) / 16 * 16; }

// The keys each query of a T-token pair sees.
struct AttentionMask {
  int64_t keys;  // L in [1, T]: keys s >= L are padding, seen by no query
  bool causal;   // query t sees s <= t only

  // One past the last key query t sees.
  int64_t end(int64_t t) const { return causal ? std::min(t + 1, keys) : keys; }
};

using AttentionScoresFn = void(int64_t T, int64_t D, AttentionMask m, float alpha, const float* a, int64_t lda,
                               const float* b, int64_t ldb, float* s, int64_t lds);
using AttentionRowsFn = void(int64_t T, int64_t D, AttentionMask m, float alpha, const float* p, int64_t ldp,
                             const float* x, int64_t ldx, float* y, int64_t ldy);
using AttentionColsFn = AttentionRowsFn;

// The implementations for heads of D channels: the first usable of avx512 -> avx2 -> ref for
// each (see kernel_list.h and attention_list.cpp; SPARSETRAIN_VERBOSE=dispatch names them). In
// bf16 the list starts with avx512_bf16, whose products take operands rounded to bf16 (the
// float32 arguments are rounded inside), accumulated in float32; without AVX512-BF16 the float32
// entries run, as rounding without vdpbf16ps costs what it saves.
struct AttentionKernels {
  AttentionScoresFn* scores;
  AttentionRowsFn* rows;
  AttentionColsFn* cols;
};
AttentionKernels attention_kernels(int64_t D, Precision precision = Precision::Fp32);

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
SPARSETRAIN_DECLARE_ATTENTION_KERNELS(avx512_bf16)
#undef SPARSETRAIN_DECLARE_ATTENTION_KERNELS

// The bf16 oracle: ref's loops with every operand rounded to bf16 first.
namespace ref {
AttentionScoresFn attention_scores_bf16;
AttentionRowsFn attention_rows_bf16;
AttentionColsFn attention_cols_bf16;
}  // namespace ref

}  // namespace sparsetrain
