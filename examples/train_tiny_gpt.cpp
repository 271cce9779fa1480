// The trainer from C++: a training config, the same YAML the command reads, becomes a Setup (the
// model, its sparsity algorithm with the masks applied, the optimizer wired to it, the data), and
// run() trains it as `sparsetrain train_and_eval` does: log lines, evaluation, checkpoints and
// metrics.jsonl in the model directory. Here a tiny GPT learns a generated text file with RigL at
// 80% sparsity (byte tokens, so no data packages are needed), in a temporary directory.
//
//   build/examples/example_train_tiny_gpt     (exit 1 if the run failed or the masks are off)
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sparsetrain/config/train_config.h>
#include <sparsetrain/train/setup.h>
#include <sparsetrain/train/trainer.h>

using namespace sparsetrain;
namespace fs = std::filesystem;

int main() {
  const fs::path root = fs::temp_directory_path() / ("sparsetrain_example_" + std::to_string(::getpid()));
  fs::create_directories(root);
  const std::string corpus = (root / "corpus.txt").string();
  {
    std::ofstream out(corpus);
    for (int i = 0; i < 400; ++i) out << "The " << (i % 7 == 0 ? "quick" : "lazy") << " fox " << i << " jumps.\n";
  }
  const std::string config_file = (root / "tiny_gpt.yaml").string();
  {
    const std::string input = "{data: text_file, path: \"" + corpus + "\", tokenizer: byte, batch_size: 8, ";
    std::ofstream(config_file) << "model: {name: gpt, n_positions: 32, n_layer: 2, n_head: 2, n_embd: 32}\n"
                               << "train_input: " << input << "validation_fraction: 0.1}\n"
                               << "eval_input: " << input << "validation_fraction: 0.1, eval_batches: 4}\n"
                               << "optimizer: {optimizer_type: adamw, learning_rate: 0.003}\n"
                               << "sparsity: {algorithm: rigl, sparsity: 0.8, format: csr,\n"
                               << "           update: {freq: 20, stop: 80}, drop_fraction: 0.3}\n"
                               << "runconfig: {max_steps: 100, log_steps: 25, seed: 1}\n";
  }

  TrainConfig config = load_train_config_file(config_file);
  const uint64_t seed = config.run.seed;
  Setup setup = make_setup(std::move(config), seed, /*load_data=*/true);

  RunOptions options;
  options.mode = RunMode::TrainAndEval;
  options.model_dir = (root / "run").string();
  options.progress = false;
  const int code = run(setup, options);

  // The trained model stays in the Setup: each block's linear weights at 80%, compressed.
  bool masks_ok = true;
  for (const Module::Entry& e : setup.model->named_parameters())
    if (e.param->storage() == Storage::Compressed) {
      std::printf("  %-36s %.2f sparse\n", e.param->name().c_str(), e.param->sparsity());
      masks_ok = masks_ok && e.param->sparsity() > 0.79 && e.param->sparsity() < 0.81;
    }
  fs::remove_all(root);
  return code == 0 && masks_ok ? 0 : 1;
}
