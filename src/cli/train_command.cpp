#include "cli/train_command.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/parallel.h"
#include "core/philox.h"
#include "models/gpt.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

namespace sparsetrain {

namespace fs = std::filesystem;

namespace {

RunMode parse_mode(const std::string& mode) {
  if (mode == "train") return RunMode::Train;
  if (mode == "eval") return RunMode::Eval;
  if (mode == "train_and_eval") return RunMode::TrainAndEval;
  fail("--mode: expected train, eval or train_and_eval, got '{}'", mode);
}

}  // namespace

int run_train_command(const TrainCommandOptions& o) {
  TrainConfig config = load_train_config_file(o.params);
  for (const std::string& w : config.sparsity.warnings) fmt::print(stderr, "sparsetrain: warning: {}\n", w);
  apply_run_overrides(config, {o.max_steps, o.seed, o.threads});
  if (config.run.num_threads > 0) set_num_threads(config.run.num_threads);
  const uint64_t seed = config.run.seed;
  Setup setup = make_setup(std::move(config), seed, /*load_data=*/true);
  RunOptions run_options;
  run_options.mode = parse_mode(o.mode);
  run_options.model_dir = o.model_dir;
  run_options.checkpoint_path = o.checkpoint_path;
  run_options.weights_only = o.load_checkpoint_states == "model";
  if (run_options.weights_only && o.checkpoint_path.empty())
    fail("--load_checkpoint_states model: needs --checkpoint_path (the model file whose weights to start from)");
  run_options.progress = !o.no_progress;
  return run(setup, run_options);
}

int run_generate_command(const GenerateOptions& o) {
  std::string params = o.params, model_path = o.checkpoint_path;
  if (!o.model_dir.empty()) {
    if (params.empty()) params = (fs::path(o.model_dir) / "params.yaml").string();
    if (model_path.empty()) {
      const std::vector<int64_t> done = complete_checkpoints(o.model_dir);
      if (done.empty()) fail("{}: no complete checkpoint to generate from", o.model_dir);
      model_path = checkpoint_model_path(o.model_dir, done.back());
    }
  }
  if (params.empty() || model_path.empty()) fail("generate: give --model_dir, or --params with --checkpoint_path");
  TrainConfig config = load_train_config_file(params);
  if (!config.is_gpt()) fail("{}: generate needs a gpt model, this config trains an mlp", params);
  Setup s = make_setup(std::move(config), 0, /*load_data=*/false);
  load_checkpoint(model_path, *s.model, nullptr);
  auto& gpt = dynamic_cast<Gpt&>(*s.model);
  const Tokenizer& tokenizer = *s.tokenizer;
  std::vector<int32_t> ids = tokenizer.encode(o.prompt);
  if (ids.empty()) ids.push_back(tokenizer.end_of_text().value());
  const int64_t context = gpt.config().context;
  const Philox rng(o.seed, "generate");
  for (int64_t n = 0; n < o.tokens; ++n) {
    const auto window = static_cast<int64_t>(std::min<std::size_t>(ids.size(), static_cast<std::size_t>(context)));
    const std::span<const int32_t> last(ids.data() + ids.size() - static_cast<std::size_t>(window), static_cast<std::size_t>(window));
    const Matrix& logits = gpt.logits(last, 1, window);
    const float* row = logits.data() + (window - 1) * logits.cols();
    const auto vocab = static_cast<std::size_t>(tokenizer.vocab_size());
    // Top-k sampling at the temperature; temperature 0 is greedy.
    std::vector<int32_t> order(vocab);
    for (std::size_t i = 0; i < vocab; ++i) order[i] = static_cast<int32_t>(i);
    const std::size_t k = o.top_k > 0 ? std::min<std::size_t>(vocab, static_cast<std::size_t>(o.top_k)) : vocab;
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    int32_t next = order[0];
    if (o.temperature > 0.0) {
      std::vector<double> p(k);
      double sum = 0.0;
      for (std::size_t i = 0; i < k; ++i) sum += p[i] = std::exp((row[order[i]] - row[order[0]]) / o.temperature);
      double u = static_cast<double>(rng.uniform(static_cast<uint64_t>(n))) * sum;
      for (std::size_t i = 0; i < k; ++i) {
        next = order[i];
        if ((u -= p[i]) < 0.0) break;
      }
    }
    ids.push_back(next);
  }
  fmt::print("{}\n", tokenizer.decode(ids));
  return 0;
}

}  // namespace sparsetrain
