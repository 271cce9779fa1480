// Google Benchmark micro-benchmarks: each sparse kernel pass and a mask update, with the dense
// oneDNN GEMMs at the same shape in the same binary. Counters: nnz, useful GFLOP/s.
//
//   build-bench/bench/sparsetrain_micro_bench --benchmark_filter=update_mask
#include <benchmark/benchmark.h>

#include <string>

#include "core/philox.h"
#include "formats/random_mask.h"
#include "formats/sparse_weight.h"
#include "kernels/dense_gemm.h"
#include "kernels/spmm.h"
#include "ops/linear.h"

namespace sparsetrain {
namespace {

constexpr int64_t kIn = 768, kOut = 3072, kTokens = 1024;
const char* const kFormats[] = {"csr", "bcsr16", "2:4"};

Matrix random_matrix(int64_t rows, int64_t cols, std::string_view name) {
  Matrix m(rows, cols);
  Philox rng(0, name);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = rng.uniform(i) * 2.0f - 1.0f;
  return m;
}

struct Layer {
  Matrix x = random_matrix(kTokens, kIn, "x"), dy = random_matrix(kTokens, kOut, "dy");
  Matrix y{kTokens, kOut}, dx{kTokens, kIn};
  std::unique_ptr<SparseWeight> w;
  LinearWorkspace ws;
  AlignedBuffer<float> dvalues;
  explicit Layer(const FormatSpec& format, double sparsity) {
    const Matrix dense = random_matrix(kOut, kIn, "w");
    w = SparseWeight::from_dense(format, dense, random_mask(format, kOut, kIn, sparsity, Philox(0, "mask")));
    dvalues.resize(w->values().size());
    linear_forward(*w, nullptr, x, y, ws);
    pack_tokens(dy, ws.dy);
  }
};

void set_counters(benchmark::State& state, int64_t nnz, double passes) {
  state.counters["nnz"] = static_cast<double>(nnz);
  state.counters["GFLOP/s"] = benchmark::Counter(passes * 2.0 * static_cast<double>(nnz * kTokens) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

FormatSpec format_arg(const benchmark::State& state) { return FormatSpec::parse(kFormats[state.range(0)], "bench"); }
double sparsity_arg(const benchmark::State& state, const FormatSpec& f) {
  return f.kind == FormatKind::NM ? f.implied_sparsity() : static_cast<double>(state.range(1)) / 100.0;
}

void sparse_forward(benchmark::State& state) {
  const FormatSpec f = format_arg(state);
  Layer layer(f, sparsity_arg(state, f));
  state.SetLabel(f.name());
  for (auto _ : state) linear_forward(*layer.w, nullptr, layer.x, layer.y, layer.ws);
  set_counters(state, layer.w->nnz(), 1);
}

// Both backward passes as one call: CSR fuses them.
void sparse_backward(benchmark::State& state) {
  const FormatSpec f = format_arg(state);
  Layer layer(f, sparsity_arg(state, f));
  state.SetLabel(f.name());
  for (auto _ : state) {
    layer.w->values_changed();
    linear_backward(*layer.w, layer.dy, layer.ws, layer.dx, layer.dvalues.data(), nullptr);
  }
  set_counters(state, layer.w->nnz(), 2);
}

void dense_step(benchmark::State& state) {
  Matrix x = random_matrix(kTokens, kIn, "x"), w = random_matrix(kOut, kIn, "w"), dy = random_matrix(kTokens, kOut, "dy");
  Matrix y(kTokens, kOut), dx(kTokens, kIn), dw(kOut, kIn);
  for (auto _ : state) {
    dense_linear_fwd(x, w, nullptr, y);
    dense_linear_bwd_data(dy, w, dx);
    dense_linear_bwd_weights(dy, x, dw, nullptr);
  }
  set_counters(state, kIn * kOut, 3);
}

// A full mask update of a 3072 x 768 weight between two unrelated masks (the worst case: every
// row changes), structure, transposed companion and surviving values included.
void update_mask(benchmark::State& state) {
  const FormatSpec f = format_arg(state);
  const double sparsity = sparsity_arg(state, f);
  const Mask a = random_mask(f, kOut, kIn, sparsity, Philox(1, "a"));
  const Mask b = random_mask(f, kOut, kIn, sparsity, Philox(2, "b"));
  auto w = SparseWeight::from_dense(f, random_matrix(kOut, kIn, "w"), a);
  w->reserve(a.nnz());
  bool flip = false;
  for (auto _ : state) {
    w->update_mask(flip ? a : b);
    flip = !flip;
  }
  state.SetLabel(f.name());
  state.counters["nnz"] = static_cast<double>(w->nnz());
}

BENCHMARK(sparse_forward)->ArgsProduct({{0, 1}, {90, 95}})->Args({2, 50})->Unit(benchmark::kMillisecond);
BENCHMARK(sparse_backward)->ArgsProduct({{0, 1}, {90, 95}})->Args({2, 50})->Unit(benchmark::kMillisecond);
BENCHMARK(dense_step)->Unit(benchmark::kMillisecond);
BENCHMARK(update_mask)->Args({0, 90})->Args({1, 90})->Args({2, 50})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sparsetrain

BENCHMARK_MAIN();
