// The `sparsetrain` command as a user meets it: JSON lines and tables of `bench linear` and
// `bench train`, exit codes 0/1/2 with messages naming what was wrong, the ISA cap and dispatch
// tracing, from options and from the environment.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.h"
#include "isa_testing.h"
#include "sparsetrain/core/build_info.h"
#include "sparsetrain/core/cpu_model.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/kernels/dense_isa.h"
#include "tiny_gpt_run.h"

namespace sparsetrain::testing {
namespace {

// A tiny layer, one thread, one timed run: each case takes milliseconds.
const std::vector<std::string> kTiny = {"--in", "40", "--out", "24", "--tokens", "70", "--repeats", "1"};
const std::vector<std::string> kOneThread = {"OMP_NUM_THREADS=1"};

std::vector<std::string> bench_linear(std::vector<std::string> extra) {
  std::vector<std::string> args = {"bench", "linear"};
  args.insert(args.end(), kTiny.begin(), kTiny.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CliBenchLinear, JsonPrintsOneObjectPerCaseWithTheDocumentedKeys) {
  const CliResult r =
      run_cli(bench_linear({"--sparsity", "0.9", "--format", "csr", "--format", "2:4", "--json"}), kOneThread);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  const char* formats[] = {"csr", "2:4"};
  const double sparsities[] = {0.9, 0.5};  // N:M runs at its own sparsity
  for (std::size_t i = 0; i < lines.size(); ++i) {
    SCOPED_TRACE(lines[i]);
    const nlohmann::json j = nlohmann::json::parse(lines[i]);  // throws, failing the test, if not JSON
    ASSERT_TRUE(j.is_object());
    for (const char* key : {"format", "sparsity", "tokens", "in", "out", "threads", "isa", "dense_ms", "sparse_ms",
                            "speedup", "useful_gflops"})
      ASSERT_TRUE(j.contains(key)) << "missing " << key;
    EXPECT_EQ(j["format"], formats[i]);
    EXPECT_EQ(j["onednn_isa"], dense_isa());
    EXPECT_NEAR(j["sparsity"].get<double>(), sparsities[i], 1e-12);
    EXPECT_EQ(j["tokens"], 70);
    EXPECT_EQ(j["in"], 40);
    EXPECT_EQ(j["out"], 24);
    EXPECT_EQ(j["threads"], 1);
    const double dense_ms = j["dense_ms"], sparse_ms = j["sparse_ms"];
    EXPECT_GT(dense_ms, 0.0);
    EXPECT_GT(sparse_ms, 0.0);
    EXPECT_NEAR(j["speedup"].get<double>(), dense_ms / sparse_ms, 1e-9 * dense_ms / sparse_ms);
    // Useful work: 3 products of 2 * nnz * tokens FLOPs.
    const double nnz = std::round((1.0 - sparsities[i]) * 40 * 24);
    const double gflops = 6.0 * nnz * 70 / (sparse_ms * 1e6);
    EXPECT_NEAR(j["useful_gflops"].get<double>(), gflops, 1e-9 * gflops);
  }
}

// --precision bf16 runs the bf16 kernels against oneDNN's bf16 product, and says so.
TEST(CliBenchLinear, Bf16RunsTheBf16KernelsAndNamesThePrecision) {
  const CliResult r =
      run_cli({"--verbose-dispatch", "bench", "linear", "--in", "40", "--out", "24", "--tokens", "70", "--repeats", "1",
               "--format", "csr", "--sparsity", "0.9", "--precision", "bf16", "--json"},
              kOneThread);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(lines_of(r.out).at(0));
  EXPECT_EQ(j["precision"], "bf16");
  EXPECT_TRUE(contains(r.err, "dispatch: spmm_fwd_bf16 -> spmm_fwd_csr_bf16_")) << r.err;
  EXPECT_TRUE(contains(r.err, "dispatch: dense_bf16 -> ")) << r.err;
  const CliResult fp32 = run_cli(bench_linear({"--format", "csr", "--json"}), kOneThread);
  ASSERT_EQ(fp32.exit_code, 0) << fp32.err;
  EXPECT_EQ(nlohmann::json::parse(lines_of(fp32.out).at(0))["precision"], "fp32");
}

// The floor's FLOP term divides by the fp32 FMA peak, and by twice it for bf16 kernels that have
// vdpbf16ps (two multiply-adds per float32 lane); with a tiny peak and a huge bandwidth the floor
// is that term alone.
TEST(CliBenchLinear, FloorTakesTwiceThePeakForBf16DotProducts) {
  for (CpuIsa isa : testing_isa::usable_isas())
    for (const char* precision : {"fp32", "bf16"}) {
      SCOPED_TRACE(std::string(isa_name(isa)) + " " + precision);
      std::vector<std::string> args = {"--max-isa", std::string(isa_name(isa))};
      for (const std::string& a : bench_linear({"--format", "csr", "--sparsity", "0.9", "--precision", precision,
                                                "--peak-gflops", "0.001", "--bandwidth-gbs", "1e9", "--json"}))
        args.push_back(a);
      const CliResult r = run_cli(args, kOneThread);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const nlohmann::json j = nlohmann::json::parse(lines_of(r.out).at(0));
      const double weights = j["in"].get<double>() * j["out"].get<double>();
      const double nnz = std::round((1.0 - j["sparsity"].get<double>()) * weights);
      const double peak = (isa == CpuIsa::Avx512Bf16 && std::string(precision) == "bf16" ? 2.0 : 1.0) * 0.001;
      const double floor_ms = 6.0 * nnz * j["tokens"].get<double>() / (peak * 1e6);
      EXPECT_NEAR(j["floor_ms"].get<double>(), floor_ms, 1e-9 * floor_ms);
    }
}

// Without --peak-gflops and --bandwidth-gbs the floor's rates are measured (kernels/peak_rate.h),
// named in the header and given in the JSON; given ones are used as they are (fp32).
TEST(CliBenchLinear, FloorRatesAreMeasuredUnlessGiven) {
  const CliResult measured = run_cli(bench_linear({"--format", "csr", "--sparsity", "0.9", "--json"}), kOneThread);
  ASSERT_EQ(measured.exit_code, 0) << measured.err;
  const nlohmann::json j = nlohmann::json::parse(lines_of(measured.out).at(0));
  const double gflops = j["floor_gflops"].get<double>(), gbs = j["floor_gbs"].get<double>();
  EXPECT_GT(gflops, 0.0);
  EXPECT_GT(gbs, 0.0);
  const double weights = j["in"].get<double>() * j["out"].get<double>();
  const double nnz = std::round((1.0 - j["sparsity"].get<double>()) * weights);
  EXPECT_GE(j["floor_ms"].get<double>(), 6.0 * nnz * j["tokens"].get<double>() / (gflops * 1e6) * (1.0 - 1e-12));

  const CliResult table = run_cli(bench_linear({"--format", "csr", "--sparsity", "0.9"}), kOneThread);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "GFLOP/s (measured: multiply_add_chains_")) << table.out;
  EXPECT_TRUE(contains(table.out, "GB/s (measured))")) << table.out;

  const CliResult given = run_cli(
      bench_linear({"--format", "csr", "--sparsity", "0.9", "--peak-gflops", "123", "--bandwidth-gbs", "45", "--json"}),
      kOneThread);
  ASSERT_EQ(given.exit_code, 0) << given.err;
  const nlohmann::json g = nlohmann::json::parse(lines_of(given.out).at(0));
  EXPECT_EQ(g["floor_gflops"].get<double>(), 123.0);
  EXPECT_EQ(g["floor_gbs"].get<double>(), 45.0);
}

TEST(CliPrecision, UnknownPrecisionIsACommandLineError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"train", "--params", "x.yaml", "--precision", "fp16"},
        std::vector<std::string>{"bench", "linear", "--precision", "half"}}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "--precision")) << r.err;
    EXPECT_TRUE(contains(r.err, "fp32,bf16")) << r.err;
  }
}

TEST(CliBenchLinear, TablePrintsAHeaderAndOneRowPerCase) {
  const CliResult r =
      run_cli(bench_linear({"--sparsity", "0.5", "--sparsity", "0.75", "--format", "bcsr8"}), kOneThread);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int rows = 0;
  for (const auto& line : lines_of(r.out)) rows += contains(line, "40>24") && contains(line, "bcsr8");
  EXPECT_EQ(rows, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "speedup")) << r.out;
  EXPECT_TRUE(contains(r.out, "1 threads")) << r.out;
}

// --target FORMAT=SPEEDUP judges the cases of that format: JSON keys and a table column; a format
// the run does not time, or an item that is not FORMAT=SPEEDUP, is an error before anything runs.
TEST(CliBenchLinear, TargetsJudgeTheirFormatsCases) {
  const CliResult r = run_cli(bench_linear({"--sparsity", "0.9", "--format", "csr", "bcsr4", "2:4", "--target",
                                            "csr=1e-6", "2:4=1e6", "--json"}),
                              kOneThread);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  const double targets[] = {1e-6, 0.0, 1e6};  // csr, bcsr4 (none), 2:4
  for (std::size_t i = 0; i < lines.size(); ++i) {
    SCOPED_TRACE(lines[i]);
    const nlohmann::json j = nlohmann::json::parse(lines[i]);
    if (targets[i] == 0.0) {
      EXPECT_FALSE(j.contains("target_speedup"));
      EXPECT_FALSE(j.contains("target_met"));
      continue;
    }
    const double speedup = j["speedup"];
    EXPECT_EQ(j["target_speedup"].get<double>(), targets[i]);
    EXPECT_EQ(j["target_met"].get<bool>(), speedup >= targets[i]);
    EXPECT_EQ(j["target_met"].get<bool>(), i == 0);
    EXPECT_NEAR(j["target_short_by"].get<double>(), targets[i] / speedup, 1e-9 * targets[i] / speedup);
  }

  const CliResult table = run_cli(
      bench_linear({"--sparsity", "0.9", "--format", "csr", "2:4", "--target", "csr=1e-6", "2:4=1e6"}), kOneThread);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "| target")) << table.out;
  EXPECT_TRUE(std::regex_search(table.out, std::regex(R"(csr .*\| met \(target >= 0\.00x\)\n)"))) << table.out;
  EXPECT_TRUE(
      std::regex_search(table.out, std::regex(R"(2:4 .*\| missed: short by [0-9.]+x \(target >= 1000000\.00x\)\n)")))
      << table.out;

  for (const auto& [item, message] : std::vector<std::pair<std::string, std::string>>{
           {"bcsr8=2",
            "bench linear --target: 'bcsr8=2' names format bcsr8, which this run does not time (--format: csr)"},
           {"csr", "bench linear --target: 'csr' is not FORMAT=SPEEDUP"},
           {"csr=-1", "bench linear --target csr=-1: '-1' is not a speedup; expected a number > 0"},
           {"csr5=1", "bench linear --target: unknown sparse format 'csr5'"}}) {
    const CliResult bad = run_cli(bench_linear({"--format", "csr", "--target", item}), kOneThread);
    EXPECT_EQ(bad.exit_code, 1) << item;
    EXPECT_TRUE(contains(bad.err, message)) << bad.err;
    EXPECT_TRUE(bad.out.empty()) << "nothing timed before the error: " << bad.out;
  }
}

// Writes `text` to a fresh file in the temporary directory and returns its path.
std::string write_config(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("sparsetrain_test_cli_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(CliConfig, PrintsEveryGroupOfAValidConfig) {
  const std::string path = write_config("rigl.yaml", R"(sparsity:
  - algorithm: rigl
    sparsity: 0.9
    update: {freq: 100, stop: 7500}
    drop_fraction: {type: cosine, init: 0.3, half_period: 7500}
    param_filter: ["fc1.weight", "fc2.weight"]
    format: auto
  - algorithm: gmp
    sparsity: [0.5, 0.7, 0.8]
    update: {steps: [0, 1000, 2000]}
    param_filter: "head.*"
  - algorithm: set
    sparsity: 0.8
    update: {freq: 50}
    param_filter: "out.*"
)");
  const CliResult r = run_cli({"config", "--params", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "sparsity section in the 2.2+ form, 3 groups")) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "group 1: rigl\n  sparsity       constant(0.9)\n"
                       "  update         every 100 steps from 0 to 7500 (exclusive)\n"
                       "  drop_fraction  cosine(init=0.3, half_period=7500, minimum=0)\n"
                       "  param_filter   globs(fc1.weight, fc2.weight)\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out,
                       "group 2: gmp\n  sparsity       cycling([0.5, 0.7, 0.8])\n"
                       "  update         at steps [0, 1000, 2000]\n  param_filter"))
      << r.out;
  // SET without a drop_fraction drops the default fraction, and the plan says so.
  EXPECT_TRUE(contains(r.out,
                       "group 3: set\n  sparsity       constant(0.8)\n  update         every 50 steps from 0\n"
                       "  drop_fraction  constant(0.3) (the default)\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "storage        auto (csr at levels >= 0.7, masked-dense below)")) << r.out;
  EXPECT_TRUE(contains(r.out, path + ": no model section; the per-parameter plan needs a whole training config"))
      << r.out;
}

TEST(CliConfig, AnInvalidConfigExitsOneNamingFileLineColumnAndKey) {
  const std::string path =
      write_config("bad.yaml", "sparsity:\n  algorithm: rigl\n  sparsity: 0.9\n  update: {freq: ten}\n");
  const CliResult r = run_cli({"config", "--params", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "sparsetrain: error: " + path + ":4:18: sparsity.update.freq: expected an integer >= 1, got 'ten'\n");
  EXPECT_EQ(r.out, "");
  const CliResult missing = run_cli({"config"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(contains(missing.err, "--params is required")) << missing.err;
}

// The whitespace-separated cells of the plan row of `parameter`: name, shape, elements, kept,
// sparsity, storage, group, algorithm, level, distribution, then the schedules' words.
std::vector<std::string> plan_row(const std::string& out, const std::string& parameter) {
  for (const std::string& line : lines_of(out)) {
    std::istringstream in(line);
    std::vector<std::string> cells;
    for (std::string cell; in >> cell;) cells.push_back(cell);
    if (!cells.empty() && cells[0] == parameter) return cells;
  }
  return {};
}

// Kept elements at `level` of `n`: floor((1 - level) * n), as the algorithms count them.
int64_t kept_at(double level, int64_t n) {
  return static_cast<int64_t>(std::floor((1.0 - level) * static_cast<double>(n) + 1e-9));
}

// The plan's last line.
std::string counts_line(int64_t total, int64_t kept, int64_t sparse, int64_t sparse_kept, int sparse_params) {
  auto fixed4 = [](double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", x);
    return std::string(text);
  };
  return "counts: " + std::to_string(total) + " parameters when dense, " + std::to_string(kept) +
         " kept when sparse; sparsity " + fixed4(1.0 - static_cast<double>(sparse_kept) / static_cast<double>(sparse)) +
         " of the " + std::to_string(sparse_params) + " sparsified parameters, " +
         fixed4(1.0 - static_cast<double>(kept) / static_cast<double>(total)) + " of the whole model\n";
}

TEST(CliConfig, AWholeGptConfigPrintsEveryParameterAndTheCounts) {
  // Data is neither read nor needed: `brown` need not be installed.
  const std::string path =
      write_config("plan_gpt.yaml", R"(model: {name: gpt, n_positions: 16, n_layer: 2, n_head: 2, n_embd: 32}
train_input: {data: brown, tokenizer: byte, batch_size: 4}
optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 10, seed: 3}
sparsity: {algorithm: rigl, sparsity: 0.9, format: csr, update: {freq: 5}}
)");
  const CliResult r = run_cli({"config", "--params", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "group 1: rigl\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "model: gpt: 2 layers, 2 heads, width 32, context 16, vocabulary 257\n")) << r.out;

  const std::vector<std::string> attn = plan_row(r.out, "transformer.h.0.attn.c_attn.weight");
  ASSERT_GE(attn.size(), 11u) << r.out;
  EXPECT_EQ(attn[1], "96x32");
  EXPECT_EQ(attn[2], "3072");
  EXPECT_EQ(attn[3], std::to_string(kept_at(0.9, 3072)));
  EXPECT_NEAR(std::stod(attn[4]), 0.9, 1e-3);
  EXPECT_EQ(attn[5], "csr");
  EXPECT_EQ(attn[6], "1");
  EXPECT_EQ(attn[7], "rigl");
  EXPECT_EQ(attn[8], "0.9000");
  EXPECT_EQ(attn[9], "uniform");
  EXPECT_EQ(attn[10], "constant(0.9)");
  EXPECT_TRUE(contains(lines_of(r.out)[0], path)) << r.out;

  // The default filter leaves embeddings, norms and biases dense.
  const std::vector<std::string> wte = plan_row(r.out, "transformer.wte.weight");
  const std::vector<std::string> dense = {
      "transformer.wte.weight", "257x32", "8224", "8224", "0.0000", "dense", "-", "-", "-", "-", "-", "-"};
  EXPECT_EQ(wte, dense) << r.out;
  const std::vector<std::string> bias = plan_row(r.out, "transformer.h.1.mlp.c_fc.bias");
  ASSERT_GE(bias.size(), 7u) << r.out;
  EXPECT_EQ(bias[5], "dense");
  EXPECT_EQ(bias[6], "-");

  // Every parameter has a row, in model order.
  std::vector<std::string> names = {"transformer.wte.weight", "transformer.wpe.weight"};
  for (const char* layer : {"0", "1"})
    for (const char* p : {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                          "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                          "mlp.c_proj.weight", "mlp.c_proj.bias"})
      names.push_back(std::string("transformer.h.") + layer + "." + p);
  names.push_back("transformer.ln_f.weight");
  names.push_back("transformer.ln_f.bias");
  std::size_t at = 0;
  for (const std::string& name : names) {
    const std::size_t found = r.out.find("\n  " + name + " ", at);
    ASSERT_NE(found, std::string::npos) << name << " missing or out of order\n" << r.out;
    at = found + 1;
  }

  // Counts from the config's sizes: vocabulary 257 (bytes and end-of-text), context 16, width 32.
  const int64_t c = 32, v = 257, positions = 16, layers = 2;
  const int64_t block_weights[] = {3 * c * c, c * c, 4 * c * c, 4 * c * c};
  const int64_t block_rest = 2 * c + 3 * c + c + 2 * c + 4 * c + c;  // norms and biases
  int64_t total = v * c + positions * c + 2 * c, kept = total, sparse = 0, sparse_kept = 0;
  for (int64_t l = 0; l < layers; ++l) {
    total += block_rest;
    kept += block_rest;
    for (int64_t n : block_weights) {
      total += n;
      sparse += n;
      kept += kept_at(0.9, n);
      sparse_kept += kept_at(0.9, n);
    }
  }
  EXPECT_TRUE(contains(r.out, counts_line(total, kept, sparse, sparse_kept, 8))) << r.out;
}

TEST(CliConfig, StorageOtherThanAskedIsAWarningAndThePlanShowsWhatRuns) {
  const std::string model = R"(model: {name: gpt, n_positions: 16, n_layer: 1, n_head: 2, n_embd: 32}
train_input: {data: brown, tokenizer: byte, batch_size: 4}
optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 10, seed: 3}
)";
  // 3:7 cannot hold a layer of 32 inputs: masked-dense, at the level it is masked to, and said.
  const std::string nm = write_config("plan_3_7.yaml", model + R"(sparsity: {sparsity: 0.5714, format: "3:7"})");
  const CliResult r = run_cli({"config", "--params", nm});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "sparsetrain: warning: " + nm +
                                  ": sparsity group 1: static: 'transformer.h.0.attn.c_attn.weight' (96x32) is stored "
                                  "masked-dense, not 3:7: its 32 columns (inputs) are not a multiple of 7; it is "
                                  "masked to level 0.5714 and runs at dense speed\n"))
      << r.err;
  const std::vector<std::string> attn = plan_row(r.out, "transformer.h.0.attn.c_attn.weight");
  ASSERT_GE(attn.size(), 9u) << r.out;
  EXPECT_EQ(attn[5], "masked-dense");
  EXPECT_EQ(attn[8], "0.5714");

  // A level 2:4 cannot give is an error, not a plan at a level that never runs.
  const std::string fixed = write_config("plan_2_4.yaml", model + R"(sparsity: {sparsity: 0.9, format: "2:4"})");
  const CliResult e = run_cli({"config", "--params", fixed});
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(e.out, "");
  EXPECT_EQ(e.err, "sparsetrain: error: " + fixed +
                       ":5:35: sparsity.format: format '2:4' keeps 2 of every 4 weights, a fixed level of 0.5, but the "
                       "sparsity is 0.9; give sparsity 0.5, or a format whose level follows the sparsity (csr, bcsr4, "
                       "bcsr8, bcsr16 or auto)\n");

  // No format: masked-dense, which runs no faster than dense; said once per group.
  const std::string masked = write_config("plan_masked.yaml", model + "sparsity: {sparsity: 0.9}");
  const CliResult m = run_cli({"config", "--params", masked});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(m.err,
            "sparsetrain: warning: " + masked +
                ": sparsity group 1: static: 4 matrices stored masked-dense (no 'format'): a mask zeroes weights "
                "of a dense matrix, which runs at dense speed or slower, and flops_actual counts it dense; "
                "'format: csr' (or 'auto') runs sparse kernels\n");
  // Asked for by name, it is the user's choice: no warning.
  const std::string chosen =
      write_config("plan_chosen.yaml", model + "sparsity: {sparsity: 0.9, format: masked-dense}");
  const CliResult c = run_cli({"config", "--params", chosen});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.err, "");
}

TEST(CliConfig, AGroupOfTwoAlgorithmsPutsEachLayerInItsGroup) {
  const std::string path =
      write_config("plan_mlp.yaml", R"(model: {name: mlp, input_size: 20, hidden_sizes: [16, 8], num_classes: 4}
train_input: {data: fashion_mnist, batch_size: 4}
optimizer: {optimizer_type: sgd, learning_rate: 0.1}
runconfig: {max_steps: 10}
sparsity:
  - algorithm: static
    sparsity: 0.5
    param_filter: layers.0.weight
  - algorithm: set
    sparsity: 0.75
    format: csr
    update: {freq: 5}
)");
  const CliResult r = run_cli({"config", "--params", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "2 groups")) << r.out;
  struct Expected {
    const char* name;
    const char* shape;
    int64_t elements, kept;
    const char* storage;
    const char* group;
    const char* algorithm;
  };
  const Expected expected[] = {
      {"layers.0.weight", "16x20", 16 * 20, kept_at(0.5, 16 * 20), "masked-dense", "1", "static"},
      {"layers.0.bias", "16", 16, 16, "dense", "-", "-"},
      {"layers.1.weight", "8x16", 8 * 16, kept_at(0.75, 8 * 16), "csr", "2", "set"},
      {"layers.1.bias", "8", 8, 8, "dense", "-", "-"},
      {"layers.2.weight", "4x8", 4 * 8, kept_at(0.75, 4 * 8), "csr", "2", "set"},
      {"layers.2.bias", "4", 4, 4, "dense", "-", "-"},
  };
  int64_t total = 0, kept = 0, sparse = 0, sparse_kept = 0;
  for (const Expected& e : expected) {
    total += e.elements;
    kept += e.kept;
    if (std::string(e.group) != "-") sparse += e.elements, sparse_kept += e.kept;
    SCOPED_TRACE(e.name);
    const std::vector<std::string> row = plan_row(r.out, e.name);
    ASSERT_GE(row.size(), 12u) << r.out;
    EXPECT_EQ(row[1], e.shape);
    EXPECT_EQ(row[2], std::to_string(e.elements));
    EXPECT_EQ(row[3], std::to_string(e.kept));
    EXPECT_EQ(row[5], e.storage);
    EXPECT_EQ(row[6], e.group);
    EXPECT_EQ(row[7], e.algorithm);
  }
  EXPECT_EQ(plan_row(r.out, "layers.0.weight").back(), "masks)");  // update: never (static masks)
  EXPECT_EQ(plan_row(r.out, "layers.1.weight")[10], "constant(0.75)");
  EXPECT_TRUE(contains(r.out, counts_line(total, kept, sparse, sparse_kept, 3))) << r.out;
}

TEST(CliConfig, AnOverriddenParameterShowsItsFixedLevelNotTheGroupSchedule) {
  const std::string path =
      write_config("plan_override.yaml", R"(model: {name: mlp, input_size: 20, hidden_sizes: [16], num_classes: 4}
train_input: {data: fashion_mnist, batch_size: 4}
optimizer: {optimizer_type: sgd, learning_rate: 0.1}
runconfig: {max_steps: 10}
sparsity:
  algorithm: gmp
  sparsity: {type: polynomial, init: 0.0, final: 0.8, begin: 0, end: 8}
  update: {freq: 2}
  overrides: {layers.1.weight: 0.5}
)");
  const CliResult r = run_cli({"config", "--params", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> first = plan_row(r.out, "layers.0.weight");
  const std::vector<std::string> second = plan_row(r.out, "layers.1.weight");
  ASSERT_GE(first.size(), 11u) << r.out;
  ASSERT_GE(second.size(), 11u) << r.out;
  EXPECT_EQ(first[8], "0.0000");
  EXPECT_TRUE(first[10].starts_with("polynomial(")) << r.out;
  EXPECT_EQ(second[8], "0.5000");
  EXPECT_EQ(second[10], "override");
}

TEST(CliConfig, AnInvalidWholeConfigExitsOneNamingFileLineColumnAndKey) {
  const std::string path =
      write_config("plan_bad.yaml", R"(model: {name: gpt, n_positions: 16, n_layer: two, n_head: 2, n_embd: 32}
train_input: {data: brown, tokenizer: byte, batch_size: 4}
optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 10}
)");
  const CliResult r = run_cli({"config", "--params", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "sparsetrain: error: " + path + ":1:46: model.n_layer: expected an integer >= 1, got 'two'\n");
  EXPECT_EQ(r.out, "");
}

// What the model refuses when a group is applied to it is reported at that group, so a config
// of several groups says which one to change.
TEST(CliConfig, WhatTheModelRefusesIsReportedAtItsGroup) {
  const std::string head = R"(model: {name: gpt, n_positions: 16, n_layer: 1, n_head: 2, n_embd: 32}
train_input: {data: brown, tokenizer: byte, batch_size: 4}
optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 10}
)";
  const std::string blocks = write_config("plan_blocks.yaml", head + R"(sparsity:
  - {algorithm: static, sparsity: 0.5, param_filter: "*attn*.weight"}
  - {algorithm: static, sparsity: 0.99, format: bcsr16}
)");
  const CliResult r = run_cli({"config", "--params", blocks});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "sparsetrain: error: " + blocks +
                       ":7:5: sparsity[1]: static: 'transformer.h.0.mlp.c_fc.weight' (128x32) would keep 0 of its 16 "
                       "16x16 blocks at level 0.9900, so every weight would be zero; lower its level to at most 0.9375 "
                       "(1 unit kept) or use smaller blocks or csr\n");
  const std::string nm = write_config("plan_nm.yaml", head + R"(sparsity:
  algorithm: rigl
  sparsity: 0.5
  format: "2:4"
  update: {freq: 10, start: 5}
)");
  const CliResult late = run_cli({"config", "--params", nm});
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_EQ(late.err, "sparsetrain: error: " + nm +
                          ":6:3: sparsity: rigl: parameter 'transformer.h.0.attn.c_attn.weight' uses 2:4 storage, "
                          "which cannot be dense; start mask updates at step 0\n");
}

// A tiny GPT on a generated text file, 90% of its block weights pruned (CSR).
std::string tiny_gpt_config(const std::string& name, const std::string& sparsity) {
  std::string text;
  for (int i = 0; i < 400; ++i) text += "the quick brown fox jumps over the lazy dog.\n";
  const std::string corpus = write_config(name + ".txt", text);
  return write_config(name + ".yaml", R"(model: {name: gpt, n_positions: 16, n_layer: 2, n_head: 2, n_embd: 32}
train_input: {data: text_file, path: ")" + corpus +
                                          R"(", tokenizer: byte, batch_size: 4}
optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 10, seed: 3}
)" + sparsity);
}

TEST(CliBenchTrain, JsonComparesDenseAndSparseProcesses) {
  const std::string path = tiny_gpt_config(
      "bench_train", "sparsity: {algorithm: static, sparsity: 0.9, format: csr, distribution: uniform}\n");
  const CliResult r = run_cli(
      {"bench", "train", "--params", path, "--steps", "2", "--warmup", "1", "--rounds", "2", "--json"}, kOneThread);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const nlohmann::json j = nlohmann::json::parse(lines[0]);
  ASSERT_EQ(j["speedup_per_round"].size(), 2u);
  // Two rounds: the medians are the means, whose ratio lies between the two rounds' ratios.
  const double first = j["speedup_per_round"][0], second = j["speedup_per_round"][1];
  EXPECT_GT(first, 0.0);
  EXPECT_GT(second, 0.0);
  EXPECT_GE(j["speedup"].get<double>(), std::min(first, second) * (1 - 1e-12));
  EXPECT_LE(j["speedup"].get<double>(), std::max(first, second) * (1 + 1e-12));
  for (const char* key : {"dense_tokens_per_s", "sparse_tokens_per_s", "speedup", "dense_peak_mb", "sparse_peak_mb",
                          "flop_limit_speedup", "gemm_gflops", "dense_fraction_of_gemm", "sparse_layers_memory_ratio",
                          "peak_gflops", "peak_loop", "dense_fraction_of_peak"})
    ASSERT_TRUE(j.contains(key)) << "missing " << key;
  // The peak is measured on the kernels' instructions (kernels/peak_rate.h), fp32 here.
  EXPECT_EQ(j["peak_loop"], "multiply_add_chains_" + std::string(isa_name(std::min(effective_isa(), CpuIsa::Avx512))));
  EXPECT_NEAR(j["dense_fraction_of_peak"].get<double>(),
              j["dense_model_gflops"].get<double>() / j["peak_gflops"].get<double>(), 1e-9);
  EXPECT_EQ(j["predictions_per_step"], 4 * 16);
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["isa"], std::string(isa_name(effective_isa())));
  EXPECT_EQ(j["onednn_isa"], dense_isa());
  EXPECT_EQ(j["sparse_layer_count"], 2 * 4);  // c_attn, attn.c_proj, c_fc, mlp.c_proj per block
  const double dense_rate = j["dense_tokens_per_s"], sparse_rate = j["sparse_tokens_per_s"];
  EXPECT_GT(dense_rate, 0.0);
  EXPECT_GT(sparse_rate, 0.0);
  EXPECT_NEAR(j["speedup"].get<double>(), sparse_rate / dense_rate, 1e-9);
  // The sparse kernels execute a tenth of the block weights' multiply-adds, the rest is dense.
  const double limit = j["flop_limit_speedup"];
  EXPECT_GT(limit, 1.2);
  EXPECT_LT(limit, 10.0);
  // Dense: 4 bytes of weight, gradient and two AdamW moments per element; sparse: a tenth of that
  // plus the structure.
  const double ratio = j["sparse_layers_memory_ratio"];
  EXPECT_GT(ratio, 0.1);
  EXPECT_LT(ratio, 0.5);
  EXPECT_GT(j["dense_peak_mb"].get<double>(), 1.0);
}

// --profile splits each case's step into phases: every op the tiny GPT runs, the head, the
// optimizer, and the rest; the table shows both cases side by side.
TEST(CliBenchTrain, ProfileSplitsTheStepIntoPhases) {
  const std::string path =
      tiny_gpt_config("bench_profile", "sparsity: {algorithm: static, sparsity: 0.9, format: csr}\n");
  const CliResult r =
      run_cli({"bench", "train", "--params", path, "--steps", "2", "--warmup", "1", "--json", "--profile"}, kOneThread);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(lines_of(r.out).at(0));
  for (const char* key : {"dense_profile", "sparse_profile"}) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(j.contains(key));
    std::map<std::string, double> ms;
    for (const auto& p : j[key]) ms[p[0].get<std::string>()] = p[1].get<double>();
    for (const char* phase :
         {"embedding", "layer norm", "linear forward", "attention forward", "residual add", "head", "loss",
          "linear backward", "attention backward", "zero grad", "batch", "gradient norm", "optimizer", "other"}) {
      ASSERT_TRUE(ms.count(phase)) << "missing phase " << phase;
      EXPECT_GE(ms[phase], 0.0) << phase;
    }
    // Around sparse layers GELU runs inside the packing of their operands (linear phases).
    EXPECT_EQ(ms.count("activation"), std::string(key) == "dense_profile" ? 1u : 0u);
    EXPECT_GT(ms["linear forward"], 0.0);
    EXPECT_GT(ms["linear backward"], 0.0);
    EXPECT_EQ(ms.count("dropout"), 0u) << "the GPT has no dropout";
  }
  const CliResult table =
      run_cli({"bench", "train", "--params", path, "--steps", "1", "--warmup", "0", "--profile"}, kOneThread);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "where a step goes")) << table.out;
  EXPECT_TRUE(contains(table.out, "linear backward")) << table.out;
}

// One timed step of each case, no warm-up, with `extra` options.
CliResult bench_train_once(const std::string& path, std::vector<std::string> extra) {
  std::vector<std::string> args = {"bench", "train", "--params", path, "--steps", "1", "--warmup", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_cli(args, kOneThread);
}

// --target judges the sparse-over-dense speedup: JSON keys, a table line with the step time the
// target needs, and a refusal of a speedup that is not above 0.
TEST(CliBenchTrain, TargetSaysMetOrByHowMuchItFellShort) {
  const std::string path =
      tiny_gpt_config("bench_target", "sparsity: {algorithm: static, sparsity: 0.9, format: csr}\n");
  const CliResult r = bench_train_once(path, {"--target", "1e6", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(lines_of(r.out).at(0));
  EXPECT_EQ(j["target_speedup"].get<double>(), 1e6);
  EXPECT_FALSE(j["target_met"].get<bool>());
  EXPECT_NEAR(j["target_short_by"].get<double>(), 1e6 / j["speedup"].get<double>(), 1e-3);

  const CliResult table = bench_train_once(path, {"--target", "1e-6"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(std::regex_search(table.out, std::regex(R"(\ntarget: met \(target >= 0\.00x\); the sparse step takes )"
                                                      R"([0-9.]+ ms, the target [0-9.e+]+ ms or less\n)")))
      << table.out;
  const CliResult missed = bench_train_once(path, {"--target", "1e6"});
  ASSERT_EQ(missed.exit_code, 0) << missed.err;
  EXPECT_TRUE(contains(missed.out, "target: missed: short by ")) << missed.out;

  for (const char* bad : {"0", "-2", "fast"}) {
    const CliResult refused = run_cli({"bench", "train", "--params", path, "--target", bad}, kOneThread);
    EXPECT_EQ(refused.exit_code, 2) << bad;
    EXPECT_TRUE(contains(refused.err, fmt::format("--target: expected a speedup above 0, e.g. 3.5, got '{}'", bad)))
        << refused.err;
  }
}

TEST(CliBenchTrain, TableAndRefusalOfADenseConfig) {
  const std::string sparse =
      tiny_gpt_config("bench_table", "sparsity: {algorithm: static, sparsity: 0.9, format: bcsr4}\n");
  const CliResult r = bench_train_once(sparse, {"--rounds", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(speedup [0-9.]+x \(FLOP limit [0-9.]+x\); round by round )"
                                                  R"([0-9.]+x, [0-9.]+x\n)")))
      << r.out;
  EXPECT_TRUE(contains(r.out, "of oneDNN's GEMM rate")) << r.out;
  EXPECT_TRUE(contains(r.out, "64 tokens per step")) << r.out;

  const std::string dense = tiny_gpt_config("bench_dense", "");
  const CliResult refused = run_cli({"bench", "train", "--params", dense}, kOneThread);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_TRUE(contains(refused.err, "bench_dense.yaml: no sparsity section")) << refused.err;
}

// The progress bar goes to stderr only when stderr is a terminal, and --no-progress silences it
// there too; the log lines on stdout are the same either way.
TEST(CliTrain, ProgressBarOnlyOnATerminal) {
  const std::string path = tiny_gpt_config("progress", "");
  const std::string dir = (std::filesystem::temp_directory_path() / "sparsetrain_test_cli_progress").string();
  auto train = [&](bool terminal, std::vector<std::string> extra) {
    std::filesystem::remove_all(dir);
    std::vector<std::string> args = {"train", "--params", path, "--model_dir", dir};
    args.insert(args.end(), extra.begin(), extra.end());
    return terminal ? run_cli_with_terminal_stderr(args, kOneThread) : run_cli(args, kOneThread);
  };
  const CliResult on_terminal = train(true, {});
  ASSERT_EQ(on_terminal.exit_code, 0) << on_terminal.err;
  EXPECT_TRUE(contains(on_terminal.err, "\r[")) << on_terminal.err;
  EXPECT_TRUE(contains(on_terminal.err, "] 1/10")) << on_terminal.err;
  EXPECT_TRUE(contains(on_terminal.err, "\r\033[K")) << on_terminal.err;  // cleared before each log line

  const CliResult silenced = train(true, {"--no-progress"});
  ASSERT_EQ(silenced.exit_code, 0) << silenced.err;
  EXPECT_FALSE(contains(silenced.err, "\r[")) << silenced.err;

  const CliResult piped = train(false, {});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_FALSE(contains(piped.err, "\r[")) << piped.err;
  EXPECT_TRUE(contains(piped.out, "step     10/10 | loss ")) << piped.out;
  auto log_lines = [](const std::string& out) {
    int n = 0;
    for (const std::string& line : lines_of(out)) n += line.rfind("step ", 0) == 0 ? 1 : 0;
    return n;
  };
  EXPECT_EQ(log_lines(on_terminal.out), log_lines(piped.out));
  EXPECT_EQ(log_lines(piped.out), 1);  // log_steps defaults to 10
  std::filesystem::remove_all(dir);
}

// --eval_batches N: each evaluation reads N batches (here batch 4 of 16 tokens: 64 tokens each)
// instead of the whole validation split, and params.yaml records the override.
TEST(CliTrain, EvalBatchesLimitsEachEvaluation) {
  const std::string path = tiny_gpt_config("eval_batches", "");
  const auto dir = std::filesystem::temp_directory_path() / "sparsetrain_test_cli_eval_batches";
  for (int batches : {1, 3}) {
    SCOPED_TRACE(batches);
    std::filesystem::remove_all(dir);
    const CliResult r = run_cli({"train_and_eval", "--params", path, "--model_dir", dir.string(), "--max_steps", "1",
                                 "--eval_batches", std::to_string(batches)},
                                kOneThread);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, fmt::format("({} tokens)", batches * 4 * 16))) << r.out;
    std::ifstream saved(dir / "params.yaml");
    const std::string params{std::istreambuf_iterator<char>(saved), {}};
    EXPECT_TRUE(contains(params, fmt::format("--eval_batches {}", batches))) << params;
  }
  // The whole split is more than 3 batches, so the override is what limited it.
  std::filesystem::remove_all(dir);
  const CliResult whole =
      run_cli({"train_and_eval", "--params", path, "--model_dir", dir.string(), "--max_steps", "1"}, kOneThread);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const auto at = whole.out.find("eval step 1: ");
  ASSERT_NE(at, std::string::npos) << whole.out;
  const auto open = whole.out.find('(', at);
  EXPECT_GT(std::stoll(whole.out.substr(open + 1)), 3 * 4 * 16) << whole.out;
  std::filesystem::remove_all(dir);
}

// SIGTERM or SIGINT during training: the step finishes, a complete checkpoint of it is saved,
// the exit code is 128 + the signal, and training again in the directory resumes from there.
TEST(CliTrain, StopSignalSavesACheckpointAndExitsWith128PlusTheSignal) {
  for (int signal_number : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(signal_number);
    const std::string path = tiny_gpt_config("signal", "");
    const auto dir = std::filesystem::temp_directory_path() / "sparsetrain_test_cli_signal";
    std::filesystem::remove_all(dir);
    // metrics.jsonl appears when the training loop starts; far more steps than fit in the test.
    const CliResult r = run_cli_signalled(
        {"train", "--params", path, "--model_dir", dir.string(), "--max_steps", "1000000"}, kOneThread,
        [&] { return std::filesystem::exists(dir / "metrics.jsonl"); }, signal_number);
    ASSERT_EQ(r.exit_code, 128 + signal_number) << r.out << r.err;
    const std::string said =
        signal_number == SIGTERM ? "stopped by SIGTERM after step " : "stopped by SIGINT after step ";
    const auto at = r.out.find(said);
    ASSERT_NE(at, std::string::npos) << r.out;
    const int64_t step = std::stoll(r.out.substr(at + said.size()));
    EXPECT_GE(step, 1);
    EXPECT_TRUE(std::filesystem::exists(dir / fmt::format("checkpoint_{}.done", step)));

    const CliResult resumed = run_cli(
        {"train", "--params", path, "--model_dir", dir.string(), "--max_steps", std::to_string(step + 2)}, kOneThread);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_TRUE(contains(resumed.out, fmt::format("(step {})", step))) << resumed.out;
    EXPECT_TRUE(contains(resumed.out, fmt::format("training steps {} to {}", step + 1, step + 2))) << resumed.out;

    // A budget the directory has already reached trains nothing and says so.
    const CliResult done = run_cli(
        {"train", "--params", path, "--model_dir", dir.string(), "--max_steps", std::to_string(step + 1)}, kOneThread);
    ASSERT_EQ(done.exit_code, 0) << done.err;
    EXPECT_TRUE(
        contains(done.out, fmt::format("nothing to do: the newest checkpoint is at step {} of {}", step + 2, step + 1)))
        << done.out;
    EXPECT_FALSE(contains(done.out, "training steps")) << done.out;
    EXPECT_TRUE(contains(done.out, fmt::format("checkpoint_{}.safetensors", step + 2))) << done.out;
    std::filesystem::remove_all(dir);
  }
}

// A relative data path is relative to the config file's directory, wherever the command runs;
// params.yaml records it absolute, so the model directory's copy finds the same data.
TEST(CliTrain, ARelativeDataPathIsResolvedAgainstTheConfigsDirectory) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / "sparsetrain_test_cli_relative";
  fs::remove_all(root);
  fs::create_directories(root);
  ASSERT_NE(fs::current_path(), root);
  std::string text;
  for (int i = 0; i < 400; ++i) text += "the quick brown fox jumps over the lazy dog.\n";
  std::ofstream(root / "corpus.txt") << text;
  const std::string config = (root / "cfg.yaml").string();
  std::ofstream(config) << "model: {name: gpt, n_positions: 16, n_layer: 2, n_head: 2, n_embd: 32}\n"
                        << "train_input: {data: text_file, path: corpus.txt, tokenizer: byte, batch_size: 4}\n"
                        << "optimizer: {optimizer_type: adamw, learning_rate: 0.001}\n"
                        << "runconfig: {max_steps: 2, seed: 3}\n";
  const std::string dir = (root / "run").string();
  const CliResult r = run_cli({"train", "--params", config, "--model_dir", dir}, kOneThread);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream saved(root / "run" / "params.yaml");
  const std::string params((std::istreambuf_iterator<char>(saved)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(params.starts_with("# " + config + " with train_input.path corpus.txt made absolute (relative to " +
                                 root.string() + ")\n"))
      << params;
  EXPECT_TRUE(contains(params, "path: " + (root / "corpus.txt").string() + ",")) << params;
  // The model directory's params.yaml, used from another working directory, finds the corpus.
  const CliResult eval = run_cli({"eval", "--model_dir", dir}, kOneThread);
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_TRUE(eval.out.starts_with("eval step 2: loss ")) << eval.out;
  fs::remove_all(root);
}

// A config that is not a regular file (a pipe, as from --params <(...)) has no directory of its
// own: its relative data paths are resolved against the working directory.
TEST(CliTrain, ARelativeDataPathOfAPipedConfigIsResolvedAgainstTheWorkingDirectory) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / "sparsetrain_test_cli_piped";
  fs::remove_all(root);
  fs::create_directories(root);
  std::string text;
  for (int i = 0; i < 400; ++i) text += "the quick brown fox jumps over the lazy dog.\n";
  std::ofstream(root / "corpus.txt") << text;
  const std::string relative = fs::relative(root / "corpus.txt", fs::current_path()).string();
  ASSERT_FALSE(fs::path(relative).is_absolute());
  const fs::path fifo = root / "cfg.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    std::ofstream(fifo) << "model: {name: gpt, n_positions: 16, n_layer: 2, n_head: 2, n_embd: 32}\n"
                        << "train_input: {data: text_file, path: " << relative << ", tokenizer: byte, batch_size: 4}\n"
                        << "optimizer: {optimizer_type: adamw, learning_rate: 0.001}\n"
                        << "runconfig: {max_steps: 1, seed: 3}\n";
  });
  const CliResult r = run_cli({"train", "--params", fifo.string(), "--model_dir", (root / "run").string()}, kOneThread);
  // Should the command end without reading the pipe, this read end lets the writer finish.
  const int unblock = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  writer.join();
  if (unblock >= 0) close(unblock);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream saved(root / "run" / "params.yaml");
  const std::string params((std::istreambuf_iterator<char>(saved)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(params.starts_with("# " + fifo.string() + " with train_input.path " + relative +
                                 " made absolute (relative to " + fs::current_path().string() + ")\n"))
      << params;
  fs::remove_all(root);
}

// A model far beyond the machine's memory is refused before anything is allocated, with the
// estimate (weights, gradients and AdamW's two buffers: 16 bytes a weight; a batch's
// activations) and what is available, not ended by std::bad_alloc.
TEST(CliTrain, AModelTooLargeForMemoryIsRefusedBeforeAllocating) {
  const std::string path =
      write_config("huge.yaml", R"(model: {name: gpt, n_positions: 16, n_layer: 2, n_head: 2, n_embd: 1000000}
train_input: {data: text_file, path: /nonexistent/corpus.txt, tokenizer: byte, batch_size: 4}
optimizer: {optimizer_type: adamw, learning_rate: 0.001}
runconfig: {max_steps: 10}
sparsity: {algorithm: static, sparsity: 0.9}
)");
  const std::string dir = (std::filesystem::temp_directory_path() / "sparsetrain_test_cli_huge").string();
  std::filesystem::remove_all(dir);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"train", "--params", path, "--model_dir", dir},
        std::vector<std::string>{"train_and_eval", "--params", path, "--model_dir", dir},
        std::vector<std::string>{"generate", "--params", path, "--checkpoint_path", dir + "/checkpoint_1.safetensors"},
        std::vector<std::string>{"bench", "train", "--params", path}}) {
    const CliResult r = run_cli(args, kOneThread);
    EXPECT_EQ(r.exit_code, 1) << args[0];
    const std::string needs = "sparsetrain: error: " + path +
                              ": the run needs about 349.3 TiB of memory (349.3 TiB for the weights, their gradients "
                              "and the optimizer state; 10.0 GiB for the activations of a batch), but ";
    EXPECT_TRUE(r.err.starts_with(needs)) << r.err;
    EXPECT_TRUE(std::regex_search(
        r.err,
        std::regex(
            R"(, but [0-9.]+ [KMGT]iB is available \((MemAvailable in /proc/meminfo|the cgroup memory limit \S+ less its usage)\); make the model or the batch smaller\n$)")))
        << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir)) << "nothing is created before the check";
  }
}

// GCC says __SANITIZE_ADDRESS__, clang __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define SPARSETRAIN_TEST_ASAN
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPARSETRAIN_TEST_ASAN
#endif
#endif

// What the estimate cannot see (here an address-space limit, ulimit -v) ends in a clear
// out-of-memory message and exit 1, not "internal error: std::bad_alloc".
TEST(CliTrain, AFailedAllocationIsReportedAsOutOfMemory) {
#ifdef SPARSETRAIN_TEST_ASAN
  GTEST_SKIP() << "AddressSanitizer reserves far more address space than the limit";
#endif
  const std::string corpus = write_config("oom.txt", "the quick brown fox jumps over the lazy dog.\n");
  // About 200 MB of weights, 800 MB with gradients and AdamW's buffers: within any test machine's
  // memory, beyond the 300 MB address space the process gets.
  std::string yaml = "model: {name: gpt, n_positions: 16, n_layer: 4, n_head: 2, n_embd: 1024}\n";
  yaml += "train_input: {data: text_file, path: \"" + corpus + "\", tokenizer: byte, batch_size: 4}\n";
  yaml += "optimizer: {optimizer_type: adamw, learning_rate: 0.001}\nrunconfig: {max_steps: 1}\n";
  const std::string path = write_config("oom.yaml", yaml);
  const std::string dir = (std::filesystem::temp_directory_path() / "sparsetrain_test_cli_oom").string();
  std::filesystem::remove_all(dir);
  CliControl control;
  control.address_space_limit = 300'000'000;
  const CliResult r = run_cli_controlled({"train", "--params", path, "--model_dir", dir}, kOneThread, control);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err,
            "sparsetrain: error: out of memory: an allocation failed (std::bad_alloc); make the model or the batch "
            "smaller, or free memory\n");
  std::filesystem::remove_all(dir);
}

TEST(CliTrain, AModelDirThatIsAFileExitsOneNamingIt) {
  const std::string path = tiny_gpt_config("model_dir_file", "");
  const std::string file = write_config("model_dir_in_the_way", "a file, not a directory\n");
  const CliResult r = run_cli({"train", "--params", path, "--model_dir", file}, kOneThread);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "sparsetrain: error: --model_dir " + file + ": cannot create the directory: a file is in the way\n");
  const CliResult below = run_cli({"train", "--params", path, "--model_dir", file + "/run"}, kOneThread);
  EXPECT_EQ(below.exit_code, 1);
  EXPECT_TRUE(below.err.starts_with("sparsetrain: error: --model_dir " + file + "/run: cannot create the directory: "))
      << below.err;
}

TEST(CliErrors, UnknownFormatExitsOneNamingTheFormat) {
  const CliResult r = run_cli(bench_linear({"--format", "csr5", "--json"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "sparsetrain: error: bench linear --format: unknown sparse format 'csr5'")) << r.err;
  EXPECT_EQ(r.out, "") << "nothing should run before the options are checked";
}

TEST(CliErrors, SparsityOutsideItsRangeExitsOne) {
  const CliResult r = run_cli(bench_linear({"--sparsity", "1.5"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "--sparsity 1.5 is outside [0, 1)")) << r.err;
}

// A case whose layer keeps nothing is not timed, and stderr says so; the others are.
TEST(CliErrors, ALayerThatKeepsNothingIsLeftOutSayingSo) {
  const CliResult r = run_cli({"bench", "linear", "--in", "64", "--out", "64", "--tokens", "64", "--repeats", "1",
                               "--format", "bcsr16", "--sparsity", "0.5", "0.98", "--json"},
                              kOneThread);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err,
            "sparsetrain: note: bench linear: bcsr16 at sparsity 0.98 keeps no weight of the 64>64 layer; not "
            "timed\n");
  const std::vector<std::string> rows = lines_of(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(nlohmann::json::parse(rows[0])["sparsity"], 0.5);
}

TEST(CliErrors, UnpairedShapeExitsOne) {
  const CliResult r = run_cli({"bench", "linear", "--in", "40", "--in", "48", "--out", "24"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "--in and --out")) << r.err;
}

TEST(CliErrors, InvalidCommandLinesExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {bench_linear({"--bogus"}), "--bogus"},
      {{}, "subcommand"},
      {{"bench"}, "subcommand"},
      {bench_linear({"--tokens", "many"}), "many"},
      {bench_linear({"--repeats", "0"}), "--repeats: expected a whole number from 1 to 2147483647, got '0'"},
      {bench_linear({"--seed", "-1"}), "--seed: expected a whole number from 0 to 18446744073709551615, got '-1'"},
      {bench_linear({"--sparsity", "abc"}), "--sparsity: expected a number, got 'abc'"},
      {bench_linear({"--tokens", "2.5"}), "--tokens: expected a whole number from 1 to 9223372036854775807, got '2.5'"},
      {{"train", "--params", "cfg.yaml", "--seed", "-1"},
       "--seed: expected a whole number from 0 to 18446744073709551615, got '-1'"},
      {{"train", "--params", "cfg.yaml", "--max_steps", "2.5"},
       "--max_steps: expected a whole number from 1 to 9223372036854775807, got '2.5'"},
      {{"generate", "--seed", "-5"}, "--seed: expected a whole number from 0 to 18446744073709551615, got '-5'"},
      {{"bench", "train", "--params", "cfg.yaml", "--warmup", "99999999999"},
       "--warmup: expected a whole number from 0 to 2147483647, got '99999999999'"},
      // The Model Zoo form's options with a command, and the global ones after it.
      {{"--mode", "eval", "train", "--params", "cfg.yaml"}, "give --mode or the command 'train', not both"},
      {{"--params", "cfg.yaml", "train"}, "'--params' goes after the command: sparsetrain train --params ..."},
      {bench_linear({"--max-isa", "ref"}),
       "'--max-isa' goes before the command: sparsetrain --max-isa ... bench linear"},
      {{"train", "--verbose-dispatch"}, "'--verbose-dispatch' goes before the command: sparsetrain --verbose-dispatch"},
      // What generate and export read, not given.
      {{"generate", "--tokens", "3"}, "generate: give --model_dir, or --params with --checkpoint_path"},
      {{"export", "--out", "somewhere"}, "export: give --model_dir, or --params with --checkpoint_path"},
      {bench_linear({"--peak-gflops", "0"}), "--peak-gflops: expected a finite number above 0, got 0"},
      {bench_linear({"--bandwidth-gbs", "-3"}), "--bandwidth-gbs: expected a finite number above 0, got -3"},
      {bench_linear({"--peak-gflops", "inf"}), "--peak-gflops: expected a finite number above 0, got inf"},
      {{"train", "--params", "cfg.yaml", "--threads", "0"},
       "--threads: expected a whole number from 1 to 2147483647, got '0'"},
      {{"train", "--params", "cfg.yaml", "--threads", "1.5"},
       "--threads: expected a whole number from 1 to 2147483647, got '1.5'"},
      {{"generate", "--temperature", "-0.5"}, "--temperature: expected at least 0, got -0.5"},
      {{"generate", "--top_k", "few"}, "--top_k: expected a whole number from 0 to 9223372036854775807, got 'few'"},
  };
  for (const auto& [args, fragment] : cases) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << fragment << "\n" << r.err;
    EXPECT_TRUE(contains(r.out + r.err, fragment)) << "'" << fragment << "' not in:\n" << r.out << r.err;
    EXPECT_TRUE(r.err.starts_with("sparsetrain: error: ")) << r.err;
    EXPECT_LT(r.err.size(), 200u) << r.err;  // the message, not a range of every double
  }
}

// Every long option takes both spellings, underscore and hyphen: the training options' Model Zoo
// names (--max_steps) and the others' (--max-isa, --no-progress) alike.
TEST(CliErrors, EveryLongOptionTakesTheUnderscoreAndTheHyphenSpelling) {
  const std::string path = tiny_gpt_config("spellings", "");
  const std::string dir = (std::filesystem::temp_directory_path() / "sparsetrain_test_cli_spellings").string();
  std::filesystem::remove_all(dir);
  const CliResult r = run_cli({"--max_isa", "ref", "--verbose_dispatch", "train", "--params", path, "--model-dir", dir,
                               "--max-steps", "2", "--no_progress", "--load-checkpoint-states", "all"},
                              kOneThread);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "training steps 1 to 2")) << r.out;
  EXPECT_TRUE(contains(r.err, "(isa cap ref")) << r.err;
  std::filesystem::remove_all(dir);
  const CliResult bench =
      run_cli(bench_linear({"--format", "csr", "--peak_gflops", "100", "--bandwidth_gbs", "10"}), kOneThread);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  // -p is --params in every command that takes a config.
  const CliResult config = run_cli({"config", "-p", path});
  ASSERT_EQ(config.exit_code, 0) << config.err;
}

// A misspelt or unknown option is named with the closest option of its command, also where
// the option it was meant to be is required; every command-line error has the same prefix.
TEST(CliErrors, AnUnknownOptionIsNamedWithTheClosestOne) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"config", "--param", "cfg.yaml"}, "unknown option '--param' for 'config' (did you mean '--params'?)"},
      {{"train", "--param", "cfg.yaml"}, "unknown option '--param' for 'train' (did you mean '--params'?)"},
      {{"--mode", "train", "--max-step=3"}, "unknown option '--max-step' (did you mean '--max-steps'?)"},
      {{"plot", "--model_dir", "a", "--outt", "b"}, "unknown option '--outt' for 'plot' (did you mean '--out'?)"},
      {{"generate", "--zzz"}, "unknown option '--zzz' for 'generate'"},
      {{"trian", "--params", "cfg.yaml"}, "unknown command 'trian' (did you mean 'train'?)"},
      {{"inspect", "a", "b"}, "unexpected argument 'b' for 'inspect'"},
      {{"inspect", "a", "-"}, "unknown option '-' for 'inspect'"},  // shorter than any long name
      {{"config"}, "--params is required"},
  };
  for (const auto& [args, message] : cases) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << message;
    EXPECT_EQ(r.err, "sparsetrain: error: " + message + "\n");
    EXPECT_EQ(r.out, "");
  }
}

// --version says what decides a run's bits besides its config: build, CPU and both ISAs.
TEST(CliErrors, VersionExitsZeroNamingTheVersionBuildCpuAndIsas) {
  const CliResult r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const BuildInfo& build = build_info();
  EXPECT_EQ(r.out, fmt::format("sparsetrain " SPARSETRAIN_TEST_VERSION
                               "\nbuilt with {}, {}: {}\ncpu: {}\nkernels: {} (this CPU has {})\noneDNN {}: {}\n",
                               build.compiler, build.build_type, build.flags, describe(cpu_model()),
                               isa_name(cpu_isa()), isa_name(cpu_isa()), onednn_version(), dense_isa()));
  const CliResult capped = run_cli({"--max-isa", "ref", "--onednn-max-isa", "avx2", "--version"});
  EXPECT_EQ(capped.exit_code, 0) << capped.err;
  EXPECT_TRUE(contains(capped.out, fmt::format("kernels: ref (this CPU has {})\n", isa_name(cpu_isa())))) << capped.out;
  EXPECT_TRUE(contains(capped.out, ": avx2\n")) << capped.out;
}

TEST(CliErrors, HelpExitsZero) {
  const CliResult r = run_cli({"bench", "linear", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, "--sparsity")) << r.out;
}

TEST(CliIsa, UnknownMaxIsaExitsOneNamingTheValue) {
  const CliResult r = run_cli({"--max-isa", "bogus", "bench", "linear"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "--max-isa: unknown ISA 'bogus'; expected one of: avx512_bf16, avx512, avx2, ref"))
      << r.err;
}

TEST(CliIsa, UnknownIsaInTheEnvironmentExitsOneNamingTheVariable) {
  const CliResult r = run_cli(bench_linear({"--format", "csr"}), {"SPARSETRAIN_MAX_ISA=sse9"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "environment variable SPARSETRAIN_MAX_ISA: unknown ISA 'sse9'")) << r.err;
}

TEST(CliIsa, UnknownOnednnIsaExitsOneNamingTheValueAndTheAcceptedOnes) {
  const CliResult r = run_cli({"--onednn-max-isa", "avx3", "--version"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "sparsetrain: error: --onednn-max-isa: unknown oneDNN ISA 'avx3'; expected one of: all, sse41, avx, avx2, "
            "avx2_vnni, avx512_core, avx512_core_vnni, avx512_core_bf16, avx512_core_amx\n");
}

// --portable caps both ISAs at avx2, and only a binary built without -march=native can promise
// that its numbers hold on other CPUs; a cap given beside it contradicts it.
TEST(CliIsa, PortableCapsBothIsasOnABuildWithoutMarchNative) {
  const CliResult both = run_cli({"--portable", "--max-isa", "ref", "--version"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_EQ(both.err,
            "sparsetrain: error: --portable caps both the kernels and oneDNN at avx2; give it without --max-isa and "
            "--onednn-max-isa\n");
  const CliResult r = run_cli({"--portable", "--version"});
  if (build_info().native) {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, fmt::format("sparsetrain: error: --portable: this binary was built with -march=native ({}), so "
                                 "its numbers hold only on CPUs like its build machine's; build one without it: "
                                 "SPARSETRAIN_BUILD_DIR=build-portable scripts/build.sh -DSPARSETRAIN_NATIVE=OFF "
                                 "(experiments/run.sh --portable does)\n",
                                 build_info().flags));
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "kernels: avx2 (")) << r.out;
  EXPECT_TRUE(contains(r.out, ": avx2\n")) << r.out;
  // A run records it: every start's line in run_environment.jsonl says portable.
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / fmt::format("sparsetrain_cli_portable_{}", ::getpid());
  make_tiny_corpus_dir(root);
  const fs::path config = root / "tiny.yaml";
  ASSERT_EQ(train_tiny_gpt(root, "tiny", "max_steps: 2", "").exit_code, 0);
  const CliResult resumed = run_cli(
      {"--portable", "train", "--params", config.string(), "--model_dir", (root / "tiny").string(), "--max_steps", "3"},
      {"OMP_NUM_THREADS=1"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  if (cpu_isa() > CpuIsa::Avx2) {  // the first part ran on the best kernels
    EXPECT_TRUE(contains(resumed.out, fmt::format("kernel_isa \"{}\" -> \"avx2\"", isa_name(cpu_isa()))))
        << resumed.out;
  }
  const std::vector<std::string> records = lines_of(read_file((root / "tiny" / "run_environment.jsonl").string()));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(records[1])["portable"], true);
  EXPECT_EQ(nlohmann::json::parse(records[1])["onednn_isa"], "avx2");
  fs::remove_all(root);
}

// --version checks the environment as every other command does (docs/cli.md#environment).
TEST(CliIsa, UnknownIsaInTheEnvironmentMakesVersionExitOne) {
  const CliResult r = run_cli({"--version"}, {"SPARSETRAIN_MAX_ISA=avx3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "sparsetrain: error: environment variable SPARSETRAIN_MAX_ISA: unknown ISA 'avx3'; expected one of: "
            "avx512_bf16, avx512, avx2, ref\n");
  EXPECT_EQ(r.out, "");
  const CliResult capped = run_cli({"--version"}, {"SPARSETRAIN_MAX_ISA=ref"});
  EXPECT_EQ(capped.exit_code, 0) << capped.err;
}

// The dispatch line for kernel `kernel`, or "" when none was printed.
std::string dispatch_line(const std::string& err, const std::string& kernel) {
  for (const auto& line : lines_of(err))
    if (line.rfind("sparsetrain: dispatch: " + kernel + " -> ", 0) == 0) return line;
  return "";
}

TEST(CliDispatch, VerboseDispatchNamesTheImplementationAndWhyOthersWereSkipped) {
  const CliResult r = run_cli({"--verbose-dispatch", "--max-isa", "ref", "bench", "linear", "--in", "40", "--out", "24",
                               "--tokens", "70", "--repeats", "1", "--format", "2:4"},
                              kOneThread);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string line = dispatch_line(r.err, "nm_fwd");
  EXPECT_TRUE(contains(line, "nm_fwd -> nm_fwd_ref (isa cap ref")) << r.err;
  EXPECT_TRUE(contains(line, "ISA not usable")) << line;
  EXPECT_FALSE(contains(r.out, "dispatch:")) << "tracing belongs on stderr";
}

TEST(CliDispatch, EnvironmentVariablesMatchTheOptions) {
  const CliResult r = run_cli(bench_linear({"--format", "csr"}),
                              {"SPARSETRAIN_VERBOSE=dispatch", "SPARSETRAIN_MAX_ISA=ref", "OMP_NUM_THREADS=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(dispatch_line(r.err, "spmm_fwd"), "spmm_fwd -> spmm_fwd_ref (isa cap ref")) << r.err;
  EXPECT_TRUE(contains(r.out, "kernels ref")) << r.out;
}

// A weight of 8x8 blocks runs the bcsr8 entries of the best ISA, and the trace names each entry
// tried before them with the reason it declined; capped at ref, the reference runs and says so.
// (fp32 has no avx512_bf16 entries: a CPU with AVX512-BF16 runs the avx512 ones.)
TEST(CliDispatch, BlockWeightRunsItsBlockEntryAfterTheOthersDecline) {
  if (cpu_isa() == CpuIsa::Ref) GTEST_SKIP() << "no vector ISA on this machine or in this build";
  const std::string best(isa_name(cpu_isa()));
  const std::string isa(isa_name(std::min(cpu_isa(), CpuIsa::Avx512)));
  auto run = [](const std::string& cap) {
    std::vector<std::string> args = {"--verbose-dispatch", "--max-isa", cap};
    for (const std::string& arg : bench_linear({"--format", "bcsr8"})) args.push_back(arg);
    return run_cli(args, kOneThread);
  };
  const CliResult r = run(best);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string fwd = dispatch_line(r.err, "spmm_fwd");
  EXPECT_TRUE(contains(fwd, "spmm_fwd -> spmm_fwd_bcsr8_" + isa + " (isa cap " + best)) << r.err;
  EXPECT_TRUE(
      contains(fwd, fmt::format("spmm_fwd_csr_{0}: needs CSR (block 1); spmm_fwd_bcsr4_{0}: needs 4x4 blocks;", isa)))
      << fwd;
  // The trace lists the entries tried before the chosen one in list order (a higher ISA's, declined
  // as unusable, come first), so the last one it names is this ISA's 4x4 entry and nothing after.
  EXPECT_TRUE(fwd.ends_with(fmt::format("spmm_fwd_bcsr4_{}: needs 4x4 blocks;", isa)))
      << "no entry after the chosen one is tried: " << fwd;
  EXPECT_FALSE(contains(fwd, "spmm_fwd_bcsr16_" + isa)) << fwd;
  EXPECT_TRUE(contains(dispatch_line(r.err, "sddmm"), "sddmm -> sddmm_bcsr8_" + isa + " (")) << r.err;

  const CliResult capped = run("ref");
  ASSERT_EQ(capped.exit_code, 0) << capped.err;
  const std::string ref_fwd = dispatch_line(capped.err, "spmm_fwd");
  EXPECT_TRUE(contains(ref_fwd, "spmm_fwd -> spmm_fwd_ref (isa cap ref")) << capped.err;
  EXPECT_TRUE(contains(ref_fwd, "spmm_fwd_bcsr8_" + isa + ": ISA not usable;")) << ref_fwd;
  EXPECT_TRUE(contains(dispatch_line(capped.err, "sddmm"), "sddmm -> sddmm_ref (")) << capped.err;
}

TEST(CliDispatch, SilentWithoutTheFlag) {
  const CliResult r = run_cli(bench_linear({"--format", "csr"}), kOneThread);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "dispatch:")) << r.err;
}

}  // namespace
}  // namespace sparsetrain::testing
