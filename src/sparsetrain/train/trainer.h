#pragma once
// The training loop: train_step() (train/step.h) for each step k from where the run starts
// (train/resume.h), with hooks (train/training.h) for a log line and a metrics.jsonl row every
// runconfig.log_steps, evaluation every eval_frequency steps, checkpoints every
// checkpoint_steps and at the end, the non-finite policy and stop signals. Everything a step
// reads is a function of the checkpointed state and k, so a stopped run resumed from its newest
// checkpoint continues bit-identically.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sparsetrain/train/setup.h"

namespace sparsetrain {

enum class RunMode { Train, Eval, TrainAndEval };
// "train", "eval", "train_and_eval": --mode's values and the subcommands' names.
std::string_view run_mode_name(RunMode mode);

struct RunOptions {
  RunMode mode = RunMode::Train;
  std::string model_dir = "model_dir";
  std::string checkpoint_path;  // start from (train) or evaluate (eval) this model file
  // Training: take only the weights of checkpoint_path (load_model_weights) and start a new run
  // at step 0 with this config's optimizer, schedules and data order. A model directory that
  // already holds checkpoints of that new run resumes from them instead.
  bool weights_only = false;
  bool progress = true;  // a progress bar, when stderr is a terminal
};

// Exit code of a run stopped by a non-finite step under runconfig.nonfinite_policy: stop.
inline constexpr int kExitNonFinite = 4;

// Runs the mode; returns the process exit code (docs/cli.md): 0, kExitNonFinite, or 128 + the
// signal when SIGTERM or SIGINT stopped it.
int run(Setup& setup, const RunOptions& options);

}  // namespace sparsetrain
