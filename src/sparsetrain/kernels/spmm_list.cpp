// Implementation lists and the threading drivers for the sparse kernels. Partitioning is shared;
// only the per-ISA inner loops differ.
#include <algorithm>
#include <vector>

#include "sparsetrain/core/parallel.h"
#include "sparsetrain/kernels/kernel_list.h"
#include "sparsetrain/kernels/spmm.h"

namespace sparsetrain {

namespace {

// Why a vector entry declines a problem: each runs one block size (1 = CSR), N:M pattern or
// range of M, and hands nothing on. The reference entry, last in every list, takes them all.
template <int kBlock, typename E>
const char* needs_block(const BlockSparseViewT<E>& w) {
  static_assert(kBlock == 1 || kBlock == 4 || kBlock == 8 || kBlock == 16);
  if (w.block == kBlock) return nullptr;
  return kBlock == 1   ? "needs CSR (block 1)"
         : kBlock == 4 ? "needs 4x4 blocks"
         : kBlock == 8 ? "needs 8x8 blocks"
                       : "needs 16x16 blocks";
}
template <typename E>
[[maybe_unused]] const char* needs_n2(const NmViewT<E>& w) {
  return w.n == 2 ? nullptr : "needs N = 2";
}
template <typename E>
[[maybe_unused]] const char* needs_m4(const NmTransposedViewT<E>& wt) {
  return wt.m <= 4 ? nullptr : "needs M <= 4 (rows bucketed by kept pattern)";
}

// One ISA's entries of each kernel, in the order they are tried, for the value type named by
// sfx (empty: float; _bf16).
#define SPMM_FWD(isa, sfx)                                   \
  SPARSETRAIN_IMPL(isa, spmm_fwd_csr##sfx, needs_block<1>)   \
  SPARSETRAIN_IMPL(isa, spmm_fwd_bcsr4##sfx, needs_block<4>) \
  SPARSETRAIN_IMPL(isa, spmm_fwd_bcsr8##sfx, needs_block<8>) \
  SPARSETRAIN_IMPL(isa, spmm_fwd_bcsr16##sfx, needs_block<16>)
#define SDDMM(isa, sfx)                                   \
  SPARSETRAIN_IMPL(isa, sddmm_csr##sfx, needs_block<1>)   \
  SPARSETRAIN_IMPL(isa, sddmm_bcsr4##sfx, needs_block<4>) \
  SPARSETRAIN_IMPL(isa, sddmm_bcsr8##sfx, needs_block<8>) \
  SPARSETRAIN_IMPL(isa, sddmm_bcsr16##sfx, needs_block<16>)
// The driver refuses a weight that is not CSR before it dispatches.
#define CSR_BACKWARD(isa, sfx) SPARSETRAIN_IMPL(isa, csr_backward##sfx, needs_block<1>)
#define NM_FWD(isa, sfx)                          \
  SPARSETRAIN_IMPL(isa, nm_fwd_n2##sfx, needs_n2) \
  SPARSETRAIN_IMPL(isa, nm_fwd_any##sfx, nullptr)
#define NM_BWD_DATA(isa, sfx)                               \
  SPARSETRAIN_IMPL(isa, nm_bwd_data_buckets##sfx, needs_m4) \
  SPARSETRAIN_IMPL(isa, nm_bwd_data_any##sfx, nullptr)
#define NM_SDDMM(isa, sfx) SPARSETRAIN_IMPL(isa, nm_sddmm##sfx, nullptr)
#define PACK_ROWS(isa, sfx) SPARSETRAIN_IMPL(isa, pack_rows##sfx, nullptr)

#define SPMM_FWD_F32(isa) SPMM_FWD(isa, )
#define SDDMM_F32(isa) SDDMM(isa, )
#define CSR_BACKWARD_F32(isa) CSR_BACKWARD(isa, )
#define NM_FWD_F32(isa) NM_FWD(isa, )
#define NM_BWD_DATA_F32(isa) NM_BWD_DATA(isa, )
#define NM_SDDMM_F32(isa) NM_SDDMM(isa, )
#define PACK_ROWS_F32(isa) PACK_ROWS(isa, )
#define SPMM_FWD_BF16(isa) SPMM_FWD(isa, _bf16)
#define SDDMM_BF16(isa) SDDMM(isa, _bf16)
#define CSR_BACKWARD_BF16(isa) CSR_BACKWARD(isa, _bf16)
#define NM_FWD_BF16(isa) NM_FWD(isa, _bf16)
#define NM_BWD_DATA_BF16(isa) NM_BWD_DATA(isa, _bf16)
#define NM_SDDMM_BF16(isa) NM_SDDMM(isa, _bf16)
#define PACK_ROWS_BF16(isa) PACK_ROWS(isa, _bf16)

// A kernel's name (as verbose dispatch and last_dispatch give it) and its implementation list.
template <typename Problem, typename Fn>
struct NamedList {
  std::string_view kernel;
  KernelList<Problem, Fn> impls;
  const KernelImpl<Problem, Fn>& pick(const Problem& p) const { return sparsetrain::pick(kernel, impls, p); }
};

template <typename E>
struct Lists;
template <>
struct Lists<float> {
  static inline const NamedList<BlockSparseView, SpmmFwdFn> spmm_fwd{"spmm_fwd",
                                                                     SPARSETRAIN_IMPL_LIST(SPMM_FWD_F32, spmm_fwd)};
  static inline const NamedList<BlockSparseView, SddmmFn> sddmm{"sddmm", SPARSETRAIN_IMPL_LIST(SDDMM_F32, sddmm)};
  static inline const NamedList<BlockSparseView, CsrBackwardFn> csr_backward{
      "csr_backward", SPARSETRAIN_IMPL_LIST(CSR_BACKWARD_F32, csr_backward)};
  static inline const NamedList<NmView, NmFwdFn> nm_fwd{"nm_fwd", SPARSETRAIN_IMPL_LIST(NM_FWD_F32, nm_fwd)};
  static inline const NamedList<NmView, NmSddmmFn> nm_sddmm{"nm_sddmm", SPARSETRAIN_IMPL_LIST(NM_SDDMM_F32, nm_sddmm)};
  static inline const NamedList<NmTransposedView, NmBwdDataFn> nm_bwd_data{
      "nm_bwd_data", SPARSETRAIN_IMPL_LIST(NM_BWD_DATA_F32, nm_bwd_data)};
  static inline const NamedList<PackedTokens, PackRowsFn> pack_rows{"pack_rows",
                                                                    SPARSETRAIN_IMPL_LIST(PACK_ROWS_F32, pack_rows)};
};
template <>
struct Lists<Bf16> {
  static inline const NamedList<BlockSparseViewT<Bf16>, SpmmFwdFnT<Bf16>> spmm_fwd{
      "spmm_fwd_bf16", SPARSETRAIN_IMPL_LIST_AFTER(SPMM_FWD(avx512_bf16, _bf16), SPMM_FWD_BF16, spmm_fwd_bf16)};
  static inline const NamedList<BlockSparseViewT<Bf16>, SddmmFnT<Bf16>> sddmm{
      "sddmm_bf16", SPARSETRAIN_IMPL_LIST_AFTER(SPARSETRAIN_IMPL(avx512_bf16, sddmm_csr_bf16, needs_block<1>)
                                                    SPARSETRAIN_IMPL(avx512_bf16, sddmm_bcsr16_bf16, needs_block<16>),
                                                SDDMM_BF16, sddmm_bf16)};
  static inline const NamedList<BlockSparseViewT<Bf16>, CsrBackwardFnT<Bf16>> csr_backward{
      "csr_backward_bf16",
      SPARSETRAIN_IMPL_LIST_AFTER(CSR_BACKWARD(avx512_bf16, _bf16), CSR_BACKWARD_BF16, csr_backward_bf16)};
  static inline const NamedList<NmViewT<Bf16>, NmFwdFnT<Bf16>> nm_fwd{
      "nm_fwd_bf16", SPARSETRAIN_IMPL_LIST_AFTER(NM_FWD(avx512_bf16, _bf16), NM_FWD_BF16, nm_fwd_bf16)};
  static inline const NamedList<NmViewT<Bf16>, NmSddmmFnT<Bf16>> nm_sddmm{
      "nm_sddmm_bf16", SPARSETRAIN_IMPL_LIST_AFTER(NM_SDDMM(avx512_bf16, _bf16), NM_SDDMM_BF16, nm_sddmm_bf16)};
  static inline const NamedList<NmTransposedViewT<Bf16>, NmBwdDataFnT<Bf16>> nm_bwd_data{
      "nm_bwd_data_bf16", SPARSETRAIN_IMPL_LIST_AFTER(SPARSETRAIN_IMPL(avx512_bf16, nm_bwd_data_buckets_bf16, needs_m4),
                                                      NM_BWD_DATA_BF16, nm_bwd_data_bf16)};
  static inline const NamedList<PackedTokensBf16, PackRowsFnT<Bf16>> pack_rows{
      "pack_rows_bf16", SPARSETRAIN_IMPL_LIST(PACK_ROWS_BF16, pack_rows_bf16)};
};

template <typename E>
void check_shapes(std::string_view kernel, int64_t w_rows, int64_t w_cols, const PackedTokensT<E>& x, MatrixView y) {
  if (x.features != w_cols) fail("{}: input has {} features but the weight has {} inputs", kernel, x.features, w_cols);
  if (y.rows != x.tokens || y.cols != w_rows)
    fail("{}: output is [{} x {}], expected [{} x {}]", kernel, y.rows, y.cols, x.tokens, w_rows);
}

template <typename E>
void check_grad_shapes(std::string_view kernel, int64_t w_rows, int64_t w_cols, const PackedTokensT<E>& dy,
                       const PackedTokensT<E>& x) {
  if (dy.tokens != x.tokens)
    fail("{}: output gradient has {} tokens but the input has {}", kernel, dy.tokens, x.tokens);
  if (dy.features != w_rows || x.features != w_cols)
    fail("{}: gradient shapes [{} x {}] and [{} x {}] do not match the weight [{} x {}]", kernel, dy.tokens,
         dy.features, x.tokens, x.features, w_rows, w_cols);
}

// Token tiles split evenly, every thread taking all rows, when there are at least two tiles per
// thread or too few rows to split; returns whether it ran.
template <typename Run>
bool split_tiles(int64_t tiles, int64_t rows, Run& run) {
  const int nth = num_threads();
  if (tiles < 2 * nth && rows >= 2 * nth) return false;
  parallel_run(static_cast<int>(std::min<int64_t>(tiles, nth)), [&](int ith, int n) {
    Range t;
    balance_even(tiles, ith, n, t.begin, t.end);
    run(t, Range{0, rows});
  });
  return true;
}

// Forward split: token tiles when there are enough of them, else rows balanced by nonzeros.
template <typename Run>
void split_tiles_or_rows(int64_t tiles, std::span<const int32_t> row_prefix, Run run) {
  const int64_t rows = static_cast<int64_t>(row_prefix.size()) - 1;
  if (split_tiles(tiles, rows, run)) return;
  const int nth = num_threads();
  std::vector<int64_t> bounds = balance_prefix(row_prefix, nth);
  parallel_run(nth, [&](int ith, int) { run(Range{0, tiles}, Range{bounds[ith], bounds[ith + 1]}); });
}

template <typename Run>
void split_rows_even(int64_t rows, Run run) {
  parallel_run(static_cast<int>(std::min<int64_t>(rows, num_threads())), [&](int ith, int nth) {
    Range r;
    balance_even(rows, ith, nth, r.begin, r.end);
    run(r);
  });
}

// The same with rows of equal work (N:M rows, column groups), split evenly.
template <typename Run>
void split_tiles_or_rows_even(int64_t tiles, int64_t rows, Run run) {
  if (split_tiles(tiles, rows, run)) return;
  split_rows_even(rows, [&](Range r) { run(Range{0, tiles}, r); });
}

template <typename Run>
void split_rows(std::span<const int32_t> row_prefix, Run run) {
  std::vector<int64_t> bounds = balance_prefix(row_prefix, num_threads());
  parallel_run(num_threads(), [&](int ith, int) { run(Range{bounds[ith], bounds[ith + 1]}); });
}

}  // namespace

void pack_tokens(ConstMatrixView src, PackedTokens& dst, float* tile_sums) {
  pack_tokens_from(src.rows, src.cols, rows_of(src), dst, tile_sums);
}
void pack_tokens(ConstMatrixView src, PackedTokensBf16& dst, float* tile_sums) {
  pack_tokens_from(src.rows, src.cols, rows_of(src), dst, tile_sums);
}

template <typename E>
void pack_tile(PackRowsFnT<E>* pack_rows, const TokenRows& rows, PackedTokensT<E>& dst, int64_t tile, float* scratch,
               float* sums) {
  const int64_t features = dst.features;
  E* out = dst.tile(tile);
  const int valid = static_cast<int>(std::min<int64_t>(kTokenTile, dst.tokens - tile * kTokenTile));
  if (sums != nullptr) std::fill(sums, sums + features, 0.0f);
  for (int t0 = 0; t0 < valid; t0 += kPackBlock) {
    const int n = std::min(kPackBlock, valid - t0);
    pack_rows(rows(tile * kTokenTile + t0, MatrixView{scratch, n, features, features}), dst, tile, t0, sums);
  }
  // Padding: the tokens past the last one, then the features past the last one.
  if (valid < kTokenTile)
    for (int64_t f = 0; f < features; ++f)
      for (int t = valid; t < kTokenTile; ++t) out[f * kTokenTile + slot_of<E>(t)] = E{};
  std::fill(out + features * kTokenTile, out + dst.features_padded * kTokenTile, E{});
}
template void pack_tile(PackRowsFnT<float>*, const TokenRows&, PackedTokensT<float>&, int64_t, float*, float*);
template void pack_tile(PackRowsFnT<Bf16>*, const TokenRows&, PackedTokensT<Bf16>&, int64_t, float*, float*);

namespace {
template <typename E>
void pack_tokens_from_impl(int64_t tokens, int64_t features, const TokenRows& rows, PackedTokensT<E>& dst,
                           float* tile_sums) {
  dst.shape_for(tokens, features);
  const auto& impl = Lists<E>::pack_rows.pick(dst);
  parallel_run(static_cast<int>(std::max<int64_t>(dst.tiles, 1)), [&](int ith, int nth) {
    int64_t first = 0, last = 0;
    balance_even(dst.tiles, ith, nth, first, last);
    thread_local AlignedBuffer<float> scratch;
    scratch.resize(static_cast<std::size_t>(kPackBlock * features));
    for (int64_t tile = first; tile < last; ++tile)
      pack_tile(impl.run, rows, dst, tile, scratch.data(),
                tile_sums != nullptr ? tile_sums + tile * features : nullptr);
  });
}
}  // namespace

void pack_tokens_from(int64_t tokens, int64_t features, const TokenRows& rows, PackedTokens& dst, float* tile_sums) {
  pack_tokens_from_impl(tokens, features, rows, dst, tile_sums);
}
void pack_tokens_from(int64_t tokens, int64_t features, const TokenRows& rows, PackedTokensBf16& dst,
                      float* tile_sums) {
  pack_tokens_from_impl(tokens, features, rows, dst, tile_sums);
}

template <typename E>
void spmm_fwd(const BlockSparseViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y) {
  const auto& list = Lists<E>::spmm_fwd;
  check_shapes(list.kernel, w.rows, w.cols, x, y);
  const auto& impl = list.pick(w);
  split_tiles_or_rows(x.tiles, {w.row_ptr, static_cast<std::size_t>(w.block_rows + 1)},
                      [&](Range tiles, Range rows) { impl.run(w, x, bias, y, tiles, rows); });
}

template <typename E>
void sddmm(const BlockSparseViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues,
           bool accumulate) {
  const auto& list = Lists<E>::sddmm;
  check_grad_shapes(list.kernel, w.rows, w.cols, dy, x);
  const auto& impl = list.pick(w);
  split_rows({w.row_ptr, static_cast<std::size_t>(w.block_rows + 1)},
             [&](Range rows) { impl.run(w, dy, x, dvalues, accumulate, rows); });
}

template <typename E>
void csr_backward(const BlockSparseViewT<E>& wt, const int32_t* perm, const PackedTokensT<E>& dy,
                  const PackedTokensT<E>& x, MatrixView dx, float* dvalues, float* dwt, bool accumulate) {
  const auto& list = Lists<E>::csr_backward;
  if (wt.block != 1) fail("{}: needs a CSR (block 1) pattern, got block {}", list.kernel, wt.block);
  check_grad_shapes(list.kernel, wt.cols, wt.rows, dy, x);
  if (dx.rows != x.tokens || dx.cols != wt.rows)
    fail("{}: dX is [{} x {}], expected [{} x {}]", list.kernel, dx.rows, dx.cols, x.tokens, wt.rows);
  const auto& impl = list.pick(wt);
  split_rows({wt.row_ptr, static_cast<std::size_t>(wt.block_rows + 1)},
             [&](Range rows) { impl.run(wt, dy, x, dx, dwt, rows); });
  const int64_t entries = wt.blocks();
  parallel_run(num_threads(), [&](int ith, int nth) {
    int64_t begin, end;
    balance_even(entries, ith, nth, begin, end);
    for (int64_t i = begin; i < end; ++i) dvalues[perm[i]] = accumulate ? dvalues[perm[i]] + dwt[i] : dwt[i];
  });
}

template <typename E>
void nm_fwd(const NmViewT<E>& w, const PackedTokensT<E>& x, const float* bias, MatrixView y) {
  const auto& list = Lists<E>::nm_fwd;
  check_shapes(list.kernel, w.rows, w.cols, x, y);
  const auto& impl = list.pick(w);
  split_tiles_or_rows_even(x.tiles, w.rows, [&](Range tiles, Range rows) { impl.run(w, x, bias, y, tiles, rows); });
}

template <typename E>
void nm_sddmm(const NmViewT<E>& w, const PackedTokensT<E>& dy, const PackedTokensT<E>& x, float* dvalues,
              bool accumulate) {
  const auto& list = Lists<E>::nm_sddmm;
  check_grad_shapes(list.kernel, w.rows, w.cols, dy, x);
  const auto& impl = list.pick(w);
  split_rows_even(w.rows, [&](Range rows) { impl.run(w, dy, x, dvalues, accumulate, rows); });
}

template <typename E>
void nm_bwd_data(const NmTransposedViewT<E>& wt, const PackedTokensT<E>& dy, MatrixView dx) {
  const auto& list = Lists<E>::nm_bwd_data;
  if (dy.features != wt.rows)
    fail("{}: output gradient has {} features but the weight has {} outputs", list.kernel, dy.features, wt.rows);
  if (dx.rows != dy.tokens || dx.cols != wt.cols)
    fail("{}: dX is [{} x {}], expected [{} x {}]", list.kernel, dx.rows, dx.cols, dy.tokens, wt.cols);
  const auto& impl = list.pick(wt);
  split_tiles_or_rows_even(dy.tiles, wt.groups(),
                           [&](Range tiles, Range groups) { impl.run(wt, dy, dx, tiles, groups); });
}

#define SPARSETRAIN_INSTANTIATE_DRIVERS(E)                                                                         \
  template void spmm_fwd(const BlockSparseViewT<E>&, const PackedTokensT<E>&, const float*, MatrixView);           \
  template void sddmm(const BlockSparseViewT<E>&, const PackedTokensT<E>&, const PackedTokensT<E>&, float*, bool); \
  template void csr_backward(const BlockSparseViewT<E>&, const int32_t*, const PackedTokensT<E>&,                  \
                             const PackedTokensT<E>&, MatrixView, float*, float*, bool);                           \
  template void nm_fwd(const NmViewT<E>&, const PackedTokensT<E>&, const float*, MatrixView);                      \
  template void nm_sddmm(const NmViewT<E>&, const PackedTokensT<E>&, const PackedTokensT<E>&, float*, bool);       \
  template void nm_bwd_data(const NmTransposedViewT<E>&, const PackedTokensT<E>&, MatrixView);
SPARSETRAIN_INSTANTIATE_DRIVERS(float)
SPARSETRAIN_INSTANTIATE_DRIVERS(Bf16)
#undef SPARSETRAIN_INSTANTIATE_DRIVERS

// Tokens in order within a tile (pack_rows), tiles in order here: the same bits for any thread
// count and ISA.
void bias_grad(const float* tile_sums, int64_t tiles, int64_t features, float* dbias, bool accumulate) {
  thread_local std::vector<float> total;
  total.assign(static_cast<std::size_t>(features), 0.0f);
  for (int64_t tile = 0; tile < tiles; ++tile)
    for (int64_t f = 0; f < features; ++f) total[f] += tile_sums[tile * features + f];
  for (int64_t f = 0; f < features; ++f) dbias[f] = accumulate ? dbias[f] + total[f] : total[f];
}

}  // namespace sparsetrain
