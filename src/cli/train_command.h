#pragma once
// `sparsetrain --mode train|eval|train_and_eval --params cfg.yaml --model_dir DIR` (the Cerebras
// Model Zoo form), also `sparsetrain train|eval|train_and_eval ...`, and `sparsetrain generate`.
#include <cstdint>
#include <optional>
#include <string>

#include "sparsetrain/core/error.h"
#include "sparsetrain/models/generate.h"

namespace sparsetrain {

// A command line that parsed but cannot run as given (a required value missing for this case):
// exit code 2, like CLI11's own parse errors.
class CommandLineError : public Error {
 public:
  using Error::Error;
};

struct TrainCommandOptions {
  std::string mode;    // train, eval, train_and_eval
  std::string params;  // empty: <model_dir>/params.yaml when there is one
  std::string model_dir = "model_dir";
  std::optional<int64_t> max_steps;
  std::string checkpoint_path;
  std::string load_checkpoint_states = "all";  // all, or model: the weights only
  std::optional<std::string> init_from;        // hf:DIR, overrides model.init_from
  std::optional<uint64_t> seed;
  std::optional<int> threads;
  std::optional<std::string> precision;  // fp32 or bf16, overrides model.mixed_precision / fp16_type
  std::optional<int64_t> eval_batches;   // overrides eval_input.eval_batches
  bool no_progress = false;
};

int run_train_command(const TrainCommandOptions& options);

struct GenerateOptions {
  std::string model_dir;        // reads params.yaml and the newest complete checkpoint
  std::string checkpoint_path;  // or this model file (with --params)
  std::string params;
  std::string prompt = "The";
  int64_t tokens = 200;
  SamplingOptions sampling;
  std::optional<int> threads;  // else runconfig.num_threads
};

// Samples text from a GPT checkpoint and prints it.
int run_generate_command(const GenerateOptions& options);

}  // namespace sparsetrain
