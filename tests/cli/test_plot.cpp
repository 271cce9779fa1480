// `sparsetrain plot` on model directories the real binary trained: which figures it writes, that
// they are SVG with a polyline point per metrics row and a series per sparse layer, that the mask
// images say the right steps and sparsities, that a second run writes the same bytes, and the
// messages and exit codes of bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "sparsetrain/io/safetensors.h"
#include "sparsetrain/nn/sparse_tensors.h"
#include "tiny_gpt_run.h"

namespace sparsetrain::testing {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kOneThread = {"OMP_NUM_THREADS=1"};
const char* kFirstLayer = "transformer.h.0.attn.c_attn.weight";  // the first sparse parameter by name

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The points of the polyline in the series group titled `name`; -1 when there is no such group.
int polyline_points(const std::string& svg, const std::string& name) {
  const std::size_t group = svg.find("<g><title>" + name + "</title>");
  if (group == std::string::npos) return -1;
  const std::size_t end = svg.find("</g>", group);
  const std::size_t points = svg.find("points=\"", group);
  if (points == std::string::npos || points > end) return 0;
  const std::size_t start = points + 8;
  std::istringstream list(svg.substr(start, svg.find('"', start) - start));
  int n = 0;
  for (std::string pair; list >> pair;) n += contains(pair, ",") ? 1 : 0;
  return n;
}

// Rows of `split` in a metrics.jsonl whose loss is a number.
int metric_rows(const fs::path& metrics, const std::string& split) {
  std::istringstream in(slurp(metrics));
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json row = nlohmann::json::parse(line);
    n += row["split"] == split && row["loss"].is_number() ? 1 : 0;
  }
  return n;
}

std::vector<int64_t> checkpoint_steps(const fs::path& dir) {
  std::vector<int64_t> steps;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("checkpoint_") && name.ends_with(".done")) steps.push_back(std::stoll(name.substr(11)));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

// Two tiny GPTs trained once for all tests: "sparse" prunes its block weights gradually (GMP,
// 0 -> 0.8 over 20 steps, a checkpoint every 5), "dense" has no sparsity section.
class CliPlot : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / fmt::format("sparsetrain_test_plot_{}", getpid());
    make_tiny_corpus_dir(root_);
    train("sparse",
          "sparsity: {algorithm: gmp, sparsity: {type: polynomial, init: 0.0, final: 0.8, begin: 0, end: 20}, "
          "update: {freq: 5}}\n");
    train("dense", "");
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static void train(const std::string& name, const std::string& sparsity) {
    const CliResult r = train_tiny_gpt(
        root_, name,
        "max_steps: 20, seed: 3, log_steps: 2, checkpoint_steps: 5, eval_frequency: 10, keep_checkpoints: 10",
        sparsity);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  static CliResult plot(std::vector<std::string> args) {
    args.insert(args.begin(), "plot");
    return run_cli(args, kOneThread);
  }

  static fs::path root_;
};

fs::path CliPlot::root_;

TEST_F(CliPlot, WritesEveryFigureOfOneRun) {
  const fs::path dir = root_ / "sparse", out = root_ / "figures_one";
  const CliResult r = plot({"--model_dir", dir.string(), "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string mask_file = fmt::format("mask_{}.svg", kFirstLayer);
  std::string expected_out;
  for (const char* file :
       {"loss_vs_step.svg", "loss_vs_flops.svg", "loss_vs_seconds.svg", "sparsity_per_layer.svg", mask_file.c_str()})
    expected_out += "wrote " + (out / file).string() + "\n";
  EXPECT_EQ(r.out, expected_out);
  EXPECT_EQ(r.err, "");

  std::vector<std::string> svgs;
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string svg = slurp(e.path());
    SCOPED_TRACE(e.path().string());
    EXPECT_TRUE(
        svg.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\""));
    EXPECT_TRUE(svg.ends_with("</svg>\n"));
    svgs.push_back(e.path().filename().string());
  }
  EXPECT_EQ(svgs.size(), 5u);

  // One polyline point per metrics row, on every x axis (every train row here has FLOPs > 0 and a
  // step time).
  const int train_rows = metric_rows(dir / "metrics.jsonl", "train");
  const int eval_rows = metric_rows(dir / "metrics.jsonl", "eval");
  EXPECT_EQ(train_rows, 10);  // 20 steps, a row every 2
  EXPECT_EQ(eval_rows, 2);
  for (const char* file : {"loss_vs_step.svg", "loss_vs_flops.svg", "loss_vs_seconds.svg"}) {
    SCOPED_TRACE(file);
    const std::string svg = slurp(out / file);
    EXPECT_EQ(polyline_points(svg, "sparse train"), train_rows);
    EXPECT_EQ(polyline_points(svg, "sparse eval"), eval_rows);
  }
  EXPECT_TRUE(contains(slurp(out / "loss_vs_flops.svg"), ">1e")) << "log ticks as powers of ten";

  // A series per sparse layer with a point per complete checkpoint.
  const std::vector<int64_t> steps = checkpoint_steps(dir);
  ASSERT_EQ(steps, (std::vector<int64_t>{5, 10, 15, 20}));
  const std::string sparsity = slurp(out / "sparsity_per_layer.svg");
  int layers = 0;
  for (const char* block : {"0", "1"})
    for (const char* weight : {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"}) {
      const std::string name = fmt::format("transformer.h.{}.{}.weight", block, weight);
      EXPECT_EQ(polyline_points(sparsity, name), static_cast<int>(steps.size())) << name;
      ++layers;
    }
  EXPECT_EQ(layers, 8);
  EXPECT_EQ(polyline_points(sparsity, "transformer.wte.weight"), -1) << "dense parameters have no series";

  // The mask images: the earliest and the newest checkpoint with the sparsity their masks have.
  const std::string mask = slurp(out / mask_file);
  for (int64_t step : {steps.front(), steps.back()}) {
    const SafetensorsFile file = read_safetensors((dir / fmt::format("checkpoint_{}.safetensors", step)).string());
    const StateTensor* values = file.tensors.find(kFirstLayer);
    ASSERT_NE(values, nullptr);
    const StateTensor* m = mask_of(file.tensors, *values);
    ASSERT_NE(m, nullptr);
    const auto total = static_cast<int64_t>(m->keep.size());
    const std::string which = step == steps.front() ? "earliest" : "newest";
    EXPECT_TRUE(contains(mask, fmt::format("{} checkpoint (step {})", which, step))) << which;
    EXPECT_TRUE(contains(mask, fmt::format("sparsity {:.4f} ({} of {} kept)", sparsity_of(kept_count(*m), total),
                                           kept_count(*m), total)))
        << which;
  }
  EXPECT_TRUE(contains(mask, "[96×32]"));
  EXPECT_TRUE(contains(mask, "each cell is one weight"));  // 96 × 32 is within the cell limit

  // The same inputs give the same bytes.
  const fs::path again = root_ / "figures_again";
  ASSERT_EQ(plot({"--model_dir", dir.string(), "--out", again.string()}).exit_code, 0);
  for (const std::string& file : svgs) EXPECT_EQ(slurp(out / file), slurp(again / file)) << file;
}

TEST_F(CliPlot, ComparesRunsUnderTheirLabels) {
  const fs::path out = root_ / "figures_two";
  const CliResult r = plot({"--model_dir", (root_ / "sparse").string(), "--model_dir", (root_ / "dense").string(),
                            "--label", "gmp 80%", "--label", "dense", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string loss = slurp(out / "loss_vs_step.svg");
  const int train_rows = metric_rows(root_ / "dense" / "metrics.jsonl", "train");
  EXPECT_EQ(polyline_points(loss, "gmp 80% train"), train_rows);
  EXPECT_EQ(polyline_points(loss, "dense train"), train_rows);
  EXPECT_TRUE(fs::exists(out / "sparsity_per_layer_gmp_80_.svg"));
  EXPECT_TRUE(fs::exists(out / fmt::format("mask_{}_gmp_80_.svg", kFirstLayer)));
  EXPECT_FALSE(fs::exists(out / "sparsity_per_layer_dense.svg"));
  EXPECT_EQ(r.err, "sparsetrain: note: " + (root_ / "dense").string() +
                       ": no sparse parameters in its checkpoints; no sparsity or mask figures for it\n");

  // --layer picks the parameter of the mask images; a run that has no mask for it is an error.
  const std::string layer = "transformer.h.1.mlp.c_fc.weight";
  const fs::path chosen = root_ / "figures_layer";
  const CliResult one = plot({"--model_dir", (root_ / "sparse").string(), "--out", chosen.string(), "--layer", layer});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_TRUE(contains(slurp(chosen / ("mask_" + layer + ".svg")), "Mask of " + layer + " [128×32]"));
  EXPECT_FALSE(fs::exists(chosen / fmt::format("mask_{}.svg", kFirstLayer)));
  const CliResult dense = plot({"--model_dir", (root_ / "sparse").string(), "--model_dir", (root_ / "dense").string(),
                                "--out", (root_ / "figures_never_dense").string(), "--layer", layer});
  EXPECT_EQ(dense.exit_code, 1);
  EXPECT_EQ(dense.err, "sparsetrain: error: --layer " + layer + ": " +
                           (root_ / "dense" / "checkpoint_20.safetensors").string() +
                           " has no sparse parameters (no <name>_mask tensors)\n");
  EXPECT_FALSE(fs::exists(root_ / "figures_never_dense"));
}

TEST_F(CliPlot, ADirectoryWithoutCheckpointsGetsTheLossFiguresAndANote) {
  const fs::path dir = root_ / "metrics_only", out = root_ / "figures_metrics_only";
  fs::create_directories(dir);
  // A row cut short by a killed run at the end is not an error and not a point.
  std::string metrics = slurp(root_ / "sparse" / "metrics.jsonl");
  std::ofstream(dir / "metrics.jsonl") << metrics << R"({"step":22,"split":"tra)";
  const CliResult r = plot({"--model_dir", dir.string(), "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote " + (out / "loss_vs_step.svg").string() + "\nwrote " + (out / "loss_vs_flops.svg").string() +
                       "\nwrote " + (out / "loss_vs_seconds.svg").string() + "\n");
  EXPECT_EQ(r.err,
            "sparsetrain: note: " + dir.string() + ": no complete checkpoint; no sparsity or mask figures for it\n");
  EXPECT_EQ(polyline_points(slurp(out / "loss_vs_step.svg"), "metrics_only train"),
            metric_rows(root_ / "sparse" / "metrics.jsonl", "train"));

  const CliResult layer = plot({"--model_dir", dir.string(), "--out", out.string(), "--layer", kFirstLayer});
  EXPECT_EQ(layer.exit_code, 1);
  EXPECT_EQ(layer.err, fmt::format("sparsetrain: error: --layer {}: {} has no complete checkpoint "
                                   "(checkpoint_<step>.safetensors with its .done marker) to read masks from\n",
                                   kFirstLayer, dir.string()));
}

TEST_F(CliPlot, BadInputExitsOneNamingWhatWasWrongAndWritesNothing) {
  const fs::path out = root_ / "figures_never";
  const std::string sparse = (root_ / "sparse").string();
  const std::string missing = (root_ / "no_such_run").string();

  CliResult r = plot({"--model_dir", missing, "--out", out.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "sparsetrain: error: --model_dir " + missing + ": no such directory\n");

  r = plot({"--model_dir", sparse, "--out", out.string(), "--layer", "transformer.wte.weight"});
  EXPECT_EQ(r.exit_code, 1);
  const std::string newest = (root_ / "sparse" / "checkpoint_20.safetensors").string();
  EXPECT_TRUE(r.err.starts_with("sparsetrain: error: --layer transformer.wte.weight: " + newest +
                                " has no sparse parameter of that name; its sparse parameters are: "
                                "transformer.h.0.attn.c_attn.weight, transformer.h.0.attn.c_proj.weight,"))
      << r.err;

  r = plot({"--model_dir", sparse, "--model_dir", sparse, "--label", "one", "--out", out.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "sparsetrain: error: --label is given 1 times for 2 --model_dir; give one label per model directory, in "
            "the same order, or none\n");

  r = plot({"--model_dir", sparse, "--model_dir", sparse, "--out", out.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "two model directories are labelled 'sparse' after their directory names")) << r.err;

  // A bad line in the middle of metrics.jsonl, named by its number.
  const fs::path bad = root_ / "bad_metrics";
  fs::create_directories(bad);
  std::ofstream(bad / "metrics.jsonl") << R"({"step":2,"split":"train","loss":5.1,"flops_actual":1e9})"
                                       << "\n"
                                       << R"({"step":4,"split":"train","loss":)"
                                       << "\n"
                                       << R"({"step":6,"split":"train","loss":4.9,"flops_actual":3e9})"
                                       << "\n";
  r = plot({"--model_dir", bad.string(), "--out", out.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "sparsetrain: error: " + (bad / "metrics.jsonl").string() +
                       ":2: not valid JSON; expected one JSON object per line\n");

  const fs::path empty = root_ / "empty_dir";
  fs::create_directories(empty);
  r = plot({"--model_dir", empty.string(), "--out", out.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, (empty / "metrics.jsonl").string() + ": cannot open")) << r.err;

  EXPECT_FALSE(fs::exists(out)) << "nothing is written before every input is read";

  r = plot({"--model_dir", sparse});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--out is required")) << r.err;
}

}  // namespace
}  // namespace sparsetrain::testing
