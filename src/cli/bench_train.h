#pragma once
// `sparsetrain bench train`: times whole training steps of a config's model dense (the same config
// without its sparsity section) and sparse, and compares speed and memory.
//
// Each case runs in a child process of its own (this binary with --case), so each has its own
// peak resident memory, and dense and sparse cases alternate when --rounds > 1 so both see the
// same drift of a shared machine. The dense case also times oneDNN's GEMM on the model's largest
// layer, so the dense step's model FLOP rate can be put against the best dense rate in the same run.
// With --profile each case also reports where its timed steps went, phase by phase.
#include <cstdint>
#include <optional>
#include <string>

namespace sparsetrain {

struct BenchTrainOptions {
  std::string params;
  int steps = 5;    // timed steps per case (median reported)
  int warmup = 2;   // untimed steps before them
  int rounds = 1;   // dense/sparse pairs of processes
  int threads = 0;  // 0: the config's runconfig.num_threads, else OpenMP's default
  std::optional<uint64_t> seed;
  std::optional<std::string> precision;  // fp32 or bf16 for both cases; default: the config's
  bool json = false;
  bool profile = false;  // also time each phase of the step (core/profile.h)
  std::optional<double> target;  // the sparse-over-dense speedup to judge the run against
  std::string run_case;  // "dense" or "sparse": run that case in this process, print one JSON line
};

int run_bench_train(const BenchTrainOptions& options);

}  // namespace sparsetrain
