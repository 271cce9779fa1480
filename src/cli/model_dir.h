#pragma once
// What the commands that read a model directory (eval, generate, inspect DIR, plot) ask of it,
// with one message each.
#include <string>

namespace sparsetrain {

// Fails with "--model_dir DIR: no such directory" (or "not a directory") unless `dir` is an
// existing directory. Creates nothing.
void require_model_dir(const std::string& dir);

// The model file of the newest complete checkpoint of `dir`; fails naming the directory and what
// the checkpoint was wanted for ("generate from") when there is none.
std::string newest_complete_checkpoint(const std::string& dir, const std::string& purpose);

}  // namespace sparsetrain
