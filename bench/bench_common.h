#pragma once
// What the micro-benchmarks share: one layer shape (GPT-2 small's MLP up-projection), the
// formats they compare, operand fills and the counters every benchmark reports.
#include <benchmark/benchmark.h>

#include <string_view>

#include "sparsetrain/core/philox.h"
#include "sparsetrain/core/tensor.h"
#include "sparsetrain/formats/format_spec.h"

namespace sparsetrain::bench {

// W [kOut x kIn], X [kTokens x kIn].
inline constexpr int64_t kIn = 768, kOut = 3072, kTokens = 1024;

// Benchmark argument 0 indexes this list; N:M formats run at their own sparsity.
inline constexpr const char* kFormats[] = {"csr", "bcsr16", "2:4"};

inline FormatSpec format_arg(const benchmark::State& state) {
  return FormatSpec::parse(kFormats[state.range(0)], "benchmark argument");
}

// Benchmark argument 1 is the sparsity in percent, ignored by N:M formats.
inline double sparsity_arg(const benchmark::State& state, const FormatSpec& f) {
  return f.kind == FormatKind::NM ? f.implied_sparsity() : static_cast<double>(state.range(1)) / 100.0;
}

inline Matrix random_matrix(int64_t rows, int64_t cols, std::string_view name) {
  Matrix m(rows, cols);
  const Philox rng(0, name);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = rng.uniform(i) * 2.0f - 1.0f;
  return m;
}

// nnz, and useful GFLOP/s: 2 * nnz * tokens per product, `products` products per iteration.
inline void set_flop_counters(benchmark::State& state, int64_t nnz, int products) {
  state.counters["nnz"] = static_cast<double>(nnz);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * products * static_cast<double>(nnz * kTokens) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace sparsetrain::bench
