#pragma once
// The three passes of a sparse linear layer, Y = X * W^T + b, for every sparse format.
//
//   X  [T x K]  token-major input        W  [N x K]  sparse weight (BlockSparseView or NmView)
//   Y  [T x N]  token-major output       b  [N]      bias (may be null)
//
//   forward           Y  = X * W^T + b        spmm_fwd(W,   pack(X),  b, Y)
//   backward-data     dX = dY * W             spmm_fwd(W^T, pack(dY), nullptr, dX)
//   backward-weights  dW = dY^T * X, only at W's nonzeros (a sampled dense-dense product)
//                                             sddmm(W, pack(dY), pack(X), dW.values)
//
// backward-data runs the forward kernel on the transposed companion W^T that every block format
// keeps (formats/), so both are output-stationary and need no atomics; N:M keeps its entries
// ordered by column group instead (NmTransposedView) and runs nm_bwd_data. The weight pass writes one
// value per stored entry (padding included, which stays zero because packed padding is zero).
//
// Token-major outputs (Y, dX) of kStreamOutputBytes and more are written with non-temporal
// stores: they leave the caches before the next operation reads them, and a line written without
// one is first filled from memory (read for ownership), a burst of misses that stalls the
// gathers behind it. Smaller outputs stay in the caches for their reader.
//
// Threading: the drivers split work across the OpenMP pool. The forward pass splits token tiles
// when there are at least two per thread and otherwise block-rows balanced by nonzeros; the weight
// pass always splits block-rows by nonzeros, so no two threads write the same value.
#include <cstdint>

#include "sparsetrain/core/tensor.h"
#include "sparsetrain/kernels/packed_tokens.h"
#include "sparsetrain/kernels/sparse_view.h"

namespace sparsetrain {

inline constexpr int64_t kStreamOutputBytes = int64_t{4} << 20;

struct Range {
  int64_t begin = 0;
  int64_t end = 0;
};

// Per-ISA entry points: each handles a rectangle of token tiles x (block-)rows.
// Packs token rows [n x F] into tokens [t0, t0 + n) of dst's tile `tile` (t0 a multiple of 16,
// t0 + n <= kTokenTile); with sums, sums[f] += the rows' values of feature f, in token order.
using PackRowsFn = void(ConstMatrixView rows, PackedTokens& dst, int64_t tile, int t0, float* sums);
// One whole tile of dst (already shaped) through pack_rows, kPackBlock tokens per call, and its
// zero padding; serial. scratch (kPackBlock x dst.features floats) is the block handed to rows,
// which a producer that writes its rows needs (rows_of does not: it may be null there); with
// sums, the tile's feature sums as pack_tokens gives them.
void pack_tile(PackRowsFn* pack_rows, const TokenRows& rows, PackedTokens& dst, int64_t tile, float* scratch,
               float* sums);
using SpmmFwdFn = void(const BlockSparseView& w, const PackedTokens& x, const float* bias, MatrixView y,
                       Range tiles, Range block_rows);
using SddmmFn = void(const BlockSparseView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                     bool accumulate, Range block_rows);
// Fused backward over W^T held as CSR: for the W^T rows in `rows`, dX rows (output-stationary)
// and, for every entry i of those rows, dwt[i] (+)= its weight gradient, in W^T order. The dY
// line each entry gathers feeds both products.
using CsrBackwardFn = void(const BlockSparseView& wt, const PackedTokens& dy, const PackedTokens& x, MatrixView dx,
                           float* dwt, Range rows);
using NmFwdFn = void(const NmView& w, const PackedTokens& x, const float* bias, MatrixView y, Range tiles,
                     Range rows);
using NmSddmmFn = void(const NmView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues,
                       bool accumulate, Range rows);
using NmBwdDataFn = void(const NmTransposedView& wt, const PackedTokens& dy, MatrixView dx, Range tiles,
                         Range groups);

// Drivers (dispatch + threading). `accumulate` adds into dvalues instead of overwriting them.
void spmm_fwd(const BlockSparseView& w, const PackedTokens& x, const float* bias, MatrixView y);
void sddmm(const BlockSparseView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues,
           bool accumulate = false);
// Fused backward-data + backward-weights for a CSR weight from its transposed companion wt and
// the permutation perm (entry i of wt is value perm[i] of W): dX = dY W and dvalues (+)= dW at
// W's entries. dwt is scratch of wt.blocks() floats.
void csr_backward(const BlockSparseView& wt, const int32_t* perm, const PackedTokens& dy, const PackedTokens& x,
                  MatrixView dx, float* dvalues, float* dwt, bool accumulate = false);
void nm_fwd(const NmView& w, const PackedTokens& x, const float* bias, MatrixView y);
void nm_sddmm(const NmView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues,
              bool accumulate = false);
// Backward-data for an N:M weight from its group-ordered companion: dX = dY W.
void nm_bwd_data(const NmTransposedView& wt, const PackedTokens& dy, MatrixView dx);

// Bias gradient db[f] (+)= sum_t dY[t][f], from the per-tile sums pack_tokens gave for dY
// (tile_sums [tiles x features]), added in tile order.
void bias_grad(const float* tile_sums, int64_t tiles, int64_t features, float* dbias, bool accumulate = false);

// Reference implementations: the oracle for every other entry, and the last entry of every list
// (they take any block size and any N:M).
namespace ref {
PackRowsFn pack_rows;
SpmmFwdFn spmm_fwd;
CsrBackwardFn csr_backward;
SddmmFn sddmm;
NmFwdFn nm_fwd;
NmSddmmFn nm_sddmm;
NmBwdDataFn nm_bwd_data;
}  // namespace ref

// Vector implementations, one per specialization: _csr takes block 1 only, _bcsr<b> b x b blocks
// only; nm_fwd_n2 takes N = 2 only, nm_fwd_any any N:M; nm_bwd_data_buckets takes M <= 4 only
// (rows bucketed by kept pattern, NmTransposedView), nm_bwd_data_any any M. csr_backward takes
// CSR only. The lists (spmm_list.cpp) choose among them.
#define SPARSETRAIN_DECLARE_ISA_KERNELS(isa)                               \
  namespace isa {                                                          \
  PackRowsFn pack_rows;                                                    \
  SpmmFwdFn spmm_fwd_csr, spmm_fwd_bcsr4, spmm_fwd_bcsr8, spmm_fwd_bcsr16; \
  CsrBackwardFn csr_backward;                                              \
  SddmmFn sddmm_csr, sddmm_bcsr4, sddmm_bcsr8, sddmm_bcsr16;               \
  NmFwdFn nm_fwd_n2, nm_fwd_any;                                           \
  NmSddmmFn nm_sddmm;                                                      \
  NmBwdDataFn nm_bwd_data_buckets, nm_bwd_data_any;                        \
  }
SPARSETRAIN_DECLARE_ISA_KERNELS(avx2)
SPARSETRAIN_DECLARE_ISA_KERNELS(avx512)
#undef SPARSETRAIN_DECLARE_ISA_KERNELS

}  // namespace sparsetrain
