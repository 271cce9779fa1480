// The CSR forward's inner loop alone: the `row_dot` of each vector ISA the build compiled
// (row_dot_loop.h), on one thread, over one 64-token tile of `features` inputs in the packed
// layout, rows of a random 90%-sparse CSR weight (the format's own structure), outputs cycled
// through a 16-row stage as the kernel does. Nothing else of the kernel runs (no transposed
// stores, no tile loop, no second thread), so the time per entry here against the spmm_fwd
// figure per thread splits the CSR forward's cost into its gathers and the rest
// (docs/kernels.md). An ISA this machine cannot run (or SPARSETRAIN_MAX_ISA caps) is skipped
// with the reason.
#include <string>

#include "bench_common.h"
#include "row_dot_loop.h"
#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/kernels/spmm.h"

namespace sparsetrain::bench {
namespace {

constexpr int64_t kRows = 2048;
constexpr double kSparsity = 0.9;

template <CpuIsa kIsa, RowDotLoop kLoop>
void row_dot_gathers(benchmark::State& state) {
  if (!isa_usable(kIsa)) {
    const std::string why =
        std::string(isa_name(kIsa)) + " is not usable on this machine (or capped by SPARSETRAIN_MAX_ISA)";
    state.SkipWithError(why.c_str());
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
  stage.resize(static_cast<std::size_t>(kRowDotStageRows * kTokenTile));
  for (auto _ : state) kLoop(x, w, stage.data());
  const auto entries = static_cast<double>(w.blocks());
  state.counters["panel_KB"] = static_cast<double>(features * kTokenTile * sizeof(float)) / 1024.0;
  state.counters["s/entry"] =
      benchmark::Counter(entries, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * kTokenTile * entries * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Panels of 32 KB (L1 on every host), 128 KB and 512 KB (L2): the GPT's 512- and 2048-input layers.
void panels(benchmark::internal::Benchmark* b) {
  b->ArgName("features")->Arg(128)->Arg(512)->Arg(2048)->Unit(benchmark::kMillisecond);
}

}  // namespace

#ifdef SPARSETRAIN_HAVE_AVX512
BENCHMARK(row_dot_gathers<CpuIsa::Avx512, avx512::row_dot_rows>)->Name("row_dot_gathers_avx512")->Apply(panels);
#endif
#ifdef SPARSETRAIN_HAVE_AVX2
BENCHMARK(row_dot_gathers<CpuIsa::Avx2, avx2::row_dot_rows>)->Name("row_dot_gathers_avx2")->Apply(panels);
#endif

}  // namespace sparsetrain::bench
