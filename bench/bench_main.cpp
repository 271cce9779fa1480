// sparsetrain_micro_bench: Google Benchmark driver. The context block of every report names the
// kernel ISA in force (SPARSETRAIN_MAX_ISA caps it) and the thread count (OMP_NUM_THREADS).
//
//   build-bench/bench/sparsetrain_micro_bench --benchmark_filter=update_mask
#include <benchmark/benchmark.h>

#include <string>

#include "sparsetrain/core/isa.h"
#include "sparsetrain/core/parallel.h"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("sparsetrain_isa", std::string(sparsetrain::isa_name(sparsetrain::effective_isa())));
  benchmark::AddCustomContext("sparsetrain_threads", std::to_string(sparsetrain::num_threads()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
