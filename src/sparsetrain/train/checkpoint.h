#pragma once
// Checkpoints in a model directory. Step N is three files, committed in this order:
//
//   checkpoint_N.safetensors        the model: every parameter (zeros at pruned positions),
//                                   `<name>_mask` for sparse ones; readable by any safetensors loader
//   checkpoint_N.state.safetensors  the training state: optimizer buffers as `<param>.<key>` (laid out
//                                   like the parameter's trainable values) and, in the metadata,
//                                   the TrainerState (train/trainer_state.h) as JSON
//   checkpoint_N.done               the completion marker: the step and both files' sizes
//
// Each file is written atomically (io/atomic_file.h). A checkpoint is complete when its marker
// exists and both files have the sizes it records; resuming takes the newest complete one.
// Older checkpoints are deleted only after a newer one is complete. Whatever a killed save
// leaves (temporary `*.tmp-<pid>` files, the files of a step without its marker, a marker whose
// sizes do not match) is incomplete, ignored, and removed when training starts and after each
// save. One training process writes a model directory at a time.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sparsetrain/io/safetensors.h"
#include "sparsetrain/nn/module.h"
#include "sparsetrain/optim/optimizer.h"
#include "sparsetrain/train/trainer_state.h"

namespace sparsetrain {

std::string checkpoint_model_path(const std::string& dir, int64_t step);
std::string checkpoint_state_path(const std::string& dir, int64_t step);

// Writes the checkpoint of step state.progress.step; a complete checkpoint of that step is first
// made incomplete (its marker removed). On failure (a full disk, a file-size limit) the step's
// files are removed and the Error, naming the file and the system's reason, is rethrown; other
// checkpoints are untouched.
void save_checkpoint(const std::string& dir, const Module& model, const Optimizer& optimizer,
                     const TrainerState& state);

// Steps of the complete checkpoints in `dir`, ascending.
std::vector<int64_t> complete_checkpoints(const std::string& dir);
// Removes what interrupted writes left in the model directory `dir`: temporary files
// (`<file>.tmp-<pid>` of checkpoints, params.yaml, params.to_step_N.yaml and metrics.jsonl) and
// every file of an incomplete checkpoint, never a complete checkpoint's. Returns the names of the
// removed files.
std::vector<std::string> remove_interrupted_saves(const std::string& dir);
// Removes all but the newest `keep` complete checkpoints, and everything incomplete.
void prune_checkpoints(const std::string& dir, int64_t keep);

// The state file beside a model file: checkpoint_N.safetensors -> checkpoint_N.state.safetensors
// (a state file given as the model file is an Error naming the model file to give).
std::string checkpoint_state_path_of(const std::string& model_path);
// The state file beside a model file, read once: the optimizer's tensors and the trainer state.
struct CheckpointState {
  std::string path;
  SafetensorsFile file;
  TrainerState trainer;
};
// Reads the state file beside `model_path`; an Error names the file and the reason (a missing
// trainer-state field by name).
CheckpointState read_checkpoint_state(const std::string& model_path);

// Loads a model file's tensors into `model` (strict: every parameter and mask must be there with
// its shape; every value finite: a file in Cerebras' NaN form is refused with the command that
// converts it). With `optimizer`, also the state file beside it (`checkpoint_N.state.safetensors`)
// and returns its trainer state; an Error names the file and the mismatched tensor or field.
std::optional<TrainerState> load_checkpoint(const std::string& model_path, Module& model, Optimizer* optimizer);
// Copies a state file's buffers into `optimizer` (same optimizer, one tensor per parameter and key,
// none left over); an Error names the file and the mismatched tensor.
void load_optimizer_state(const CheckpointState& state, Optimizer& optimizer);

// Loads only the weights of a model file (Cerebras' `load_checkpoint_states: model`), to start a
// new run from another's weights, e.g. dense fine-tuning after sparse pre-training (SPDF): a mask
// in the file for a parameter this model keeps dense is dropped (the zeros at its pruned positions
// become trainable), and a sparse parameter without a mask in the file keeps this model's mask.
// Shapes must match and values be finite (as load_checkpoint); a missing or unknown tensor is an
// Error naming the file and the tensor.
void load_model_weights(const std::string& model_path, Module& model);

}  // namespace sparsetrain
