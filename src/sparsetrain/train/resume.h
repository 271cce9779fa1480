#pragma once
// Where a run starts: fresh, from the newest complete checkpoint of its model directory, from an
// explicit --checkpoint_path (trained on, or evaluated), or from another run's weights only
// (--load_checkpoint_states model). Whatever it starts from is checked against the run first, so
// a mismatch is refused naming the config field before anything is loaded.
#include <cstdint>
#include <string>

#include "sparsetrain/train/setup.h"
#include "sparsetrain/train/trainer.h"
#include "sparsetrain/train/trainer_state.h"

namespace sparsetrain {

struct StartPoint {
  RunProgress progress;  // progress.step: the last step done (0 for a fresh run)
  // The step whose complete checkpoint in the model directory holds this state, or -1 when none
  // does (a fresh run, or one trained on from another directory's checkpoint).
  int64_t saved_step = -1;
};

// Resolves the start of `o.mode` in o.model_dir and loads it into the setup: the model's
// weights, and for training the optimizer state, its step count and the sparsity algorithm's
// state. Training first removes what an interrupted save left (and says so). An Error names the
// directory or file and what is wrong with it.
StartPoint resolve_start(Setup& s, const RunOptions& o);

// Refuses to go on from `saved` (read from `state_path`) when it was trained with another model
// or, when `training`, another seed, optimizer or sparsity (algorithm, format, level schedule or
// level per parameter): the Error names the config field, the parameter and both values.
void check_same_run(const TrainerState& saved, const Setup& s, const std::string& state_path, bool training);

}  // namespace sparsetrain
