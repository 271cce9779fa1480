#pragma once
// A tiny GPT trained by the real binary, for the tests of commands that read a model directory:
// 2 layers, width 32, context 16, byte tokens, AdamW at 0.003, one thread, on a generated corpus.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.h"

namespace sparsetrain::testing {

// Makes `root` a fresh directory holding corpus.txt: 300 short lines of 17 kinds.
inline void make_tiny_corpus_dir(const std::filesystem::path& root) {
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  std::string text;
  for (int i = 0; i < 300; ++i) text += fmt::format("line {} of a small corpus.\n", i % 17);
  std::ofstream(root / "corpus.txt") << text;
}

// Writes root/<name>.yaml, the tiny GPT on root/corpus.txt with `runconfig` (the mapping's keys)
// and `sparsity` (a whole section, or empty), and trains it into root/<name>.
inline CliResult train_tiny_gpt(const std::filesystem::path& root, const std::string& name,
                                const std::string& runconfig, const std::string& sparsity) {
  const std::filesystem::path config = root / (name + ".yaml");
  std::ofstream(config) << "model: {name: gpt, n_positions: 16, n_layer: 2, n_head: 2, n_embd: 32}\n"
                        << "train_input: {data: text_file, path: \"" << (root / "corpus.txt").string()
                        << "\", tokenizer: byte, batch_size: 4}\n"
                        << "optimizer: {optimizer_type: adamw, learning_rate: 0.003}\n"
                        << "runconfig: {" << runconfig << "}\n"
                        << sparsity;
  return run_cli({"train", "--params", config.string(), "--model_dir", (root / name).string()}, {"OMP_NUM_THREADS=1"});
}

}  // namespace sparsetrain::testing
