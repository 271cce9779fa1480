// AVX-512 kernels: 16-lane vectors, 4 per 64-token tile. Compiled with AVX-512 flags only here.
#include "kernels/spmm.h"

// GCC 12 reports the deliberately undefined passthrough operand inside its own AVX-512
// intrinsics (`__m512 __Y = __Y;`) as uninitialized when a build inlines them into these
// kernels (the sanitizer build does; GCC bug 105593); no value of ours is involved. The same
// kernel bodies compiled for AVX2 (spmm_avx2.cpp) keep the warning.
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/simd/isa_avx512.h"

#include "kernels/spmm_simd.h"

namespace sparsetrain::avx512 {
void pack_rows(ConstMatrixView rows, PackedTokens& dst, int64_t tile, int t0, float* sums) {
  avx512_detail::pack_rows(rows, dst, tile, t0, sums);
}
void spmm_fwd(const BlockSparseView& w, const PackedTokens& x, const float* bias, MatrixView y, Range tiles,
              Range block_rows) {
  avx512_detail::spmm_fwd(w, x, bias, y, tiles, block_rows);
}
void csr_backward(const BlockSparseView& wt, const PackedTokens& dy, const PackedTokens& x, MatrixView dx,
                  float* dwt, Range rows) {
  avx512_detail::csr_backward(wt, dy, x, dx, dwt, rows);
}
void sddmm(const BlockSparseView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues, bool accumulate,
           Range block_rows) {
  avx512_detail::sddmm(w, dy, x, dvalues, accumulate, block_rows);
}
void nm_fwd(const NmView& w, const PackedTokens& x, const float* bias, MatrixView y, Range tiles, Range rows) {
  avx512_detail::nm_fwd(w, x, bias, y, tiles, rows);
}
void nm_sddmm(const NmView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues, bool accumulate,
              Range rows) {
  avx512_detail::nm_sddmm(w, dy, x, dvalues, accumulate, rows);
}
void nm_bwd_data(const NmTransposedView& wt, const PackedTokens& dy, MatrixView dx, Range tiles, Range groups) {
  avx512_detail::nm_bwd_data(wt, dy, dx, tiles, groups);
}
}  // namespace sparsetrain::avx512
