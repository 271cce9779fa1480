// AVX2 kernels: 8-lane vectors, 8 per 64-token tile. Compiled with AVX2 + FMA flags only here.
#include "kernels/spmm.h"

#include "kernels/simd/isa_avx2.h"

#include "kernels/spmm_simd.h"

namespace sparsetrain::avx2 {
void pack_rows(ConstMatrixView rows, PackedTokens& dst, int64_t tile, int t0, float* sums) {
  avx2_detail::pack_rows(rows, dst, tile, t0, sums);
}
void spmm_fwd(const BlockSparseView& w, const PackedTokens& x, const float* bias, MatrixView y, Range tiles,
              Range block_rows) {
  avx2_detail::spmm_fwd(w, x, bias, y, tiles, block_rows);
}
void csr_backward(const BlockSparseView& wt, const PackedTokens& dy, const PackedTokens& x, MatrixView dx,
                  float* dwt, Range rows) {
  avx2_detail::csr_backward(wt, dy, x, dx, dwt, rows);
}
void sddmm(const BlockSparseView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues, bool accumulate,
           Range block_rows) {
  avx2_detail::sddmm(w, dy, x, dvalues, accumulate, block_rows);
}
void nm_fwd(const NmView& w, const PackedTokens& x, const float* bias, MatrixView y, Range tiles, Range rows) {
  avx2_detail::nm_fwd(w, x, bias, y, tiles, rows);
}
void nm_sddmm(const NmView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues, bool accumulate,
              Range rows) {
  avx2_detail::nm_sddmm(w, dy, x, dvalues, accumulate, rows);
}
void nm_bwd_data(const NmTransposedView& wt, const PackedTokens& dy, MatrixView dx, Range tiles, Range groups) {
  avx2_detail::nm_bwd_data(wt, dy, dx, tiles, groups);
}
}  // namespace sparsetrain::avx2
