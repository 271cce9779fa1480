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

// Every kernel comes in float32 and in bf16 (mixed precision): E, the type of the weight values
// and of both packed operands, is float or Bf16; outputs, gradients and accumulation are float32
// in both. The bf16 entries are named with a _bf16 suffix.
//
// Per-ISA entry points: each handles a rectangle of token tiles x (block-)rows.
// Packs token rows [n x F] into tokens [t0, t0 + n) of dst's tile `tile` (t0 a multiple of 16,
// t0 + n <= kTokenTile); with sums, sums[f] += the rows' values of feature f, in token order.
template <typename E>
using PackRowsFnT = void(ConstMatrixView rows, PackedTokensT<E>& dst, int64_t tile, int t0, float* sums);
template <typename E>
using SpmmFwdFnT = void(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y,
                        Range tiles, Range block_rows);
template <typename E>
using SddmmFnT = void(const BlockSparseViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x,
                      float* dvalues, bool accumulate, Range block_rows);
// Fused backward over W^T held as CSR: for the W^T rows in `rows`, dX rows (output-stationary)
// and, for every entry i of those rows, dwt[i] (+)= its weight gradient, in W^T order. The dY
// line each entry gathers feeds both products.
template <typename E>
using CsrBackwardFnT = void(const BlockSparseViewT<E>& wt, const PackedTokensT<E>& dy, const PackedTokensT<E>& x,
                            MatrixView dx, float* dwt, Range rows);
template <typename E>
using NmFwdFnT = void(const NmViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y, Range tiles,
                      Range rows);
template <typename E>
using NmSddmmFnT = void(const NmViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues,
                        bool accumulate, Range rows);
template <typename E>
using NmBwdDataFnT = void(const NmTransposedViewT<E>& wt, const PackedTokensT<E>& dy, MatrixView dx, Range tiles,
                          Range groups);
using PackRowsFn = PackRowsFnT<float>;
using SpmmFwdFn = SpmmFwdFnT<float>;
using SddmmFn = SddmmFnT<float>;
using CsrBackwardFn = CsrBackwardFnT<float>;
using NmFwdFn = NmFwdFnT<float>;
using NmSddmmFn = NmSddmmFnT<float>;
using NmBwdDataFn = NmBwdDataFnT<float>;

// One whole tile of dst (already shaped) through pack_rows, kPackBlock tokens per call, and its
// zero padding; serial. scratch (kPackBlock x dst.features floats) is the block handed to rows,
// which a producer that writes its rows needs (rows_of does not: it may be null there); with
// sums, the tile's feature sums as pack_tokens gives them.
template <typename E>
void pack_tile(PackRowsFnT<E>* pack_rows, const TokenRows& rows, PackedTokensT<E>& dst, int64_t tile, float* scratch,
               float* sums);

// Drivers (dispatch + threading), for E = float and E = Bf16. `accumulate` adds into dvalues
// instead of overwriting them.
template <typename E>
void spmm_fwd(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y);
template <typename E>
void sddmm(const BlockSparseViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues,
           bool accumulate = false);
// Fused backward-data + backward-weights for a CSR weight from its transposed companion wt and
// the permutation perm (entry i of wt is value perm[i] of W): dX = dY W and dvalues (+)= dW at
// W's entries. dwt is scratch of wt.blocks() floats.
template <typename E>
void csr_backward(const BlockSparseViewT<E>& wt, const int32_t* perm, const PackedTokensT<E>& dy,
                  const PackedTokensT<E>& x, MatrixView dx, float* dvalues, float* dwt, bool accumulate = false);
template <typename E>
void nm_fwd(const NmViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y);
template <typename E>
void nm_sddmm(const NmViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues,
              bool accumulate = false);
// Backward-data for an N:M weight from its group-ordered companion: dX = dY W.
template <typename E>
void nm_bwd_data(const NmTransposedViewT<E>& wt, const PackedTokensT<E>& dy, MatrixView dx);

// Bias gradient db[f] (+)= sum_t dY[t][f], from the per-tile sums pack_tokens gave for dY
// (tile_sums [tiles x features]), added in tile order.
void bias_grad(const float* tile_sums, int64_t tiles, int64_t features, float* dbias, bool accumulate = false);

// The entry points of one value type: `sfx` names the type (empty for float, _bf16).
#define SPARSETRAIN_DECLARE_KERNELS(E, sfx)                                                        \
  PackRowsFnT<E> pack_rows##sfx;                                                                   \
  SpmmFwdFnT<E> spmm_fwd_csr##sfx, spmm_fwd_bcsr4##sfx, spmm_fwd_bcsr8##sfx, spmm_fwd_bcsr16##sfx; \
  CsrBackwardFnT<E> csr_backward##sfx;                                                             \
  SddmmFnT<E> sddmm_csr##sfx, sddmm_bcsr4##sfx, sddmm_bcsr8##sfx, sddmm_bcsr16##sfx;               \
  NmFwdFnT<E> nm_fwd_n2##sfx, nm_fwd_any##sfx;                                                     \
  NmSddmmFnT<E> nm_sddmm##sfx;                                                                     \
  NmBwdDataFnT<E> nm_bwd_data_buckets##sfx, nm_bwd_data_any##sfx;

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
PackRowsFnT<Bf16> pack_rows_bf16;
SpmmFwdFnT<Bf16> spmm_fwd_bf16;
CsrBackwardFnT<Bf16> csr_backward_bf16;
SddmmFnT<Bf16> sddmm_bf16;
NmFwdFnT<Bf16> nm_fwd_bf16;
NmSddmmFnT<Bf16> nm_sddmm_bf16;
NmBwdDataFnT<Bf16> nm_bwd_data_bf16;
}  // namespace ref

// Vector implementations, one per specialization: _csr takes block 1 only, _bcsr<b> b x b blocks
// only; nm_fwd_n2 takes N = 2 only, nm_fwd_any any N:M; nm_bwd_data_buckets takes M <= 4 only
// (rows bucketed by kept pattern, NmTransposedView), nm_bwd_data_any any M. csr_backward takes
// CSR only. The lists (spmm_list.cpp) choose among them. The bf16 entries of avx512 and avx2
// widen bf16 to float32 as they load and multiply in float32.
namespace avx2 {
SPARSETRAIN_DECLARE_KERNELS(float, )
SPARSETRAIN_DECLARE_KERNELS(Bf16, _bf16)
}  // namespace avx2
namespace avx512 {
SPARSETRAIN_DECLARE_KERNELS(float, )
SPARSETRAIN_DECLARE_KERNELS(Bf16, _bf16)
}  // namespace avx512
#undef SPARSETRAIN_DECLARE_KERNELS

// AVX512-BF16 entries (vdpbf16ps), bf16 only, for the kernels they specialize; the lists put them
// first, before the AVX-512 bf16 entries (spmm_avx512_bf16.cpp).
namespace avx512_bf16 {
SpmmFwdFnT<Bf16> spmm_fwd_csr_bf16, spmm_fwd_bcsr4_bf16, spmm_fwd_bcsr8_bf16, spmm_fwd_bcsr16_bf16;
CsrBackwardFnT<Bf16> csr_backward_bf16;
SddmmFnT<Bf16> sddmm_csr_bf16, sddmm_bcsr16_bf16;
NmFwdFnT<Bf16> nm_fwd_n2_bf16, nm_fwd_any_bf16;
NmSddmmFnT<Bf16> nm_sddmm_bf16;
NmBwdDataFnT<Bf16> nm_bwd_data_buckets_bf16;
}  // namespace avx512_bf16

}  // namespace sparsetrain
