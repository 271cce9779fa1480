#include "sparsetrain/train/hooks/checkpointer.h"

#include "sparsetrain/train/checkpoint.h"

namespace sparsetrain {

void Checkpointer::on_train_batch_end(Training& t, const StepResult&) {
  const int64_t every = t.setup.config.run.checkpoint_steps;
  if ((every > 0 && t.progress.step % every == 0) || t.last_step() || t.stopping()) save(t);
}

void Checkpointer::ensure_saved(Training& t) {
  if (saved_ != t.progress.step) save(t);
}

void Checkpointer::save(Training& t) {
  const Setup& s = t.setup;
  save_checkpoint(t.options.model_dir, *s.model, *s.optimizer, capture_trainer_state(s, t.progress));
  prune_checkpoints(t.options.model_dir, s.config.run.keep_checkpoints);
  saved_ = t.progress.step;
}

}  // namespace sparsetrain
