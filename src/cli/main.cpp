// sparsetrain command line. Exit codes (docs/cli.md): 0 success, 1 error while running (the
// message names what was wrong), 2 invalid command line.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/bench_linear.h"
#include "cli/config_command.h"
#include "core/error.h"
#include "core/isa.h"
#include "core/verbose.h"

int main(int argc, char** argv) {
  using namespace sparsetrain;
  CLI::App app{"sparsetrain: sparse neural network training on CPUs"};
  app.require_subcommand(1);
  std::string max_isa;
  bool verbose = false;
  app.add_option("--max-isa", max_isa, "Cap the kernel ISA: avx512, avx2 or ref (as SPARSETRAIN_MAX_ISA)");
  app.add_flag("--verbose-dispatch", verbose,
               "Print which kernel implementation ran (as SPARSETRAIN_VERBOSE=dispatch)");

  auto* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  BenchLinearOptions linear;
  auto* bench_linear = bench->add_subcommand("linear", "Dense (oneDNN) vs sparse linear-layer training step");
  bench_linear->add_option("--format", linear.formats, "Formats: csr, bcsr4, bcsr8, bcsr16, N:M (e.g. 2:4)");
  bench_linear->add_option("--sparsity", linear.sparsities, "Sparsity levels in [0, 1)");
  bench_linear->add_option("--tokens", linear.tokens, "Tokens per step (batch x context)")->check(CLI::PositiveNumber);
  bench_linear->add_option("--in", linear.in_features, "Input features (paired with --out)")
      ->check(CLI::PositiveNumber);
  bench_linear->add_option("--out", linear.out_features, "Output features (paired with --in)")
      ->check(CLI::PositiveNumber);
  bench_linear->add_option("--threads", linear.threads, "Threads (default: OpenMP's)")->check(CLI::PositiveNumber);
  bench_linear->add_option("--repeats", linear.repeats, "Timed runs per case, median reported")
      ->check(CLI::PositiveNumber);
  bench_linear->add_option("--seed", linear.seed, "Seed for data and masks");
  bench_linear->add_option("--peak-gflops", linear.peak_gflops, "FMA peak used for the floor column");
  bench_linear->add_option("--bandwidth-gbs", linear.bandwidth_gbs, "Memory bandwidth used for the floor column");
  bench_linear->add_flag("--json", linear.json, "One JSON object per line");

  ConfigCommandOptions config;
  auto* config_command =
      app.add_subcommand("config", "Validate a config's sparsity section and print what it resolves to");
  config_command->add_option("--params", config.params, "The YAML config")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    if (!max_isa.empty()) set_max_isa(parse_isa(max_isa, "--max-isa"));
    if (verbose) set_verbose_dispatch(true);
    (void)effective_isa();
    if (bench_linear->parsed()) return run_bench_linear(linear);
    if (config_command->parsed()) return run_config_command(config);
  } catch (const Error& e) {
    std::fprintf(stderr, "sparsetrain: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sparsetrain: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
