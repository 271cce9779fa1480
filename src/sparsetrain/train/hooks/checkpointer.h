#pragma once
// Saves the run's checkpoints (train/checkpoint.h): every runconfig.checkpoint_steps steps, at
// the last step and when the run is stopping, keeping the newest runconfig.keep_checkpoints.
#include <cstdint>

#include "sparsetrain/train/training.h"

namespace sparsetrain {

class Checkpointer : public TrainerHook {
 public:
  // `saved_step`: the step whose complete checkpoint in the model directory holds the state the
  // run starts from, or -1 (StartPoint::saved_step).
  explicit Checkpointer(int64_t saved_step) : saved_(saved_step) {}

  void on_train_batch_end(Training& t, const StepResult&) override;
  // Saves t.progress unless the directory's checkpoint of that step already holds it (saving
  // it again would make that checkpoint incomplete for a while).
  void ensure_saved(Training& t);

 private:
  void save(Training& t);
  int64_t saved_;
};

}  // namespace sparsetrain
