// AVX-512 attention products: 16-lane vectors. Compiled with AVX-512 flags only here.
#include "kernels/attention_kernels.h"

// GCC 12 reports the undefined passthrough operand inside its own AVX-512 intrinsics as
// uninitialized in the sanitizer build; see spmm_avx512.cpp.
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/simd/isa_avx512.h"

#include "kernels/simd/attention.h"

namespace sparsetrain::avx512 {
void attention_scores(int64_t T, int64_t D, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                      float* s, int64_t lds) {
  avx512_detail::attention_scores(T, D, alpha, a, lda, b, ldb, s, lds);
}
void attention_rows(int64_t T, int64_t D, float alpha, const float* p, int64_t ldp, const float* x, int64_t ldx,
                    float* y, int64_t ldy) {
  avx512_detail::attention_rows(T, D, alpha, p, ldp, x, ldx, y, ldy);
}
void attention_cols(int64_t T, int64_t D, float alpha, const float* p, int64_t ldp, const float* x, int64_t ldx,
                    float* y, int64_t ldy) {
  avx512_detail::attention_cols(T, D, alpha, p, ldp, x, ldx, y, ldy);
}
}  // namespace sparsetrain::avx512
