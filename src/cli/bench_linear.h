#pragma once
// `sparsetrain bench linear`: times a linear layer's training step (forward, backward-data,
// backward-weights) dense through oneDNN and sparse through sparsetrain's kernels in one process,
// in float32 or bf16 mixed precision.
#include <string>
#include <vector>

#include "sparsetrain/core/precision.h"

namespace sparsetrain {

struct BenchLinearOptions {
  std::vector<std::string> formats;  // empty = default grid
  std::vector<double> sparsities;    // empty = default grid
  std::vector<int64_t> tokens;       // empty = default grid
  std::vector<int64_t> in_features;  // with out_features: layer shapes, paired
  std::vector<int64_t> out_features;
  int threads = 0;    // 0 = OpenMP default
  int repeats = 7;    // timed runs per case (median reported), after one warm-up
  bool json = false;  // one JSON object per line instead of the table
  // The floor's rates; 0 = measured at the start (kernels/peak_rate.h).
  double peak_gflops = 0;    // multiply-add peak of the threads used
  double bandwidth_gbs = 0;  // memory read bandwidth
  uint64_t seed = 0;
  // bf16: the sparse kernels' bf16 entries against oneDNN's bf16 matmul (operands rounded to bf16,
  // float32 accumulation and outputs, both sides).
  Precision precision = Precision::Fp32;
  // "FORMAT=SPEEDUP": each case of that format is judged against the speedup (cli/speed_target.h).
  std::vector<std::string> targets;
};

int run_bench_linear(const BenchLinearOptions& options);

}  // namespace sparsetrain
