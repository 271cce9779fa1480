// The CSR forward's inner loop alone: the AVX-512 row_dot on one thread, one 64-token tile of
// `features` inputs in the packed layout, rows of a random 90%-sparse CSR weight (the format's own
// structure), outputs cycled through a 16-row stage as the kernel does. Nothing else of the kernel
// runs (no transposed stores, no tile loop, no second thread), so the time per entry here against
// the spmm_fwd figure per thread splits the CSR forward's cost into its gathers and the rest
// (docs/kernels.md). Compiled with the AVX-512 flags; skipped where that ISA is not usable.
#include <algorithm>

#include "bench_common.h"
#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/formats/block_sparse.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/kernels/spmm.h"

// The vector type first, then the kernel bodies written against it, as in kernels/spmm_avx512.cpp.
// clang-format off
#include "sparsetrain/kernels/simd/isa_avx512.h"
#include "sparsetrain/kernels/simd/common.h"
// clang-format on

namespace sparsetrain::bench {
namespace {

constexpr int64_t kRows = 2048;
constexpr double kSparsity = 0.9;

void row_dot_gathers(benchmark::State& state) {
  if (!isa_usable(CpuIsa::Avx512)) {
    state.SkipWithError("AVX-512 is not usable on this machine (or capped by SPARSETRAIN_MAX_ISA)");
    return;
  }
  const int64_t features = state.range(0);
  BlockSparseMatrix weight(kRows, features, 1);
  weight.assign(random_matrix(kRows, features, "w"),
                random_mask(FormatSpec::csr(), kRows, features, kSparsity, Philox(0, "mask")));
  const BlockSparseView w = weight.view();
  PackedTokens x;
  pack_tokens(random_matrix(kTokenTile, features, "x"), x);
  AlignedBuffer<float> stage;
  stage.resize(static_cast<std::size_t>(avx512_detail::kStageRows * kTokenTile));
  for (auto _ : state)
    for (int64_t r = 0; r < kRows; ++r) {
      const int32_t begin = w.row_ptr[r];
      float* out = stage.data() + (r % avx512_detail::kStageRows) * kTokenTile;
      avx512_detail::row_dot(
          x.tile(0), w.values + begin, w.row_ptr[r + 1] - begin, [col = w.col + begin](int64_t k) { return col[k]; },
          out);
      benchmark::ClobberMemory();
    }
  const auto entries = static_cast<double>(w.blocks());
  state.counters["panel_KB"] = static_cast<double>(features * kTokenTile * sizeof(float)) / 1024.0;
  state.counters["s/entry"] =
      benchmark::Counter(entries, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * kTokenTile * entries * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

// Panels of 32 KB (L1 on every host), 128 KB and 512 KB (L2): the GPT's 512- and 2048-input layers.
BENCHMARK(row_dot_gathers)->ArgName("features")->Arg(128)->Arg(512)->Arg(2048)->Unit(benchmark::kMillisecond);

}  // namespace sparsetrain::bench
