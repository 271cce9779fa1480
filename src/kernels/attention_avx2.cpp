// AVX2 attention products: 8-lane vectors. Compiled with AVX2 + FMA flags only here.
#include "kernels/attention_kernels.h"

#include "kernels/simd/isa_avx2.h"

#include "kernels/simd/attention.h"

namespace sparsetrain::avx2 {
void attention_scores(int64_t T, int64_t D, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                      float* s, int64_t lds) {
  avx2_detail::attention_scores(T, D, alpha, a, lda, b, ldb, s, lds);
}
void attention_rows(int64_t T, int64_t D, float alpha, const float* p, int64_t ldp, const float* x, int64_t ldx,
                    float* y, int64_t ldy) {
  avx2_detail::attention_rows(T, D, alpha, p, ldp, x, ldx, y, ldy);
}
void attention_cols(int64_t T, int64_t D, float alpha, const float* p, int64_t ldp, const float* x, int64_t ldx,
                    float* y, int64_t ldy) {
  avx2_detail::attention_cols(T, D, alpha, p, ldp, x, ldx, y, ldy);
}
}  // namespace sparsetrain::avx2
