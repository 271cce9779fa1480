// Mask update of a 3072 x 768 weight: a full rebuild between two unrelated masks with the same
// kept count (the worst case: every row changes), structure, transposed companion and surviving
// values included, within reserved capacity as a training loop runs it.
#include <algorithm>

#include "bench_common.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/formats/sparse_weight.h"

namespace sparsetrain::bench {
namespace {

void update_mask(benchmark::State& state) {
  const FormatSpec f = format_arg(state);
  const double sparsity = sparsity_arg(state, f);
  const Mask a = random_mask(f, kOut, kIn, sparsity, Philox(1, "a"));
  const Mask b = random_mask(f, kOut, kIn, sparsity, Philox(2, "b"));
  auto w = SparseWeight::from_dense(f, random_matrix(kOut, kIn, "w"), a);
  w->reserve(std::max(a.nnz(), b.nnz()));
  w->update_mask(b);  // first use sizes the per-thread scratch
  bool to_a = true;
  for (auto _ : state) {
    w->update_mask(to_a ? a : b);
    to_a = !to_a;
  }
  state.counters["nnz"] = static_cast<double>(w->nnz());
  state.SetLabel(f.name());
}

BENCHMARK(update_mask)
    ->Args({0, 90})
    ->Args({1, 90})
    ->Args({2, 50})
    ->ArgNames({"format", "sparsity"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace sparsetrain::bench
