#include "sparsetrain/train/hooks/checkpointer.h"

#include "sparsetrain/dist/rank_agreement.h"
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
  Communicator& comm = s.comm();
  // A data-parallel run saves what every rank holds, or nothing.
  if (comm.size() > 1) require_same_values(comm, s.model->parameters(), t.progress.step);
  if (s.writes()) {
    save_checkpoint(t.options.model_dir, *s.model, *s.optimizer, capture_trainer_state(s, t.progress));
    prune_checkpoints(t.options.model_dir, s.config.run.keep_checkpoints);
  }
  // No rank goes on before the checkpoint is complete; a failed save ends the job from rank 0.
  comm.barrier();
  saved_ = t.progress.step;
}

}  // namespace sparsetrain
