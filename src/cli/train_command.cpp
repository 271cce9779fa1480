#include "cli/train_command.h"

#include <fmt/format.h>

#include <filesystem>
#include <utility>

#include "cli/memory_check.h"
#include "cli/model_dir.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/models/generate.h"
#include "sparsetrain/train/checkpoint.h"
#include "sparsetrain/train/distributed.h"
#include "sparsetrain/train/trainer.h"

namespace sparsetrain {

namespace fs = std::filesystem;

namespace {

RunMode parse_mode(const std::string& mode) {
  for (RunMode m : {RunMode::Train, RunMode::Eval, RunMode::TrainAndEval})
    if (mode == run_mode_name(m)) return m;
  fail("--mode: expected train, eval or train_and_eval, got '{}'", mode);
}

// --params, or the model directory's params.yaml (the config its run was trained with) when
// --params is not given; says which file that was.
std::string params_of(const TrainCommandOptions& o) {
  if (!o.params.empty()) return o.params;
  const std::string saved = (fs::path(o.model_dir) / "params.yaml").string();
  if (!fs::is_regular_file(saved))
    throw CommandLineError(fmt::format(
        "--params is required: --model_dir {} has no params.yaml to use instead; give the YAML config with --params",
        o.model_dir));
  if (is_writer_rank())
    fmt::print(stderr, "sparsetrain: note: no --params given; using {}, the config of the model directory\n", saved);
  return saved;
}

// The files --checkpoint_path names, before anything is loaded or created: resuming a run reads
// the state file beside the model file; evaluating and starting from the weights read the model
// file alone.
void check_checkpoint_path(const TrainCommandOptions& o) {
  if (o.checkpoint_path.empty()) return;
  if (!fs::is_regular_file(o.checkpoint_path)) fail("--checkpoint_path {}: no such file", o.checkpoint_path);
  const std::string state = checkpoint_state_path_of(o.checkpoint_path);
  if (o.mode != "eval" && o.load_checkpoint_states == "all" && !fs::is_regular_file(state))
    fail(
        "--checkpoint_path {}: resuming its run needs its state file {}, which is not there; to start a new run from "
        "the model file's weights alone, add --load_checkpoint_states model",
        o.checkpoint_path, state);
}

}  // namespace

int run_train_command(const TrainCommandOptions& o) {
  // Evaluation reads the directory's newest checkpoint: a directory that is not there is a
  // mistyped name, not one to create.
  if (o.mode == "eval" && o.checkpoint_path.empty()) require_model_dir(o.model_dir);
  TrainConfig config = load_train_config_file(params_of(o));
  check_checkpoint_path(o);
  const bool speaks = is_writer_rank();  // under mpirun, rank 0 speaks for every rank
  if (speaks)
    for (const std::string& w : config.sparsity.warnings) fmt::print(stderr, "sparsetrain: warning: {}\n", w);
  std::optional<Precision> precision;
  if (o.precision) precision = parse_precision(*o.precision, "--precision");
  apply_run_overrides(config, {o.max_steps, o.seed, o.threads, o.init_from, precision, o.eval_batches});
  set_threads_per_rank(config.run.num_threads);
  check_memory(config);
  const uint64_t seed = config.run.seed;
  Setup setup = make_setup(std::move(config), seed, /*load_data=*/true);
  if (speaks)
    for (const std::string& w : setup.warnings) fmt::print(stderr, "sparsetrain: warning: {}\n", w);
  distribute(setup, world());
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
  const auto [params, model_path] =
      trained_model_files(o.model_dir, o.params, o.checkpoint_path, "generate", "generate from");
  TrainConfig config = load_train_config_file(params);
  if (!config.is_gpt()) fail("{}: generate needs a gpt model; this config's model is {}", params, config.model_name());
  const int threads = o.threads.value_or(config.run.num_threads);
  if (threads > 0) set_num_threads(threads);
  check_memory(config);
  Setup s = make_setup(std::move(config), 0, /*load_data=*/false);
  load_checkpoint(model_path, *s.model, nullptr);
  const Tokenizer& tokenizer = *s.tokenizer;
  std::vector<int32_t> ids = tokenizer.encode(o.prompt);
  if (ids.empty()) ids.push_back(tokenizer.end_of_text().value());
  ids = generate(dynamic_cast<Gpt&>(*s.model), std::move(ids), o.tokens, o.sampling);
  fmt::print("{}\n", tokenizer.decode(ids));
  return 0;
}

}  // namespace sparsetrain
