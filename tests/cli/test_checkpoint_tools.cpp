// `sparsetrain inspect` and `sparsetrain generate` on a checkpoint the real binary trained: the
// listing against the file's own masks, the Cerebras NaN form written, listed and converted
// back, generated text that continues the prompt and is fixed by the seed, and the messages and
// exit codes of bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
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

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// The listing's row of `tensor`: name, dtype, shape words, elements, sparsity and what marks it.
std::vector<std::string> row_of(const std::string& out, const std::string& tensor) {
  for (const std::string& line : lines_of(out)) {
    const std::vector<std::string> words = words_of(line);
    if (!words.empty() && words[0] == tensor) return words;
  }
  return {};
}

// A tiny GPT trained once for all tests: its block weights 90% pruned (static, CSR), the
// tokenizer bytes plus end-of-text.
class CliCheckpointTools : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / fmt::format("sparsetrain_test_checkpoint_tools_{}", getpid());
    make_tiny_corpus_dir(root_);
    const CliResult r =
        train_tiny_gpt(root_, "run", "max_steps: 6, seed: 3", "sparsity: {algorithm: static, sparsity: 0.9}\n");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    config_ = path("run.yaml");
    checkpoint_ = (fs::path(run_dir()) / "checkpoint_6.safetensors").string();
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static std::string run_dir() { return (root_ / "run").string(); }
  static std::string path(const std::string& name) { return (root_ / name).string(); }

  static fs::path root_;
  static std::string config_, checkpoint_;
};

fs::path CliCheckpointTools::root_;
std::string CliCheckpointTools::config_, CliCheckpointTools::checkpoint_;

// Every tensor but the masks has a row with its shape and element count; the sparsity of a
// masked one is counted here from its mask, and the total line adds them up.
TEST_F(CliCheckpointTools, InspectListsEveryTensorWithTheSparsityOfItsMask) {
  const CliResult r = run_cli({"inspect", checkpoint_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const SafetensorsFile file = read_safetensors(checkpoint_);
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], fmt::format("{}: {} tensors", checkpoint_, file.tensors.tensors.size()));
  int64_t total = 0, sparse = 0, kept = 0;
  int masked = 0;
  for (const StateTensor& t : file.tensors.tensors) {
    const std::vector<std::string> row = row_of(r.out, t.name);
    if (t.is_mask) {
      EXPECT_TRUE(row.empty()) << t.name;
      continue;
    }
    SCOPED_TRACE(t.name);
    ASSERT_GE(row.size(), 5u);
    const auto n = static_cast<int64_t>(t.values.size());
    total += n;
    EXPECT_EQ(row[1], "F32");
    std::string shape;
    for (std::size_t i = 2; i + 2 < row.size() && !shape.ends_with("]"); ++i)
      shape += (shape.empty() ? "" : " ") + row[i];
    EXPECT_EQ(shape, fmt::format("[{}]", fmt::join(t.shape, ", ")));
    if (const StateTensor* mask = mask_of(file.tensors, t)) {
      ++masked;
      const int64_t k = kept_count(*mask);
      sparse += n;
      kept += k;
      EXPECT_EQ(row[row.size() - 3], std::to_string(n));
      EXPECT_EQ(row[row.size() - 2], fmt::format("{:.4f}", 1.0 - static_cast<double>(k) / static_cast<double>(n)));
      EXPECT_EQ(row.back(), "mask");
    } else {
      EXPECT_EQ(row[row.size() - 2], std::to_string(n));
      EXPECT_EQ(row.back(), "dense");
    }
  }
  EXPECT_EQ(masked, 8);  // c_attn, attn.c_proj, c_fc, mlp.c_proj in two blocks
  EXPECT_EQ(lines.back(),
            fmt::format("  total {} values; {} in sparse tensors, {} of them kept (sparsity {:.4f})", total, sparse,
                        kept, 1.0 - static_cast<double>(kept) / static_cast<double>(sparse)));
}

// --export-nan writes NaN exactly at the pruned weights and no masks; that file lists the same
// sparsities marked by NaN, and --import-nan turns it back into the original tensors.
TEST_F(CliCheckpointTools, TheNanFormRoundTripsThroughInspect) {
  const std::string nan_file = path("nan_form.safetensors"), back_file = path("back.safetensors");
  const CliResult exported = run_cli({"inspect", checkpoint_, "--export-nan", nan_file});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_TRUE(exported.out.ends_with("wrote " + nan_file + " (Cerebras NaN form: NaN marks a pruned weight)\n"));

  const SafetensorsFile original = read_safetensors(checkpoint_), nan_form = read_safetensors(nan_file);
  int pruned_tensors = 0;
  for (const StateTensor& t : original.tensors.tensors) {
    SCOPED_TRACE(t.name);
    const StateTensor* written = nan_form.tensors.find(t.name);
    if (t.is_mask) {
      EXPECT_EQ(written, nullptr);
      continue;
    }
    ASSERT_NE(written, nullptr);
    const StateTensor* mask = mask_of(original.tensors, t);
    pruned_tensors += mask != nullptr ? 1 : 0;
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      if (mask != nullptr && mask->keep[i] == 0)
        EXPECT_TRUE(std::isnan(written->values[i])) << i;
      else
        EXPECT_EQ(written->values[i], t.values[i]) << i;
    }
  }
  EXPECT_EQ(pruned_tensors, 8);

  const CliResult listed = run_cli({"inspect", nan_file, "--import-nan", back_file});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const CliResult masked = run_cli({"inspect", checkpoint_});
  for (const StateTensor& t : original.tensors.tensors) {
    if (t.is_mask) continue;
    SCOPED_TRACE(t.name);
    std::vector<std::string> expected = row_of(masked.out, t.name);
    if (expected.back() == "mask") expected.back() = "NaN";
    EXPECT_EQ(row_of(listed.out, t.name), expected);
  }
  EXPECT_EQ(lines_of(listed.out)[lines_of(listed.out).size() - 2], lines_of(masked.out).back());  // the totals

  const SafetensorsFile back = read_safetensors(back_file);
  ASSERT_EQ(back.tensors.tensors.size(), original.tensors.tensors.size());
  for (const StateTensor& t : original.tensors.tensors) {
    SCOPED_TRACE(t.name);
    const StateTensor* converted = back.tensors.find(t.name);
    ASSERT_NE(converted, nullptr);
    EXPECT_EQ(converted->shape, t.shape);
    EXPECT_EQ(converted->values, t.values);
    EXPECT_EQ(converted->keep, t.keep);
  }
}

// A file with masks marks pruning by its masks, so NaN in it (a diverged run) is listed as a
// value gone wrong, in dense and masked tensors alike, and changes no sparsity; converting such a
// file from the NaN form is refused, naming the tensor.
TEST_F(CliCheckpointTools, InspectListsNanInAFileWithMasksAsNotPruning) {
  SafetensorsFile file = read_safetensors(checkpoint_);
  const std::string dense_name = "transformer.h.0.ln_1.weight", sparse_name = "transformer.h.1.mlp.c_fc.weight";
  StateTensor* dense = file.tensors.find(dense_name);
  StateTensor* sparse = file.tensors.find(sparse_name);
  ASSERT_NE(dense, nullptr);
  ASSERT_NE(sparse, nullptr);
  ASSERT_EQ(mask_of(file.tensors, *dense), nullptr);
  ASSERT_NE(mask_of(file.tensors, *sparse), nullptr);
  for (std::size_t i = 0; i < 3; ++i) dense->values[i * 5] = std::nanf("");
  sparse->values[0] = std::nanf("");
  const std::string diverged = path("diverged.safetensors");
  write_safetensors(diverged, file.tensors, file.metadata);

  const CliResult r = run_cli({"inspect", diverged});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CliResult original = run_cli({"inspect", checkpoint_});
  std::vector<std::string> dense_row = row_of(original.out, dense_name), sparse_row = row_of(original.out, sparse_name);
  for (const char* word : {"(3", "NaN,", "not", "pruning)"}) dense_row.push_back(word);
  for (const char* word : {"(1", "NaN,", "not", "pruning)"}) sparse_row.push_back(word);
  EXPECT_EQ(row_of(r.out, dense_name), dense_row);
  EXPECT_EQ(row_of(r.out, sparse_name), sparse_row);
  EXPECT_EQ(lines_of(r.out).back(), lines_of(original.out).back());  // the totals

  const CliResult imported = run_cli({"inspect", diverged, "--import-nan", path("diverged_back.safetensors")});
  EXPECT_EQ(imported.exit_code, 1);
  EXPECT_TRUE(imported.err.find("NaN form: tensor '" + dense_name + "' has NaN values and the state has masks") !=
              std::string::npos)
      << imported.err;
}

TEST_F(CliCheckpointTools, InspectOfAFileThatIsNotSafetensorsExitsOneNamingIt) {
  const std::string bad = path("not_a_checkpoint.safetensors");
  std::ofstream(bad) << "not safetensors";
  const CliResult r = run_cli({"inspect", bad});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.err.starts_with("sparsetrain: error: " + bad + ": ")) << r.err;
  EXPECT_EQ(r.out, "");
}

// A YAML config given to inspect by mistake is named as not a safetensors file, with what was
// found at offset 0, instead of its first bytes read as a header length.
TEST_F(CliCheckpointTools, InspectOfAYamlConfigSaysItIsNotASafetensorsFile) {
  const CliResult r = run_cli({"inspect", config_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "sparsetrain: error: " + config_ +
                       ": not a safetensors file: it starts with the text 'model: {' at offset 0, where a safetensors "
                       "file has an 8-byte little-endian header length\n");
  EXPECT_EQ(r.out, "");
}

// `inspect DIR` lists the directory's newest complete checkpoint, as `generate --model_dir` uses it.
TEST_F(CliCheckpointTools, InspectOfAModelDirectoryListsItsNewestCompleteCheckpoint) {
  const CliResult file = run_cli({"inspect", checkpoint_});
  ASSERT_EQ(file.exit_code, 0) << file.err;
  const CliResult dir = run_cli({"inspect", run_dir()});
  ASSERT_EQ(dir.exit_code, 0) << dir.err;
  EXPECT_EQ(dir.out, file.out);
  EXPECT_TRUE(dir.out.starts_with(checkpoint_ + ": ")) << dir.out;

  const std::string empty_dir = path("inspect_empty_run");
  fs::create_directories(empty_dir);
  const CliResult none = run_cli({"inspect", empty_dir});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "sparsetrain: error: " + empty_dir + ": no complete checkpoint to inspect\n");
}

// Commands that read a model directory say so when it is not there, and create nothing.
TEST_F(CliCheckpointTools, AMissingModelDirectoryIsNamedAndNotCreated) {
  const std::string missing = path("doesnotexist");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"generate", "--model_dir", missing},
        std::vector<std::string>{"eval", "--params", config_, "--model_dir", missing},
        std::vector<std::string>{"--mode", "eval", "--params", config_, "--model_dir", missing}}) {
    const CliResult r = run_cli(args, kOneThread);
    EXPECT_EQ(r.exit_code, 1) << args[0];
    EXPECT_EQ(r.err, "sparsetrain: error: --model_dir " + missing + ": no such directory\n") << args[0];
    EXPECT_FALSE(fs::exists(missing)) << args[0];
  }
}

// --checkpoint_path is checked before anything is read or created: a file that is not there, and
// a model file without the state file that resuming its run needs (the weights alone start a new run).
TEST_F(CliCheckpointTools, AMissingCheckpointFileIsNamedBeforeAnythingIsCreated) {
  const std::string dir = path("from_missing");
  const std::string missing = path("nowhere.safetensors");
  const CliResult r = run_cli({"train", "--params", config_, "--model_dir", dir, "--checkpoint_path", missing});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "sparsetrain: error: --checkpoint_path " + missing + ": no such file\n");
  EXPECT_FALSE(fs::exists(dir));

  const std::string alone = path("model_alone.safetensors");
  fs::copy_file(checkpoint_, alone, fs::copy_options::overwrite_existing);
  const CliResult resume = run_cli({"train", "--params", config_, "--model_dir", dir, "--checkpoint_path", alone});
  EXPECT_EQ(resume.exit_code, 1);
  EXPECT_EQ(resume.err, "sparsetrain: error: --checkpoint_path " + alone + ": resuming its run needs its state file " +
                            path("model_alone.state.safetensors") +
                            ", which is not there; to start a new run from the model file's weights alone, add "
                            "--load_checkpoint_states model\n");
  EXPECT_FALSE(fs::exists(dir));
  const CliResult weights = run_cli({"train", "--params", config_, "--model_dir", dir, "--checkpoint_path", alone,
                                     "--load_checkpoint_states", "model", "--max_steps", "1"},
                                    kOneThread);
  EXPECT_EQ(weights.exit_code, 0) << weights.err;
  EXPECT_TRUE(weights.out.find("starting from the weights of " + alone) != std::string::npos) << weights.out;
}

// eval and a resumed train take the model directory's params.yaml when --params is not given,
// and say so; without either, --params is required (exit 2).
TEST_F(CliCheckpointTools, EvalAndResumeDefaultToTheModelDirectorysParams) {
  const CliResult trained = train_tiny_gpt(root_, "resumed", "max_steps: 2, seed: 3", "");
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const std::string dir = path("resumed");
  const std::string note =
      "sparsetrain: note: no --params given; using " + dir + "/params.yaml, the config of the model directory\n";
  const CliResult eval = run_cli({"eval", "--model_dir", dir}, kOneThread);
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_EQ(eval.err, note);
  EXPECT_TRUE(eval.out.starts_with("eval step 2: loss ")) << eval.out;
  const CliResult resumed = run_cli({"--mode", "train", "--model_dir", dir, "--max_steps", "3"}, kOneThread);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(resumed.err, note);
  EXPECT_TRUE(resumed.out.find("training steps 3 to 3") != std::string::npos) << resumed.out;

  const std::string bare = path("no_params_run");
  fs::create_directories(bare);
  const CliResult none = run_cli({"train_and_eval", "--model_dir", bare}, kOneThread);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err, "sparsetrain: error: --params is required: --model_dir " + bare +
                          " has no params.yaml to use instead; give the YAML config with --params\n");
}

// Greedy text is the same every time; sampled text is fixed by the seed and changes with it.
// Every run continues the prompt with at most --tokens bytes (end-of-text stands for none).
TEST_F(CliCheckpointTools, GenerateContinuesThePromptAndTheSeedFixesTheSample) {
  auto generate = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"generate", "--model_dir", run_dir(), "--prompt", "line 1", "--tokens", "40"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = run_cli(args, kOneThread);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_TRUE(r.out.starts_with("line 1")) << r.out;
    EXPECT_TRUE(r.out.ends_with("\n"));
    EXPECT_LE(r.out.size(), 6u + 40u + 1u) << r.out;
    return r.out;
  };
  const std::string greedy = generate({"--temperature", "0"});
  EXPECT_EQ(generate({"--temperature", "0"}), greedy);
  const std::string one = generate({"--seed", "1", "--temperature", "1.5", "--top_k", "0"});
  EXPECT_EQ(generate({"--seed", "1", "--temperature", "1.5", "--top_k", "0"}), one);
  EXPECT_NE(generate({"--seed", "2", "--temperature", "1.5", "--top_k", "0"}), one);
  EXPECT_NE(one, greedy);
  // The same with the config and model file named instead of the directory.
  const CliResult named = run_cli({"generate", "--params", config_, "--checkpoint_path", checkpoint_, "--prompt",
                                   "line 1", "--tokens", "40", "--temperature", "0"},
                                  kOneThread);
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(named.out, greedy);
  // An empty prompt starts from end-of-text.
  const CliResult empty = run_cli({"generate", "--model_dir", run_dir(), "--prompt", "", "--tokens", "5"}, kOneThread);
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_LE(empty.out.size(), 6u);
}

TEST_F(CliCheckpointTools, GenerateWithoutACheckpointOrAGptIsRefusedSayingWhy) {
  const std::string empty_dir = path("empty_run");
  fs::create_directories(empty_dir);
  const CliResult none = run_cli({"generate", "--model_dir", empty_dir});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "sparsetrain: error: " + empty_dir + ": no complete checkpoint to generate from\n");

  const CliResult neither = run_cli({"generate", "--prompt", "x"});
  EXPECT_EQ(neither.exit_code, 2) << "a command line without what the command reads";
  EXPECT_EQ(neither.err, "sparsetrain: error: generate: give --model_dir, or --params with --checkpoint_path\n");

  const std::string mlp = path("mlp.yaml");
  std::ofstream(mlp) << "model: {name: mlp, hidden_sizes: [8]}\n"
                     << "train_input: {data: fashion_mnist, batch_size: 4}\n"
                     << "optimizer: {optimizer_type: sgd, learning_rate: 0.1}\n"
                     << "runconfig: {max_steps: 1}\n";
  const CliResult not_gpt = run_cli({"generate", "--params", mlp, "--checkpoint_path", checkpoint_});
  EXPECT_EQ(not_gpt.exit_code, 1);
  EXPECT_EQ(not_gpt.err, "sparsetrain: error: " + mlp + ": generate needs a gpt model; this config's model is mlp\n");
  EXPECT_EQ(not_gpt.out, "");

  const std::string bert = path("bert.yaml");
  std::ofstream(bert) << "model: {name: bert, hidden_size: 8, num_hidden_layers: 1, num_attention_heads: 2,\n"
                      << "        intermediate_size: 16, max_position_embeddings: 16}\n"
                      << "train_input: {data: brown, tokenizer: wordpiece, batch_size: 2, max_sequence_length: 16}\n"
                      << "optimizer: {optimizer_type: adamw, learning_rate: 0.001}\n"
                      << "runconfig: {max_steps: 1}\n";
  const CliResult bert_run = run_cli({"generate", "--params", bert, "--checkpoint_path", checkpoint_});
  EXPECT_EQ(bert_run.exit_code, 1);
  EXPECT_EQ(bert_run.err,
            "sparsetrain: error: " + bert + ": generate needs a gpt model; this config's model is bert\n");
}

}  // namespace
}  // namespace sparsetrain::testing
