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
template <int kBlock>
const char* needs_block(const BlockSparseView& w) {
  static_assert(kBlock == 1 || kBlock == 4 || kBlock == 8 || kBlock == 16);
  if (w.block == kBlock) return nullptr;
  return kBlock == 1   ? "needs CSR (block 1)"
         : kBlock == 4 ? "needs 4x4 blocks"
         : kBlock == 8 ? "needs 8x8 blocks"
                       : "needs 16x16 blocks";
}
[[maybe_unused]] const char* needs_n2(const NmView& w) { return w.n == 2 ? nullptr : "needs N = 2"; }
[[maybe_unused]] const char* needs_m4(const NmTransposedView& wt) {
  return wt.m <= 4 ? nullptr : "needs M <= 4 (rows bucketed by kept pattern)";
}

// One ISA's entries of each kernel, in the order they are tried.
#define SPMM_FWD(isa)                                   \
  SPARSETRAIN_IMPL(isa, spmm_fwd_csr, needs_block<1>)   \
  SPARSETRAIN_IMPL(isa, spmm_fwd_bcsr4, needs_block<4>) \
  SPARSETRAIN_IMPL(isa, spmm_fwd_bcsr8, needs_block<8>) \
  SPARSETRAIN_IMPL(isa, spmm_fwd_bcsr16, needs_block<16>)
#define SDDMM(isa)                                   \
  SPARSETRAIN_IMPL(isa, sddmm_csr, needs_block<1>)   \
  SPARSETRAIN_IMPL(isa, sddmm_bcsr4, needs_block<4>) \
  SPARSETRAIN_IMPL(isa, sddmm_bcsr8, needs_block<8>) \
  SPARSETRAIN_IMPL(isa, sddmm_bcsr16, needs_block<16>)
// The driver refuses a weight that is not CSR before it dispatches.
#define CSR_BACKWARD(isa) SPARSETRAIN_IMPL(isa, csr_backward, needs_block<1>)
#define NM_FWD(isa)                          \
  SPARSETRAIN_IMPL(isa, nm_fwd_n2, needs_n2) \
  SPARSETRAIN_IMPL(isa, nm_fwd_any, nullptr)
#define NM_BWD_DATA(isa)                               \
  SPARSETRAIN_IMPL(isa, nm_bwd_data_buckets, needs_m4) \
  SPARSETRAIN_IMPL(isa, nm_bwd_data_any, nullptr)
#define NM_SDDMM(isa) SPARSETRAIN_IMPL(isa, nm_sddmm, nullptr)
#define PACK_ROWS(isa) SPARSETRAIN_IMPL(isa, pack_rows, nullptr)

const KernelList<BlockSparseView, SpmmFwdFn> kSpmmFwd = SPARSETRAIN_IMPL_LIST(SPMM_FWD, spmm_fwd);
const KernelList<BlockSparseView, SddmmFn> kSddmm = SPARSETRAIN_IMPL_LIST(SDDMM, sddmm);
const KernelList<BlockSparseView, CsrBackwardFn> kCsrBackward = SPARSETRAIN_IMPL_LIST(CSR_BACKWARD, csr_backward);
const KernelList<NmView, NmFwdFn> kNmFwd = SPARSETRAIN_IMPL_LIST(NM_FWD, nm_fwd);
const KernelList<NmView, NmSddmmFn> kNmSddmm = SPARSETRAIN_IMPL_LIST(NM_SDDMM, nm_sddmm);
const KernelList<NmTransposedView, NmBwdDataFn> kNmBwdData = SPARSETRAIN_IMPL_LIST(NM_BWD_DATA, nm_bwd_data);
const KernelList<PackedTokens, PackRowsFn> kPackRows = SPARSETRAIN_IMPL_LIST(PACK_ROWS, pack_rows);

void check_shapes(std::string_view kernel, int64_t w_rows, int64_t w_cols, const PackedTokens& x, MatrixView y) {
  if (x.features != w_cols)
    fail("{}: input has {} features but the weight has {} inputs", kernel, x.features, w_cols);
  if (y.rows != x.tokens || y.cols != w_rows)
    fail("{}: output is [{} x {}], expected [{} x {}]", kernel, y.rows, y.cols, x.tokens, w_rows);
}

void check_grad_shapes(std::string_view kernel, int64_t w_rows, int64_t w_cols, const PackedTokens& dy,
                       const PackedTokens& x) {
  if (dy.tokens != x.tokens)
    fail("{}: output gradient has {} tokens but the input has {}", kernel, dy.tokens, x.tokens);
  if (dy.features != w_rows || x.features != w_cols)
    fail("{}: gradient shapes [{} x {}] and [{} x {}] do not match the weight [{} x {}]", kernel, dy.tokens,
         dy.features, x.tokens, x.features, w_rows, w_cols);
}

// Forward split: token tiles when there are enough of them, else rows balanced by nonzeros.
template <typename Run>
void split_tiles_or_rows(int64_t tiles, std::span<const int32_t> row_prefix, Run run) {
  const int nth = num_threads();
  const int64_t rows = static_cast<int64_t>(row_prefix.size()) - 1;
  if (tiles >= 2 * nth || rows < 2 * nth) {
    parallel_run(static_cast<int>(std::min<int64_t>(tiles, nth)), [&](int ith, int n) {
      Range t;
      balance_even(tiles, ith, n, t.begin, t.end);
      run(t, Range{0, rows});
    });
    return;
  }
  std::vector<int64_t> bounds = balance_prefix(row_prefix, nth);
  parallel_run(nth, [&](int ith, int) { run(Range{0, tiles}, Range{bounds[ith], bounds[ith + 1]}); });
}

template <typename Run>
void split_rows(std::span<const int32_t> row_prefix, Run run) {
  std::vector<int64_t> bounds = balance_prefix(row_prefix, num_threads());
  parallel_run(num_threads(), [&](int ith, int) { run(Range{bounds[ith], bounds[ith + 1]}); });
}

template <typename Run>
void split_rows_even(int64_t rows, Run run) {
  parallel_run(static_cast<int>(std::min<int64_t>(rows, num_threads())), [&](int ith, int nth) {
    Range r;
    balance_even(rows, ith, nth, r.begin, r.end);
    run(r);
  });
}

}  // namespace

void PackedTokens::shape_for(int64_t t, int64_t f) {
  tokens = t;
  features = f;
  features_padded = (f + kFeaturePad - 1) / kFeaturePad * kFeaturePad;
  tiles = (t + kTokenTile - 1) / kTokenTile;
  data.resize(static_cast<std::size_t>(tiles * features_padded * kTokenTile));
}

void pack_tokens(ConstMatrixView src, PackedTokens& dst, float* tile_sums) {
  pack_tokens_from(src.rows, src.cols, rows_of(src), dst, tile_sums);
}

void pack_tile(PackRowsFn* pack_rows, const TokenRows& rows, PackedTokens& dst, int64_t tile, float* scratch,
               float* sums) {
  const int64_t features = dst.features;
  float* out = dst.tile(tile);
  const int valid = static_cast<int>(std::min<int64_t>(kTokenTile, dst.tokens - tile * kTokenTile));
  if (sums != nullptr) std::fill(sums, sums + features, 0.0f);
  for (int t0 = 0; t0 < valid; t0 += kPackBlock) {
    const int n = std::min(kPackBlock, valid - t0);
    pack_rows(rows(tile * kTokenTile + t0, MatrixView{scratch, n, features, features}), dst, tile, t0, sums);
  }
  // Padding: the tokens past the last one, then the features past the last one.
  if (valid < kTokenTile)
    for (int64_t f = 0; f < features; ++f) std::fill(out + f * kTokenTile + valid, out + (f + 1) * kTokenTile, 0.0f);
  std::fill(out + features * kTokenTile, out + dst.features_padded * kTokenTile, 0.0f);
}

void pack_tokens_from(int64_t tokens, int64_t features, const TokenRows& rows, PackedTokens& dst, float* tile_sums) {
  dst.shape_for(tokens, features);
  const auto& impl = pick("pack_rows", kPackRows, dst);
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

void spmm_fwd(const BlockSparseView& w, const PackedTokens& x, const float* bias, MatrixView y) {
  check_shapes("spmm_fwd", w.rows, w.cols, x, y);
  const auto& impl = pick("spmm_fwd", kSpmmFwd, w);
  split_tiles_or_rows(x.tiles, {w.row_ptr, static_cast<std::size_t>(w.block_rows + 1)},
                      [&](Range tiles, Range rows) { impl.run(w, x, bias, y, tiles, rows); });
}

void sddmm(const BlockSparseView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues,
           bool accumulate) {
  check_grad_shapes("sddmm", w.rows, w.cols, dy, x);
  const auto& impl = pick("sddmm", kSddmm, w);
  split_rows({w.row_ptr, static_cast<std::size_t>(w.block_rows + 1)},
             [&](Range rows) { impl.run(w, dy, x, dvalues, accumulate, rows); });
}

void csr_backward(const BlockSparseView& wt, const int32_t* perm, const PackedTokens& dy, const PackedTokens& x,
                  MatrixView dx, float* dvalues, float* dwt, bool accumulate) {
  if (wt.block != 1) fail("csr_backward: needs a CSR (block 1) pattern, got block {}", wt.block);
  check_grad_shapes("csr_backward", wt.cols, wt.rows, dy, x);
  if (dx.rows != x.tokens || dx.cols != wt.rows)
    fail("csr_backward: dX is [{} x {}], expected [{} x {}]", dx.rows, dx.cols, x.tokens, wt.rows);
  const auto& impl = pick("csr_backward", kCsrBackward, wt);
  split_rows({wt.row_ptr, static_cast<std::size_t>(wt.block_rows + 1)},
             [&](Range rows) { impl.run(wt, dy, x, dx, dwt, rows); });
  const int64_t entries = wt.blocks();
  parallel_run(num_threads(), [&](int ith, int nth) {
    int64_t begin, end;
    balance_even(entries, ith, nth, begin, end);
    for (int64_t i = begin; i < end; ++i) dvalues[perm[i]] = accumulate ? dvalues[perm[i]] + dwt[i] : dwt[i];
  });
}

void nm_fwd(const NmView& w, const PackedTokens& x, const float* bias, MatrixView y) {
  check_shapes("nm_fwd", w.rows, w.cols, x, y);
  const auto& impl = pick("nm_fwd", kNmFwd, w);
  const int nth = num_threads();
  if (x.tiles >= 2 * nth || w.rows < 2 * nth) {
    parallel_run(static_cast<int>(std::min<int64_t>(x.tiles, nth)), [&](int ith, int n) {
      Range t;
      balance_even(x.tiles, ith, n, t.begin, t.end);
      impl.run(w, x, bias, y, t, Range{0, w.rows});
    });
    return;
  }
  split_rows_even(w.rows, [&](Range rows) { impl.run(w, x, bias, y, Range{0, x.tiles}, rows); });
}

void nm_sddmm(const NmView& w, const PackedTokens& dy, const PackedTokens& x, float* dvalues, bool accumulate) {
  check_grad_shapes("nm_sddmm", w.rows, w.cols, dy, x);
  const auto& impl = pick("nm_sddmm", kNmSddmm, w);
  split_rows_even(w.rows, [&](Range rows) { impl.run(w, dy, x, dvalues, accumulate, rows); });
}

void nm_bwd_data(const NmTransposedView& wt, const PackedTokens& dy, MatrixView dx) {
  if (dy.features != wt.rows)
    fail("nm_bwd_data: output gradient has {} features but the weight has {} outputs", dy.features, wt.rows);
  if (dx.rows != dy.tokens || dx.cols != wt.cols)
    fail("nm_bwd_data: dX is [{} x {}], expected [{} x {}]", dx.rows, dx.cols, dy.tokens, wt.cols);
  const auto& impl = pick("nm_bwd_data", kNmBwdData, wt);
  const int nth = num_threads();
  const int64_t groups = wt.groups();
  if (dy.tiles >= 2 * nth || groups < 2 * nth) {
    parallel_run(static_cast<int>(std::min<int64_t>(dy.tiles, nth)), [&](int ith, int n) {
      Range t;
      balance_even(dy.tiles, ith, n, t.begin, t.end);
      impl.run(wt, dy, dx, t, Range{0, groups});
    });
    return;
  }
  split_rows_even(groups, [&](Range g) { impl.run(wt, dy, dx, Range{0, dy.tiles}, g); });
}

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
