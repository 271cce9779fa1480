#pragma once
// What the commands that read a model directory (eval, generate, export, inspect DIR, plot) ask of it,
// with one message each.
#include <string>

namespace sparsetrain {

// Fails with "--model_dir DIR: no such directory" (or "not a directory") unless `dir` is an
// existing directory. Creates nothing.
void require_model_dir(const std::string& dir);

// The model file of the newest complete checkpoint of `dir`; fails naming the directory and what
// the checkpoint was wanted for ("generate from") when there is none.
std::string newest_complete_checkpoint(const std::string& dir, const std::string& purpose);

// The config and model file a command reads a trained model from: `params` and `checkpoint_path`
// as given, else `model_dir`'s params.yaml and its newest complete checkpoint (wanted to
// `purpose`); fails naming `command` when neither gives both.
struct TrainedModelFiles {
  std::string params, model_path;
};
TrainedModelFiles trained_model_files(const std::string& model_dir, const std::string& params,
                                      const std::string& checkpoint_path, const std::string& command,
                                      const std::string& purpose);

}  // namespace sparsetrain
