// Kernel bodies shared by the AVX-512 and AVX2 builds, and their entry points. Included once per
// ISA translation unit after kernels/simd/isa_<isa>.h defines SPARSETRAIN_SIMD_NS,
// SPARSETRAIN_ISA_NS and, in the first, `struct Simd` (vector type V, lane count W, load/store/fma
// helpers and reduce_lanes); nothing here is ISA-specific. The bodies
// live in simd/, one file per format.
//
// Method (see docs/kernels.md):
// - forward / backward-data: output-stationary. A row's outputs for one 64-token tile live in
//   registers across all of the row's nonzeros; each nonzero is one broadcast and kTokenTile/W
//   FMAs against a contiguous packed feature row. Rows are staged 16 at a time and written to the
//   token-major output transposed. Blocks b x b hold R rows x NVS vectors in registers so one
//   loaded input vector feeds R rows.
// - backward-weights (SDDMM): one scalar per stored entry, reduced over tokens and amortised
//   over a chunk of tiles that fits in L2. CSR (fused with backward-data, simd/csr.h) and N:M
//   compute many entries together, each in its own accumulator, and reduce them with one
//   transpose-and-add tree (reduce_lanes); blocks accumulate token outer products with the block
//   held in registers, so they need no lane reduction (simd/block.h; 4 x 4 on AVX-512, one
//   vector per block, takes dot products instead).
// - N:M backward-data runs on a group-ordered companion: a group's M dX features are the
//   accumulators (simd/nm.h).
#pragma once

#include <algorithm>
#include <cstring>

#include "sparsetrain/kernels/spmm.h"
#include "sparsetrain/kernels/simd/common.h"
#include "sparsetrain/kernels/simd/csr.h"
#include "sparsetrain/kernels/simd/block.h"
#include "sparsetrain/kernels/simd/nm.h"
#include "sparsetrain/kernels/simd/pack.h"

// The entry points of spmm.h for this ISA, one per specialization the list names (spmm_list.cpp
// rejects the problems each does not take), for the value type E named by sfx (spmm.h). Those that
// write a token-major output fence after the kernel, so its streamed lines (store_line) are
// visible when the threads join.
#define SPARSETRAIN_DEFINE_KERNELS(E, sfx)                                                                            \
  void pack_rows##sfx(ConstMatrixView rows, PackedTokensT<E>& dst, int64_t tile, int t0, float* sums) {               \
    simd::pack_rows(rows, dst, tile, t0, sums);                                                                       \
  }                                                                                                                   \
  void spmm_fwd_csr##sfx(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y,    \
                         Range tiles, Range block_rows) {                                                             \
    simd::csr_fwd(w, x, bias, y, tiles, block_rows);                                                                  \
    simd::Simd::stream_fence();                                                                                       \
  }                                                                                                                   \
  void spmm_fwd_bcsr4##sfx(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y,  \
                           Range tiles, Range block_rows) {                                                           \
    simd::block_fwd<4>(w, x, bias, y, tiles, block_rows);                                                             \
    simd::Simd::stream_fence();                                                                                       \
  }                                                                                                                   \
  void spmm_fwd_bcsr8##sfx(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y,  \
                           Range tiles, Range block_rows) {                                                           \
    simd::block_fwd<8>(w, x, bias, y, tiles, block_rows);                                                             \
    simd::Simd::stream_fence();                                                                                       \
  }                                                                                                                   \
  void spmm_fwd_bcsr16##sfx(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y, \
                            Range tiles, Range block_rows) {                                                          \
    simd::block_fwd<16>(w, x, bias, y, tiles, block_rows);                                                            \
    simd::Simd::stream_fence();                                                                                       \
  }                                                                                                                   \
  void csr_backward##sfx(const BlockSparseViewT<E>& wt, const PackedTokensT<E>& dy, const PackedTokensT<E>& x,        \
                         MatrixView dx, float* dwt, Range rows) {                                                     \
    simd::csr_backward(wt, dy, x, dx, dwt, rows);                                                                     \
    simd::Simd::stream_fence();                                                                                       \
  }                                                                                                                   \
  void sddmm_csr##sfx(const BlockSparseViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x,            \
                      float* dvalues, bool accumulate, Range block_rows) {                                            \
    simd::csr_sddmm(w, dy, x, dvalues, accumulate, block_rows);                                                       \
  }                                                                                                                   \
  void sddmm_bcsr4##sfx(const BlockSparseViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x,          \
                        float* dvalues, bool accumulate, Range block_rows) {                                          \
    simd::block_sddmm<4>(w, dy, x, dvalues, accumulate, block_rows);                                                  \
  }                                                                                                                   \
  void sddmm_bcsr8##sfx(const BlockSparseViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x,          \
                        float* dvalues, bool accumulate, Range block_rows) {                                          \
    simd::block_sddmm<8>(w, dy, x, dvalues, accumulate, block_rows);                                                  \
  }                                                                                                                   \
  void sddmm_bcsr16##sfx(const BlockSparseViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x,         \
                         float* dvalues, bool accumulate, Range block_rows) {                                         \
    simd::block_sddmm<16>(w, dy, x, dvalues, accumulate, block_rows);                                                 \
  }                                                                                                                   \
  void nm_fwd_n2##sfx(const NmViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y, Range tiles,   \
                      Range rows) {                                                                                   \
    simd::nm_fwd<2>(w, x, bias, y, tiles, rows);                                                                      \
    simd::Simd::stream_fence();                                                                                       \
  }                                                                                                                   \
  void nm_fwd_any##sfx(const NmViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y, Range tiles,  \
                       Range rows) {                                                                                  \
    simd::nm_fwd<0>(w, x, bias, y, tiles, rows);                                                                      \
    simd::Simd::stream_fence();                                                                                       \
  }                                                                                                                   \
  void nm_sddmm##sfx(const NmViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues,      \
                     bool accumulate, Range rows) {                                                                   \
    simd::nm_sddmm(w, dy, x, dvalues, accumulate, rows);                                                              \
  }                                                                                                                   \
  void nm_bwd_data_buckets##sfx(const NmTransposedViewT<E>& wt, const PackedTokensT<E>& dy, MatrixView dx,            \
                                Range tiles, Range groups) {                                                          \
    simd::nm_bwd_data<true>(wt, dy, dx, tiles, groups);                                                               \
    simd::Simd::stream_fence();                                                                                       \
  }                                                                                                                   \
  void nm_bwd_data_any##sfx(const NmTransposedViewT<E>& wt, const PackedTokensT<E>& dy, MatrixView dx, Range tiles,   \
                            Range groups) {                                                                           \
    simd::nm_bwd_data<false>(wt, dy, dx, tiles, groups);                                                              \
    simd::Simd::stream_fence();                                                                                       \
  }

namespace sparsetrain::SPARSETRAIN_ISA_NS {
namespace simd = SPARSETRAIN_SIMD_NS;
SPARSETRAIN_DEFINE_KERNELS(float, )
SPARSETRAIN_DEFINE_KERNELS(Bf16, _bf16)
}  // namespace sparsetrain::SPARSETRAIN_ISA_NS
#undef SPARSETRAIN_DEFINE_KERNELS
