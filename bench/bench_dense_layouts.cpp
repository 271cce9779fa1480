// The dense path's GEMMs at the benchmark GPT's shapes (T = 2048 tokens; inputs -> outputs of
// its block linears and the tied head) and at the benchmark BERT's tied decoder, each in the
// operand layout the dense path uses and in the transposed one it could use with a transposed
// copy of the weight:
//
//   forward          Y = X W^T   'N','T' on W [N x K]   vs  'N','N' on W^T [K x N]
//   weight gradient  dW = dY^T X 'T','N' into [N x K]   vs  dW^T = X^T dY 'T','N' into [K x N]
//
// and the dense path's own calls (dense_linear_fwd, dense_linear_bwd_weights), which pick a form
// by shape and pay for the transposed copies. Same FLOPs throughout; docs/benchmarks.md records
// the rates ("The dense path's own headroom").
#include <utility>

#include "bench_common.h"
#include "sparsetrain/kernels/dense_gemm.h"

namespace sparsetrain::bench {
namespace {

constexpr int64_t kGptTokens = 2048;

enum Layout : int64_t {
  kForwardNT,
  kForwardNN,
  kWeightGradTN,
  kWeightGradTransposedTN,
  kEngineForward,
  kEngineWeightGrad
};

void dense_layouts(benchmark::State& state) {
  const int64_t k = state.range(0), n = state.range(1), t = state.range(3);
  const auto layout = static_cast<Layout>(state.range(2));
  const Matrix x = random_matrix(t, k, "x"), dy = random_matrix(t, n, "dy");
  const Matrix w = random_matrix(n, k, "w"), wt = random_matrix(k, n, "wt");
  Matrix y(t, n), dw(n, k), dwt(k, n);
  for (auto _ : state) switch (layout) {
      case kForwardNT: gemm(false, true, t, n, k, 1.0f, x.data(), k, w.data(), k, 0.0f, y.data(), n); break;
      case kForwardNN: gemm(false, false, t, n, k, 1.0f, x.data(), k, wt.data(), n, 0.0f, y.data(), n); break;
      case kWeightGradTN: gemm(true, false, n, k, t, 1.0f, dy.data(), n, x.data(), k, 0.0f, dw.data(), k); break;
      case kWeightGradTransposedTN:
        gemm(true, false, k, n, t, 1.0f, x.data(), k, dy.data(), n, 0.0f, dwt.data(), n);
        break;
      case kEngineForward: dense_linear_fwd(x, w, nullptr, y); break;
      case kEngineWeightGrad: dense_linear_bwd_weights(dy, x, dw, nullptr); break;
    }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(t * n * k) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  constexpr const char* kNames[] = {"fwd X.W^T (N,T)",     "fwd X.(W^T copy) (N,N)", "dW = dY^T.X (T,N)",
                                    "dW^T = X^T.dY (T,N)", "dense_linear_fwd",       "dense_linear_bwd_weights"};
  state.SetLabel(kNames[layout]);
}

void benchmark_shapes(benchmark::internal::Benchmark* b) {
  for (auto [k, n] : {std::pair<int64_t, int64_t>{512, 1536}, {512, 512}, {512, 2048}, {2048, 512}, {512, 8192}})
    for (int64_t layout = kForwardNT; layout <= kEngineWeightGrad; ++layout) b->Args({k, n, layout, kGptTokens});
  // The benchmark BERT's tied MLM decoder (768 -> 30,522) on its masked tokens, 15% of 2048.
  for (int64_t layout = kForwardNT; layout <= kEngineWeightGrad; ++layout) b->Args({768, 30522, layout, 307});
  b->ArgNames({"in", "out", "layout", "tokens"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(dense_layouts)->Apply(benchmark_shapes);

}  // namespace sparsetrain::bench
