#pragma once
// A trainer test's directory with a small text corpus, a tiny GPT config over it and a way to
// train it, for the tests of the trainer and of what it writes.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "sparsetrain/core/read_file.h"
#include "sparsetrain/train/trainer.h"

namespace sparsetrain {

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Parameterized tests are named "Name/case": one directory level, so TearDown removes it all.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '-');
    root_ = std::filesystem::temp_directory_path() / fmt::format("sparsetrain-trainer-{}-{}", ::getpid(), name);
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    std::ofstream text(root_ / "corpus.txt");
    for (int i = 0; i < 400; ++i)
      text << "The " << (i % 7 == 0 ? "quick" : "lazy") << " fox number " << i << " jumps over the dog.\n";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // `run` adds runconfig keys (", key: value").
  std::string config(const std::string& sparsity, int64_t max_steps, const std::string& run = "") const {
    return fmt::format(R"(model: {{name: gpt, n_positions: 16, n_layer: 2, n_head: 2, n_embd: 16}}
train_input: {{data: text_file, path: "{}", tokenizer: byte, batch_size: 4, validation_fraction: 0.2}}
eval_input: {{data: text_file, path: "{}", tokenizer: byte, batch_size: 4, validation_fraction: 0.2, eval_batches: 3}}
optimizer: {{optimizer_type: adamw, learning_rate: 0.003, max_gradient_norm: 1.0}}
{}
runconfig: {{max_steps: {}, log_steps: 3, checkpoint_steps: 4, keep_checkpoints: 2, seed: 3{}}}
)",
                       (root_ / "corpus.txt").string(), (root_ / "corpus.txt").string(), sparsity, max_steps, run);
  }

  // Trains `yaml` into `dir` and returns the exit code.
  int train(const std::string& yaml, const std::filesystem::path& dir, RunMode mode = RunMode::Train,
            uint64_t seed = 3) const {
    TrainConfig c = load_train_config_yaml(yaml, "test.yaml");
    sparsetrain::Setup s = make_setup(std::move(c), seed, true);
    RunOptions o;
    o.mode = mode;
    o.model_dir = dir.string();
    o.progress = false;
    return run(s, o);
  }

  static std::string bytes(const std::filesystem::path& p) { return read_file(p.string()); }

  std::filesystem::path root_;
};

}  // namespace sparsetrain
