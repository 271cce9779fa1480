// A tiny BERT trained by the real binary: masked-LM + next-sentence metrics (metrics.jsonl and
// TensorBoard's tags), evaluation, an
// interrupted run resumed to the bytes of an unbroken one, bench train's token counts, the
// WordPiece tokenizer end to end, and `export --format hf`.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/io/safetensors.h"
#include "unit/event_file_decoder.h"

namespace sparsetrain::testing {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kOneThread = {"OMP_NUM_THREADS=1"};

// 40 documents of 6 sentences (BERT's input format: a sentence per line, a blank line between
// documents), over a small vocabulary of words.
fs::path make_corpus(const fs::path& root) {
  fs::remove_all(root);
  fs::create_directories(root);
  const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far", "away", "home"};
  std::string text;
  for (int d = 0; d < 40; ++d) {
    for (int s = 0; s < 6; ++s) {
      for (int w = 0; w < 5 + (d + s) % 4; ++w) text += std::string(w ? " " : "") + words[(d * 7 + s * 3 + w) % 12];
      text += ".\n";
    }
    text += "\n";
  }
  std::ofstream(root / "corpus.txt") << text;
  return root / "corpus.txt";
}

// The tiny BERT's config: 2 layers, width 16, 24 positions, on the corpus with `tokenizer`.
fs::path tiny_bert_config(const fs::path& root, const std::string& name, const std::string& tokenizer,
                          const std::string& runconfig, const std::string& sparsity = "") {
  const fs::path corpus = root / "corpus.txt";
  const fs::path config = root / (name + ".yaml");
  std::ofstream(config)
      << "model: {name: bert, hidden_size: 16, num_hidden_layers: 2, num_attention_heads: 2, intermediate_size: 32, "
         "max_position_embeddings: 24, hidden_dropout_prob: 0.1, attention_probs_dropout_prob: 0.1}\n"
      << "train_input: {data: text_file, path: \"" << corpus.string() << "\", tokenizer: " << tokenizer
      << ", batch_size: 4, max_predictions_per_seq: 4, validation_fraction: 0.2}\n"
      << "eval_input: {data: text_file, path: \"" << corpus.string() << "\", tokenizer: " << tokenizer
      << ", batch_size: 4, validation_fraction: 0.2, eval_batches: 2}\n"
      << "optimizer: {optimizer_type: adamw, learning_rate: 0.003}\n"
      << "runconfig: {" << runconfig << "}\n"
      << sparsity;
  return config;
}

std::vector<nlohmann::json> metrics(const fs::path& dir) {
  std::vector<nlohmann::json> rows;
  std::istringstream in(read_file((dir / "metrics.jsonl").string()));
  for (std::string line; std::getline(in, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

// `export --format hf` of the run in `dir` at `checkpoint` into dir + "_hf": the checkpoint's
// tensors, bit for bit, in model.safetensors (no masks, no tied decoder) and its masks in
// masks.safetensors; config.json describes the run's model as `architecture`. Returns config.json.
nlohmann::json expect_hf_export(const fs::path& dir, const std::string& checkpoint, const std::string& architecture) {
  const fs::path out = dir.string() + "_hf";
  fs::remove_all(out);
  const CliResult r = run_cli({"export", "--model_dir", dir.string(), "--format", "hf", "--out", out.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(Hugging Face " + architecture + ", from"), std::string::npos) << r.out;
  const StateDict saved = read_safetensors((dir / checkpoint).string()).tensors;
  const SafetensorsFile model = read_safetensors((out / "model.safetensors").string());
  const SafetensorsFile masks = read_safetensors((out / "masks.safetensors").string());
  EXPECT_EQ(model.metadata.at("format"), "pt");
  EXPECT_EQ(model.tensors.tensors.size() + masks.tensors.tensors.size(), saved.tensors.size());
  const auto bits = [](float v) { return std::bit_cast<uint32_t>(v); };
  for (const StateTensor& want : saved.tensors) {
    const StateTensor* got = (want.is_mask ? masks : model).tensors.find(want.name);
    if (got == nullptr) {
      ADD_FAILURE() << want.name << " is not in the export";
      continue;
    }
    EXPECT_EQ(got->shape, want.shape) << want.name;
    EXPECT_EQ(got->keep, want.keep) << want.name;
    EXPECT_TRUE(std::ranges::equal(got->values, want.values, {}, bits, bits)) << want.name;
  }
  EXPECT_FALSE(masks.tensors.tensors.empty()) << "the run is sparse";
  EXPECT_EQ(model.tensors.find("cls.predictions.decoder.weight"), nullptr) << "tied to the word embeddings";
  const nlohmann::json config = nlohmann::json::parse(read_file((out / "config.json").string()));
  EXPECT_EQ(config["architectures"], nlohmann::json::array({architecture}));
  EXPECT_EQ(config["model_type"], "bert");
  const StateTensor* words = model.tensors.find("bert.embeddings.word_embeddings.weight");
  const StateTensor* types = model.tensors.find("bert.embeddings.token_type_embeddings.weight");
  const StateTensor* up = model.tensors.find("bert.encoder.layer.0.intermediate.dense.weight");
  if (words != nullptr && types != nullptr && up != nullptr) {
    EXPECT_EQ(config["vocab_size"], words->shape[0]);
    EXPECT_EQ(config["hidden_size"], words->shape[1]);
    EXPECT_EQ(config["type_vocab_size"], types->shape[0]);
    EXPECT_EQ(config["intermediate_size"], up->shape[0]);
  }
  EXPECT_EQ(config["num_hidden_layers"], 2);
  EXPECT_EQ(config["num_attention_heads"], 2);
  EXPECT_EQ(config["max_position_embeddings"], 24);
  EXPECT_EQ(config["hidden_act"], "gelu");
  EXPECT_EQ(config["layer_norm_eps"], 1e-12);
  EXPECT_EQ(config["tie_word_embeddings"], true);
  return config;
}

TEST(CliBert, TrainsEvaluatesAndResumesToTheBytesOfAnUnbrokenRun) {
  const fs::path root = fs::temp_directory_path() / "sparsetrain_cli_bert";
  make_corpus(root);
  const std::string sparsity =
      "sparsity: {algorithm: set, sparsity: 0.8, format: csr, update: {freq: 2}, "
      "param_filter: [\"bert.encoder.layer.*.attention.self.*.weight\", \"bert.encoder.layer.*.dense.weight\"]}\n";
  const std::string run = "max_steps: 6, log_steps: 1, eval_frequency: 3, checkpoint_steps: 3, seed: 5";
  const fs::path whole = tiny_bert_config(root, "whole", "byte", run, sparsity);
  const CliResult a =
      run_cli({"train", "--params", whole.string(), "--model_dir", (root / "whole").string()}, kOneThread);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("bert: 2 layers"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("with [PAD] [CLS] [SEP] [MASK] appended"), std::string::npos) << a.out;

  // Evaluation rows: the masked-token loss and accuracy, the next-sentence task's, and as "loss"
  // their sum, which is what the train rows' "loss" holds too.
  int evals = 0;
  std::map<int64_t, nlohmann::json> eval_rows;  // by step
  for (const nlohmann::json& row : metrics(root / "whole")) {
    if (row["split"] != "eval") continue;
    ++evals;
    for (const char* key : {"mlm_loss", "accuracy", "nsp_loss", "nsp_accuracy"}) ASSERT_TRUE(row.contains(key)) << row;
    EXPECT_GT(row["mlm_loss"].get<double>(), 0.0);
    EXPECT_GT(row["nsp_loss"].get<double>(), 0.0);
    EXPECT_EQ(row["loss"].get<double>(), row["mlm_loss"].get<double>() + row["nsp_loss"].get<double>()) << row;
    EXPECT_EQ(row["mlm_perplexity"].get<double>(), std::exp(row["mlm_loss"].get<double>())) << row;
    EXPECT_FALSE(row.contains("perplexity"));
    eval_rows[row["step"].get<int64_t>()] = row;
  }
  EXPECT_EQ(evals, 2);
  // The same in TensorBoard's eval/ files, under the tags the Model Zoo's BERT uses.
  int events = 0;
  for (const fs::path& file : event_files(root / "whole/eval"))
    for (const DecodedEvent& e : decode_event_file(file)) {
      if (e.values.empty()) continue;  // the file's version record
      ++events;
      const nlohmann::json& row = eval_rows.at(e.step);
      const std::map<std::string, float> tags(e.values.begin(), e.values.end());
      for (const auto& [tag, key] : {std::pair{"loss", "loss"},
                                     {"mlm_loss", "mlm_loss"},
                                     {"eval/mlm_perplexity", "mlm_perplexity"},
                                     {"eval/accuracy_masked_lm", "accuracy"},
                                     {"nsp_loss", "nsp_loss"},
                                     {"eval/accuracy_cls", "nsp_accuracy"}}) {
        ASSERT_TRUE(tags.contains(tag)) << tag << " at step " << e.step;
        EXPECT_EQ(tags.at(tag), row[key].get<float>()) << tag << " at step " << e.step;
      }
      EXPECT_EQ(tags.size(), 6u) << "no other tag at step " << e.step;
    }
  EXPECT_EQ(events, 2);

  // inspect lines its columns up however long the names: every row's dtype under the header's.
  const CliResult listing = run_cli({"inspect", (root / "whole").string()});
  ASSERT_EQ(listing.exit_code, 0) << listing.err;
  std::istringstream listed(listing.out);
  std::size_t dtype_column = std::string::npos;
  int listed_rows = 0;
  for (std::string line; std::getline(listed, line);) {
    if (line.starts_with("  tensor ")) {
      dtype_column = line.find(" dtype ");
    } else if (line.find(" F32 ") != std::string::npos) {
      ++listed_rows;
      EXPECT_EQ(line.find(" F32 "), dtype_column) << line;
    }
  }
  EXPECT_GT(listed_rows, 20);

  // Stopped at step 3 and resumed: the same bytes as the unbroken run.
  const CliResult b1 = run_cli(
      {"train", "--params", whole.string(), "--model_dir", (root / "parts").string(), "--max_steps", "3"}, kOneThread);
  ASSERT_EQ(b1.exit_code, 0) << b1.err;
  const CliResult b2 =
      run_cli({"train", "--params", whole.string(), "--model_dir", (root / "parts").string()}, kOneThread);
  ASSERT_EQ(b2.exit_code, 0) << b2.err;
  EXPECT_EQ(read_file((root / "parts/checkpoint_6.safetensors").string()),
            read_file((root / "whole/checkpoint_6.safetensors").string()));

  const CliResult e = run_cli({"eval", "--model_dir", (root / "whole").string()}, kOneThread);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find(": loss "), std::string::npos) << e.out;
  EXPECT_NE(e.out.find(" = mlm loss "), std::string::npos) << e.out;
  EXPECT_NE(e.out.find(" + nsp loss "), std::string::npos) << e.out;

  // The byte tokenizer's ids, then the appended [PAD] [CLS] [SEP] [MASK].
  const nlohmann::json config = expect_hf_export(root / "whole", "checkpoint_6.safetensors", "BertForPreTraining");
  EXPECT_EQ(config["pad_token_id"], config["vocab_size"].get<int64_t>() - 4);
  EXPECT_EQ(config["hidden_dropout_prob"], 0.1);
  EXPECT_EQ(config["attention_probs_dropout_prob"], 0.1);
  EXPECT_TRUE(fs::exists(root / "whole_hf/byte_tokenizer.json"));
}

TEST(CliBert, WordPieceWithoutNextSentenceAndBenchTrainCountsEveryInputToken) {
  const fs::path root = fs::temp_directory_path() / "sparsetrain_cli_bert_wordpiece";
  make_corpus(root);
  const fs::path config = tiny_bert_config(root, "wp", "wordpiece", "max_steps: 2, log_steps: 1",
                                           "sparsity: {algorithm: static, sparsity: 0.9, format: csr, param_filter: "
                                           "[\"bert.encoder.layer.*.dense.weight\"]}\n");
  {
    std::string text = read_file(config.string());
    text.replace(text.find("hidden_dropout_prob: 0.1"), 24, "disable_nsp: true");
    std::ofstream(config) << text;
  }
  const CliResult r =
      run_cli({"train", "--params", config.string(), "--model_dir", (root / "wp").string()}, kOneThread);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vocabulary 30522, masked LM\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wordpiece tokenizer"), std::string::npos) << r.out;

  // Without the next-sentence task an evaluation's loss is the masked-token loss alone.
  const CliResult e = run_cli({"eval", "--model_dir", (root / "wp").string()}, kOneThread);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find(": mlm loss "), std::string::npos) << e.out;
  int evals = 0;
  for (const nlohmann::json& row : metrics(root / "wp")) {
    if (row["split"] != "eval") continue;
    ++evals;
    EXPECT_EQ(row["loss"], row["mlm_loss"]) << row;
    EXPECT_FALSE(row.contains("nsp_loss")) << row;
  }
  EXPECT_EQ(evals, 1);

  // Exported without the next-sentence task: BertForMaskedLM, with vocab.txt holding the
  // vocabulary in BERT's spelling, line n + 1 for id n, and BertTokenizer's settings.
  const nlohmann::json hf = expect_hf_export(root / "wp", "checkpoint_2.safetensors", "BertForMaskedLM");
  std::vector<std::string> vocab;
  {
    std::istringstream in(read_file((root / "wp_hf/vocab.txt").string()));
    for (std::string line; std::getline(in, line);) vocab.push_back(line);
  }
  EXPECT_EQ(static_cast<int64_t>(vocab.size()), hf["vocab_size"].get<int64_t>());
  const auto id_of = [&](const std::string& token) { return std::ranges::find(vocab, token) - vocab.begin(); };
  EXPECT_EQ(hf["pad_token_id"], id_of("[PAD]"));
  for (const char* token : {"[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s"})
    EXPECT_LT(id_of(token), static_cast<std::ptrdiff_t>(vocab.size())) << token;
  const nlohmann::json tokenizer = nlohmann::json::parse(read_file((root / "wp_hf/tokenizer_config.json").string()));
  EXPECT_EQ(tokenizer["tokenizer_class"], "BertTokenizer");
  EXPECT_EQ(tokenizer["do_lower_case"], true);
  EXPECT_EQ(tokenizer["model_max_length"], 24);

  const CliResult b = run_cli(
      {"bench", "train", "--params", config.string(), "--steps", "1", "--warmup", "0", "--rounds", "1", "--json"},
      kOneThread);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const nlohmann::json j = nlohmann::json::parse(b.out);
  EXPECT_EQ(j["tokens_per_step"], 4 * 24);  // every input token, padding included
  // Masked tokens: at least one and at most max_predictions_per_seq per row.
  EXPECT_GE(j["predictions_per_step"].get<int>(), 4);
  EXPECT_LE(j["predictions_per_step"].get<int>(), 4 * 4);
  EXPECT_NEAR(j["dense_tokens_per_s"].get<double>(), 4 * 24 / j["dense_ms_per_step"].get<double>() * 1e3, 1e-6);
  EXPECT_EQ(j["sparse_layer_count"], 2 * 3);  // attention.output, intermediate and output dense of each layer
}

// A run started from an exported BERT (`model.init_from: hf:DIR`): config.json gives the sizes the
// YAML leaves out, the masks of the export come back with init_method from_zeros, and a size the
// YAML gives differently is refused at its key.
TEST(CliBert, StartsFromAnExportedBert) {
  const fs::path root = fs::temp_directory_path() / "sparsetrain_cli_bert_init_from";
  make_corpus(root);
  const std::string sparsity =
      "sparsity: {algorithm: static, sparsity: 0.7, format: csr, init_method: from_zeros, param_filter: "
      "[\"bert.encoder.layer.*.dense.weight\"]}\n";
  const fs::path first = tiny_bert_config(root, "first", "byte", "max_steps: 2, checkpoint_steps: 2", sparsity);
  const CliResult a =
      run_cli({"train", "--params", first.string(), "--model_dir", (root / "first").string()}, kOneThread);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const CliResult x = run_cli(
      {"export", "--model_dir", (root / "first").string(), "--format", "hf", "--out", (root / "first_hf").string()});
  ASSERT_EQ(x.exit_code, 0) << x.err;

  // Only the model's name and init_from: every size comes from config.json.
  const fs::path second = root / "second.yaml";
  {
    std::string text = read_file(first.string());
    text.replace(0, text.find('\n'), "model: {name: bert, init_from: hf:first_hf}");
    std::ofstream(second) << text;
  }
  const CliResult b =
      run_cli({"train", "--params", second.string(), "--model_dir", (root / "second").string(), "--max_steps", "1"},
              kOneThread);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("starting from the Hugging Face weights of " + (root / "first_hf").string()), std::string::npos)
      << b.out;
  EXPECT_NE(b.out.find("bert: 2 layers, 2 heads, width 16, intermediate 32, positions 24"), std::string::npos) << b.out;
  const StateDict exported = read_safetensors((root / "first_hf/masks.safetensors").string()).tensors;
  const StateDict started = read_safetensors((root / "second/checkpoint_1.safetensors").string()).tensors;
  ASSERT_EQ(exported.tensors.size(), 6u);  // attention.output, intermediate and output dense of two layers
  for (const StateTensor& mask : exported.tensors) {
    const StateTensor* got = started.find(mask.name);
    ASSERT_NE(got, nullptr) << mask.name;
    EXPECT_EQ(got->keep, mask.keep) << mask.name;
  }

  std::string text = read_file(second.string());
  text.replace(text.find("init_from"), 0, "hidden_size: 32, ");
  std::ofstream(second) << text;
  const CliResult c = run_cli({"config", "--params", second.string()}, kOneThread);
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.err.find("second.yaml:1:34: model.hidden_size: 32, but " + (root / "first_hf/config.json").string() +
                       " has hidden_size 16; leave model.hidden_size out to take config.json's value"),
            std::string::npos)
      << c.err;
}

TEST(CliBert, ConfigErrorsNameTheKey) {
  const fs::path root = fs::temp_directory_path() / "sparsetrain_cli_bert_errors";
  make_corpus(root);
  const fs::path config = tiny_bert_config(root, "bad", "byte", "max_steps: 2");
  const std::string good = read_file(config.string());
  const std::pair<std::string, std::string> cases[] = {
      {"hidden_dropout_prob: 0.1", "attention_probs_dropout_prob: 1.0"},
      {"hidden_dropout_prob: 0.1", "hidden_act: swish"},
      {"num_attention_heads: 2", "num_attention_heads: 3"},
      {"max_predictions_per_seq: 4", "max_predictions_per_seq: 0"},
      {"max_position_embeddings: 24", "max_position_embeddings: 24, n_embd: 16"},
  };
  const char* expected[] = {"model.attention_probs_dropout_prob", "model.hidden_act", "num_attention_heads",
                            "train_input.max_predictions_per_seq", "model.n_embd"};
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    std::string text = good;
    text.replace(text.find(cases[i].first), cases[i].first.size(), cases[i].second);
    std::ofstream(config) << text;
    const CliResult r = run_cli({"config", "--params", config.string()}, kOneThread);
    EXPECT_EQ(r.exit_code, 1) << cases[i].second;
    EXPECT_NE(r.err.find(expected[i]), std::string::npos) << cases[i].second << ": " << r.err;
    EXPECT_NE(r.err.find("bad.yaml:"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace sparsetrain::testing
