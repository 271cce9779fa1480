// Hugging Face interop through the real binary: `sparsetrain export --format hf` of a trained
// tiny GPT (dense and 90% sparse), read back through model.init_from exactly as a run reads it
// (bit-identical weights, the same masks), fine-tuning from the export and from the committed HF
// fixture, and the errors of both directions.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.h"
#include "sparsetrain/config/train_config.h"
#include "sparsetrain/io/safetensors.h"
#include "sparsetrain/train/setup.h"
#include "tiny_gpt_run.h"

namespace sparsetrain::testing {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kOneThread = {"OMP_NUM_THREADS=1"};

class CliHfInterop : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / fmt::format("sparsetrain_test_hf_interop_{}", getpid());
    make_tiny_corpus_dir(root_);
    for (const auto& [name, sparsity] :
         {std::pair{"dense", ""}, {"sparse", "sparsity: {algorithm: static, sparsity: 0.9, format: csr}\n"}}) {
      const CliResult r = train_tiny_gpt(root_, name, "max_steps: 4, seed: 3", sparsity);
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
      const CliResult e =
          run_cli({"export", "--model_dir", path(name), "--format", "hf", "--out", path(std::string(name) + "_hf")});
      ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::string path(const std::string& name) { return (root_ / name).string(); }

  // A config that starts from `init_from` on the tiny corpus, with `model` keys and `sparsity`.
  static std::string import_config(const std::string& name, const std::string& init_from, const std::string& model,
                                   const std::string& sparsity) {
    const std::string file = path(name + ".yaml");
    std::ofstream(file) << "model: {name: gpt, init_from: " << init_from << model << "}\n"
                        << "train_input: {data: text_file, path: \"" << path("corpus.txt")
                        << "\", tokenizer: byte, batch_size: 4}\n"
                        << "optimizer: {optimizer_type: adamw, learning_rate: 0.003}\n"
                        << "runconfig: {max_steps: 2, seed: 5}\n"
                        << sparsity;
    return file;
  }

  static fs::path root_;
};

fs::path CliHfInterop::root_;

// The model a run of `config` starts from: built as `train` builds it, masks applied.
StateDict start_of(const std::string& config) {
  const Setup s = make_setup(load_train_config_file(config), 5, /*load_data=*/false);
  return s.model->state_dict();
}

void expect_same(const StateDict& got, const StateDict& want) {
  ASSERT_EQ(got.tensors.size(), want.tensors.size());
  for (const StateTensor& w : want.tensors) {
    const StateTensor* g = got.find(w.name);
    ASSERT_NE(g, nullptr) << w.name;
    EXPECT_EQ(g->shape, w.shape) << w.name;
    EXPECT_EQ(g->keep, w.keep) << w.name;
    // Bit for bit (a tensor may hold no values: memcmp must not see their null data()).
    const auto bits = [](float v) { return std::bit_cast<uint32_t>(v); };
    EXPECT_TRUE(std::ranges::equal(g->values, w.values, {}, bits, bits)) << w.name;
  }
}

TEST_F(CliHfInterop, DenseExportImportsBitIdentical) {
  const std::string config = import_config("dense_import", "hf:dense_hf", "", "");  // relative to the config
  expect_same(start_of(config), read_safetensors(path("dense/checkpoint_4.safetensors")).tensors);
  EXPECT_TRUE(fs::exists(path("dense_hf/byte_tokenizer.json")));
  EXPECT_FALSE(fs::exists(path("dense_hf/masks.safetensors")));
}

// from_zeros takes the nonzeros of the loaded weights as the mask: the exported zeros are
// exactly the pruned weights, so the run starts from the trained sparse model itself.
TEST_F(CliHfInterop, SparseExportImportsWithTheSameMasks) {
  const std::string config =
      import_config("sparse_import", "hf:" + path("sparse_hf"), "",
                    "sparsity: {algorithm: static, sparsity: 0.9, init_method: from_zeros, format: csr}\n");
  expect_same(start_of(config), read_safetensors(path("sparse/checkpoint_4.safetensors")).tensors);
  const SafetensorsFile masks = read_safetensors(path("sparse_hf/masks.safetensors"));
  EXPECT_EQ(masks.tensors.find("transformer.h.0.mlp.c_fc.weight_mask")->shape, (std::vector<int64_t>{32, 128}));
}

// topk on pretrained weights keeps the largest of them.
TEST_F(CliHfInterop, TopkKeepsTheLargestPretrainedWeights) {
  const std::string config = import_config("topk_import", "hf:" + path("dense_hf"), "",
                                           "sparsity: {algorithm: static, sparsity: 0.5, init_method: topk}\n");
  const StateDict start = start_of(config);
  const StateTensor& w = *start.find("transformer.h.1.mlp.c_proj.weight");
  const StateTensor& mask = *start.find("transformer.h.1.mlp.c_proj.weight_mask");
  const SafetensorsFile trained = read_safetensors(path("dense/checkpoint_4.safetensors"));
  const StateTensor& dense = *trained.tensors.find(w.name);
  float smallest_kept = INFINITY, largest_pruned = 0.0f;
  for (std::size_t i = 0; i < dense.values.size(); ++i) {
    if (mask.keep[i] != 0) {
      smallest_kept = std::min(smallest_kept, std::abs(dense.values[i]));
      EXPECT_EQ(w.values[i], dense.values[i]);  // sparse_init defaults to dense: values unchanged
    } else {
      largest_pruned = std::max(largest_pruned, std::abs(dense.values[i]));
    }
  }
  EXPECT_GE(smallest_kept, largest_pruned);
}

TEST_F(CliHfInterop, FineTunesFromTheFixtureWithTheCommandLineOverride) {
  const std::string fixture = std::string(SPARSETRAIN_GOLDEN_DIR) + "/hf_gpt2_tiny";
  // model.init_from names the export; --init_from replaces it with the fixture, whose config.json
  // (width 16, vocabulary 260) fills the model keys.
  const std::string config = import_config("override", "hf:" + path("dense_hf"), "",
                                           "sparsity: {algorithm: static, sparsity: 0.8, init_method: topk}\n");
  const CliResult r = run_cli(
      {"train", "--params", config, "--model_dir", path("override_run"), "--init_from", "hf:" + fixture}, kOneThread);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("starting from the Hugging Face weights of " + fs::path(fixture).lexically_normal().string()),
            std::string::npos)
      << r.out;
  const SafetensorsFile done = read_safetensors(path("override_run/checkpoint_2.safetensors"));
  EXPECT_EQ(done.tensors.find("transformer.wte.weight")->shape, (std::vector<int64_t>{260, 16}));
  std::ifstream saved(path("override_run/params.yaml"));
  const std::string params((std::istreambuf_iterator<char>(saved)), std::istreambuf_iterator<char>());
  EXPECT_NE(params.find("init_from: hf:" + fs::path(fixture).lexically_normal().string()), std::string::npos) << params;
}

TEST_F(CliHfInterop, RefusesAModelKeyThatDisagreesWithConfigJson) {
  const std::string config = import_config("disagree", "hf:" + path("dense_hf"), ", n_embd: 64", "");
  const CliResult r = run_cli({"train", "--params", config, "--model_dir", path("disagree_run")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, fmt::format("sparsetrain: error: {}:1:{}: model.n_embd: 64, but {}/config.json has n_embd 32; "
                               "leave model.n_embd out to take config.json's value, or start from another model\n",
                               config, 44 + path("dense_hf").size(), path("dense_hf")));
}

TEST_F(CliHfInterop, CommandLineErrors) {
  CliResult r = run_cli({"train", "--params", "x.yaml", "--init_from", "dense_hf"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("expected hf:DIR, a Hugging Face model directory, got 'dense_hf'"), std::string::npos) << r.err;
  r = run_cli({"export", "--model_dir", path("dense"), "--format", "hf", "--out", path("dense_hf")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "sparsetrain: error: --out " + path("dense_hf") +
                       ": the directory holds files; give a new or empty directory for the export\n");
  r = run_cli({"export", "--model_dir", path("none"), "--format", "hf", "--out", path("x")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "sparsetrain: error: --model_dir " + path("none") + ": no such directory\n");
  r = run_cli({"export", "--model_dir", path("dense"), "--format", "onnx", "--out", path("x")});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace sparsetrain::testing
