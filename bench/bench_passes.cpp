// Each pass of a linear layer Y = X W^T at one shape: the sparse kernels per format on packed
// operands (packing is timed on its own), and the dense oneDNN GEMMs they are measured against.
// Labels name the implementation that ran, so a fallback to a slower path is visible.
#include <initializer_list>
#include <memory>
#include <string>

#include "bench_common.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/formats/sparse_weight.h"
#include "sparsetrain/kernels/dense_gemm.h"
#include "sparsetrain/kernels/kernel_list.h"
#include "sparsetrain/kernels/spmm.h"
#include "sparsetrain/ops/linear.h"

namespace sparsetrain::bench {
namespace {

// A sparse layer with X and dY already packed and W^T values current, as inside a training step.
struct SparseLayer {
  Matrix x = random_matrix(kTokens, kIn, "x"), dy = random_matrix(kTokens, kOut, "dy");
  Matrix y{kTokens, kOut}, dx{kTokens, kIn};
  std::unique_ptr<SparseWeight> w;
  LinearWorkspace ws;
  PackedTokens packed_dy;
  AlignedBuffer<float> dvalues;
  FormatSpec format;

  explicit SparseLayer(const benchmark::State& state) : format(format_arg(state)) {
    const Mask mask = random_mask(format, kOut, kIn, sparsity_arg(state, format), Philox(0, "mask"));
    w = SparseWeight::from_dense(format, random_matrix(kOut, kIn, "w"), mask);
    dvalues.resize(w->values().size());
    linear_forward(*w, nullptr, x, y, ws);
    linear_backward(*w, dy, ws, dx, dvalues.data(), nullptr);
    pack_tokens(dy, packed_dy);
  }
  bool nm() const { return format.kind == FormatKind::NM; }
  bool csr() const { return !nm() && format.block == 1; }
  // The format and the implementations the timed kernels dispatched to.
  void label(benchmark::State& state, std::initializer_list<const char*> kernels) const {
    std::string text = format.name();
    for (const char* kernel : kernels) text.append(" ").append(last_dispatch(kernel));
    state.SetLabel(text);
  }
};

void sparse_fwd(benchmark::State& state) {
  SparseLayer l(state);
  for (auto _ : state) l.w->forward(l.ws.x, nullptr, l.y);
  set_flop_counters(state, l.w->nnz(), 1);
  l.label(state, {l.nm() ? "nm_fwd" : "spmm_fwd"});
}

void sparse_bwd_data(benchmark::State& state) {
  SparseLayer l(state);
  for (auto _ : state) l.w->backward_data(l.packed_dy, l.dx);
  set_flop_counters(state, l.w->nnz(), 1);
  l.label(state, {l.nm() ? "nm_bwd_data" : "spmm_fwd"});  // block formats: the forward kernel on W^T
}

void sparse_bwd_weights(benchmark::State& state) {
  SparseLayer l(state);
  for (auto _ : state) l.w->backward_weights(l.packed_dy, l.ws.x, l.dvalues.data());
  set_flop_counters(state, l.w->nnz(), 1);
  l.label(state, {l.nm() ? "nm_sddmm" : "sddmm"});
}

// Both backward passes in the one call training makes: CSR fuses them into one sweep over W^T.
void sparse_bwd(benchmark::State& state) {
  SparseLayer l(state);
  for (auto _ : state) l.w->backward(l.packed_dy, l.ws.x, l.dx, l.dvalues.data());
  set_flop_counters(state, l.w->nnz(), 2);
  if (l.csr())
    l.label(state, {"csr_backward"});
  else
    l.label(state, {l.nm() ? "nm_bwd_data" : "spmm_fwd", l.nm() ? "nm_sddmm" : "sddmm"});
}

void pack(benchmark::State& state) {
  const Matrix x = random_matrix(kTokens, kIn, "x");
  PackedTokens packed;
  for (auto _ : state) pack_tokens(x, packed);
  state.SetBytesProcessed(state.iterations() * 2 * x.size() * static_cast<int64_t>(sizeof(float)));
  state.SetLabel(last_dispatch("pack_rows"));
}

struct DenseLayer {
  Matrix x = random_matrix(kTokens, kIn, "x"), w = random_matrix(kOut, kIn, "w"), dy = random_matrix(kTokens, kOut, "dy");
  Matrix y{kTokens, kOut}, dx{kTokens, kIn}, dw{kOut, kIn};
};

void dense_fwd(benchmark::State& state) {
  DenseLayer l;
  for (auto _ : state) dense_linear_fwd(l.x, l.w, nullptr, l.y);
  set_flop_counters(state, kIn * kOut, 1);
}

void dense_bwd_data(benchmark::State& state) {
  DenseLayer l;
  for (auto _ : state) dense_linear_bwd_data(l.dy, l.w, l.dx);
  set_flop_counters(state, kIn * kOut, 1);
}

void dense_bwd_weights(benchmark::State& state) {
  DenseLayer l;
  for (auto _ : state) dense_linear_bwd_weights(l.dy, l.x, l.dw, nullptr);
  set_flop_counters(state, kIn * kOut, 1);
}

// {format index, sparsity %}: csr and bcsr16 at 90 %, 2:4 at its own 50 %.
void sparse_cases(benchmark::internal::Benchmark* b) {
  b->Args({0, 90})->Args({1, 90})->Args({2, 50})->ArgNames({"format", "sparsity"});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(sparse_fwd)->Apply(sparse_cases);
BENCHMARK(sparse_bwd_data)->Apply(sparse_cases);
BENCHMARK(sparse_bwd_weights)->Apply(sparse_cases);
BENCHMARK(sparse_bwd)->Apply(sparse_cases);
BENCHMARK(pack)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(dense_fwd)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(dense_bwd_data)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(dense_bwd_weights)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sparsetrain::bench
